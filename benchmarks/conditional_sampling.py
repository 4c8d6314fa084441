"""Time of one conditional generation of Adult (the sampling step alone).

Conditional generation keeps every record's public values and draws its
private columns from the fitted model (``synth_core.conditional``). Its cost
depends on the model's junction tree and on the public patterns of the data,
not on the fitted values, so this benchmark rebuilds the junction tree of a
real run's final model from that run's round trace
(``results/vertical_adult/traces/*conditional-*.jsonl``, written by
``vertical.py --trace``: every clique the run measured, the exact public
marginals included), gives its cliques random log-potentials, and times
``sample_private_given_public`` on Adult's real public columns (48,842
records). Fitting the model instead would take up to an hour per trace.

One JSON line per (trace, method, repeat) goes to
``benchmarks/results/vertical_adult/conditional_sampling.jsonl`` (and to stdout), with the
commit of the code it timed::

    python benchmarks/conditional_sampling.py                  # every conditional trace
    python benchmarks/conditional_sampling.py --repeats 3 --methods systematic iid
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from common import DATA, ROOT, cpu_seconds, emit, peak_rss_mb, require_shared
from vertical import public_columns

sys.path.insert(0, str(ROOT))

TRACES = ROOT / "benchmarks" / "results" / "vertical_adult" / "traces"
RESULTS = ROOT / "benchmarks" / "results" / "vertical_adult" / "conditional_sampling.jsonl"


def traced_cliques(path: Path) -> list[tuple[str, ...]]:
    """Every clique a traced run measured, in the order it measured them."""
    cliques: list[tuple[str, ...]] = []
    for line in path.read_text().splitlines():
        for clique in json.loads(line)["cliques"]:
            if tuple(clique) not in cliques:
                cliques.append(tuple(clique))
    return cliques


def model_with_structure(sizes: dict, cliques, total: int, seed: int):
    """A model over ``cliques``'s junction tree with random log-potentials."""
    from mbi import junction_tree

    from synth_core.inference import ModelMarginals, calibrate
    from synth_core.model import make_domain

    tree, _ = junction_tree.make_junction_tree(make_domain(sizes), cliques)
    tree_cliques = tuple(sorted(tuple(cl) for cl in tree.nodes))
    edges = [(tuple(a), tuple(b)) for a, b in tree.edges]
    rng = np.random.default_rng(seed)
    log_potentials = {cl: rng.normal(0.0, 1.0, [sizes[c] for c in cl]) for cl in cliques}
    beliefs = calibrate(sizes, log_potentials, tree_cliques, edges)
    return ModelMarginals(sizes, beliefs, edges, total), tree_cliques


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--traces", nargs="*", type=Path,
                    help="trace files (default: every conditional trace in results/vertical_adult/traces)")
    ap.add_argument("--methods", nargs="+", default=["systematic"], choices=["systematic", "iid"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--results", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    require_shared()
    import pandas as pd

    from synth_core.conditional import sample_private_given_public
    from synth_core.schema import load_schema

    sizes = dict(load_schema(DATA / "adult" / "domain.json").sizes)
    frame = pd.read_csv(DATA / "adult" / "adult.csv")
    traces = args.traces or sorted(p for p in TRACES.glob("*conditional-*.jsonl"))
    code = commit()
    for path in traces:
        public = public_columns(float(path.name.split("_")[0]))  # the name starts with the fraction
        codes = {c: frame[c].to_numpy(dtype=np.int64) for c in public}
        model, tree = model_with_structure(sizes, traced_cliques(path), len(frame), seed=0)
        patterns = len(np.unique(np.stack([codes[c] for c in public], axis=1), axis=0))
        for method in args.methods:
            for rep in range(args.repeats):
                wall, cpu = time.perf_counter(), cpu_seconds()
                sample_private_given_public(model, codes, np.random.default_rng(rep), method=method)
                row = dict(bench="conditional-sampling", data="adult", trace=path.name,
                           public_columns=public, public_patterns=patterns, records=len(frame),
                           model_cells=int(sum(np.prod([sizes[c] for c in cl]) for cl in tree)),
                           method=method, repeat=rep,
                           seconds=time.perf_counter() - wall, cpu_seconds=cpu_seconds() - cpu,
                           peak_rss_mb=peak_rss_mb(), commit=code)
                emit(**row)
                with args.results.open("a") as out:
                    out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
