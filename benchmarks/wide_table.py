"""A generated wide table: what a 300,000-row, 22-column run costs, and where it goes (JSON lines).

The table is drawn from a small Bayesian network, deterministic from ``--seed``:
columns ``h0, h1, h2`` have 500, 300 and 200 values, the 19 others ``c03 ..
c21`` 2 to 20 values each. Column ``i`` has one or two parents among columns
``0 .. i-1``; for each parent configuration ``a`` its conditional distribution
``P(X_i | pa = a)`` is a draw from ``Dirichlet(ALPHA * 1)``. With ``ALPHA < 1``
each row of the table puts most of its mass on a few values, so children depend
clearly on their parents. A column has a single parent whenever two parents'
configurations times its own size would pass ``MAX_CPT_CELLS``.

The private table is ``--rows`` records drawn with ``seed``; the public table
(JAM-PGM's public rows) is ``PUBLIC_FRACTION`` of that many records drawn from
the same network with ``seed + 1``. Both are written as Parquet to
``/tmp/synth-wide/`` beside a declared schema JSON (every column categorical
with its categories), so the domain never comes from the private rows.

Modes:

* default: one fresh child process per mechanism (JAM-PGM and AIM, eps 1,
  delta 1e-9, all-3way workload, seed 0, research mode, through
  :class:`synth_core.Synthesizer`). The parent reads the child's CPU seconds
  (user + sys) and peak RSS from ``os.wait4``; the child is stopped at
  ``--max-cpu`` CPU seconds (``RLIMIT_CPU``) and the line then says
  ``status: "timeout"`` with the rounds and rho the child had reported so far.
* ``--profile MECH``: the mechanism under cProfile in this process, stopped after
  ``--profile-events`` round events; prints the events (seconds, candidates,
  fit path) and the top 25 functions by cumulative and by own time.
* ``--size-filter EVENTS``: CPU seconds of the size filter for every 3-way
  candidate over the sequence of models of a run's event file (its cache
  carried across the rounds), against the uncached question at a few rounds.
* ``--events-dir DIR`` (default mode): each run's round events, with the RSS at
  each, copied to ``DIR/<mechanism>_events.jsonl``.
* ``--generate-only``: write the tables and the schema, print their paths.

Usage::

    PYTHONPATH=. nice -n 5 python benchmarks/wide_table.py [--rows 300000] [--seed 0] [--max-cpu 600]
    PYTHONPATH=. nice -n 5 python benchmarks/wide_table.py --profile jam-pgm --profile-events 4
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path("/tmp/synth-wide")

#: the high-cardinality columns and their sizes
HIGH_SIZES = {"h0": 500, "h1": 300, "h2": 200}
N_COLUMNS = 22
LOW_RANGE = (2, 20)
#: Dirichlet concentration of every conditional distribution (below 1: peaked rows)
ALPHA = 0.5
#: a column takes two parents only if their configurations times its size stay below this
MAX_CPT_CELLS = 2_000_000
PUBLIC_FRACTION = 0.05
MECHANISMS = ("jam-pgm", "aim")


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


# -- the network ---------------------------------------------------------------------------

def column_sizes(seed: int) -> dict[str, int]:
    """Column name -> number of values: the high-cardinality columns first, then
    ``N_COLUMNS - 3`` columns with sizes drawn uniformly from ``LOW_RANGE``."""
    rng = np.random.default_rng([seed, 0])
    sizes = dict(HIGH_SIZES)
    low = rng.integers(LOW_RANGE[0], LOW_RANGE[1] + 1, N_COLUMNS - len(HIGH_SIZES))
    sizes.update({f"c{i + len(HIGH_SIZES):02d}": int(k) for i, k in enumerate(low)})
    return sizes


def network(seed: int) -> list[tuple[str, tuple[str, ...], np.ndarray]]:
    """The Bayesian network in topological order: ``(column, parents, cpt)`` with
    ``cpt[a]`` the distribution of the column given parent configuration ``a``
    (the row-major index of the parents' values); the first column has no parent."""
    sizes = column_sizes(seed)
    names = list(sizes)
    rng = np.random.default_rng([seed, 1])
    nodes = []
    for i, name in enumerate(names):
        parents = pick_parents(rng, names[:i], sizes, sizes[name])
        configs = int(np.prod([sizes[p] for p in parents])) if parents else 1
        cpt = rng.dirichlet(np.full(sizes[name], ALPHA), size=configs)
        nodes.append((name, parents, cpt))
    return nodes


def pick_parents(rng, earlier: list[str], sizes: dict[str, int], own: int) -> tuple[str, ...]:
    """One or two distinct parents among ``earlier`` (two with probability 1/2 while
    the conditional table stays under ``MAX_CPT_CELLS``)."""
    if not earlier:
        return ()
    count = min(len(earlier), 1 + int(rng.random() < 0.5))
    parents = tuple(str(p) for p in rng.choice(earlier, size=count, replace=False))
    if len(parents) == 2 and sizes[parents[0]] * sizes[parents[1]] * own > MAX_CPT_CELLS:
        parents = parents[:1]
    return parents


def draw_rows(nodes, rows: int, seed: int) -> dict[str, np.ndarray]:
    """``rows`` records from the network (ancestral sampling), integer codes per column."""
    rng = np.random.default_rng([seed, 2])
    sizes = {name: cpt.shape[1] for name, _, cpt in nodes}
    codes: dict[str, np.ndarray] = {}
    for name, parents, cpt in nodes:
        config = np.zeros(rows, dtype=np.int64)
        for p in parents:
            config = config * sizes[p] + codes[p]
        codes[name] = draw_categorical(cpt, config, rng.random(rows))
    return codes


def draw_categorical(cpt: np.ndarray, config: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: row ``r`` gets the first ``x`` with ``F(x | config[r]) > u[r]``.
    Each configuration's CDF is shifted by its index so the flattened CDFs are one
    increasing array and one ``searchsorted`` serves every row (clipped to ``0 .. k-1``
    against rounding at a configuration's last CDF value)."""
    k = cpt.shape[1]
    cdf = np.cumsum(cpt, axis=1) + np.arange(cpt.shape[0])[:, None]
    idx = np.searchsorted(cdf.ravel(), config + u, side="right")
    return np.clip(idx - config * k, 0, k - 1)


def category_names(name: str, size: int) -> list[str]:
    return [f"{name}_{v:03d}" for v in range(size)]


def schema_json(seed: int) -> dict:
    """The declared schema: every column categorical with its categories."""
    return {"columns": [{"name": n, "kind": "categorical", "categories": category_names(n, k)}
                        for n, k in column_sizes(seed).items()]}


def frame(codes: dict[str, np.ndarray], sizes: dict[str, int]) -> pd.DataFrame:
    """The table with each column's values as its category names (plain strings)."""
    return pd.DataFrame({n: np.asarray(category_names(n, sizes[n]), dtype=object)[c]
                         for n, c in codes.items()})


def generate(rows: int, seed: int, cache: Path = CACHE) -> dict[str, Path]:
    """Write (once) the private table, the public table and the schema; their paths."""
    cache.mkdir(parents=True, exist_ok=True)
    paths = {"private": cache / f"wide_{rows}_{seed}.parquet",
             "public": cache / f"wide_{rows}_{seed}_public.parquet",
             "schema": cache / f"wide_{seed}_schema.json"}
    if all(p.exists() for p in paths.values()):
        return paths
    nodes, sizes = network(seed), column_sizes(seed)
    frame(draw_rows(nodes, rows, seed), sizes).to_parquet(paths["private"], index=False)
    public_rows = max(1, int(round(rows * PUBLIC_FRACTION)))
    frame(draw_rows(nodes, public_rows, seed + 1), sizes).to_parquet(paths["public"], index=False)
    paths["schema"].write_text(json.dumps(schema_json(seed)))
    return paths


# -- one run (the child) --------------------------------------------------------------------

def synthesizer(mechanism: str):
    from synth_core import Synthesizer

    return Synthesizer(mechanism, epsilon=1.0, delta=1e-9, workload="all-3way", seed=0,
                       mode="research")


def run_inputs(mechanism: str, paths: dict[str, Path]) -> dict:
    """The arguments of ``Synthesizer.run``: public rows for JAM-PGM only."""
    data = pd.read_parquet(paths["private"])
    public = pd.read_parquet(paths["public"]) if mechanism == "jam-pgm" else None
    return {"data": data, "public": public, "schema": str(paths["schema"])}


def event_record(event) -> dict:
    return {"round": event.round, "rounds_planned": event.rounds_planned,
            "cliques": [list(c) for c in event.cliques], "source": event.source,
            "n_candidates": event.n_candidates, "seconds": round(event.seconds, 3),
            "fit_path": event.fit_path, "model_size_mb": round(event.model_size_mb, 3),
            "rho_spent": event.rho_spent, "rho_total": event.rho_total}


def memory_mb() -> dict:
    """This process's resident set now and its peak so far (MB)."""
    with open("/proc/self/status") as fh:
        now = next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))
    return {"rss_mb": round(now / 1024, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def child(mechanism: str, paths: dict[str, Path], progress: Path) -> None:
    """Run to the end, appending each event (with the memory at that point) to
    ``progress``; print the result line, with the peak RSS at the end of the rounds
    (before sampling), after sampling and after the curator diagnostics."""
    synth = synthesizer(mechanism)
    inputs = run_inputs(mechanism, paths)
    with progress.open("a") as fh:
        for event in synth.run(inputs["data"], inputs["public"], schema=inputs["schema"]):
            fh.write(json.dumps({**event_record(event), **memory_mb()}) + "\n")
            fh.flush()
    result = synth.result
    sampled = memory_mb()["peak_rss_mb"]
    error = result.curator_diagnostics().workload_error
    print(json.dumps({"workload_error": error,
                      "rounds": sum(1 for e in result.events if e.round > 0),
                      "rho_spent": result.events[-1].rho_spent,
                      "peak_rss_sampled_mb": sampled,
                      "peak_rss_diagnostics_mb": memory_mb()["peak_rss_mb"]}), flush=True)


def progress_summary(progress: Path) -> dict:
    """Rounds done, rho spent and fit paths from the child's event file."""
    events = [json.loads(line) for line in progress.read_text().splitlines() if line.strip()] \
        if progress.exists() else []
    return {"rounds": sum(1 for e in events if e["round"] > 0),
            "rho_spent": events[-1]["rho_spent"] if events else 0.0,
            "rho_total": events[-1]["rho_total"] if events else None,
            "fit_paths": sorted({e["fit_path"] for e in events if e["fit_path"]}),
            "peak_rss_rounds_mb": max((e.get("peak_rss_mb", 0.0) for e in events), default=None),
            "round_seconds": round(sum(e["seconds"] for e in events), 3)}


def run_one(mechanism: str, rows: int, seed: int, max_cpu: float,
            events_dir: Path | None = None) -> dict:
    """One fresh child process; CPU (user + sys) and peak RSS from ``os.wait4``;
    its round events are copied to ``events_dir/<mechanism>_events.jsonl`` if given."""
    paths = generate(rows, seed)
    load_before = loadavg()
    with tempfile.TemporaryDirectory() as tmp:
        progress = Path(tmp) / "events.jsonl"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mechanism,
               "--rows", str(rows), "--seed", str(seed), "--progress", str(progress)]
        limit = int(max_cpu)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)),
                                preexec_fn=lambda: resource.setrlimit(
                                    resource.RLIMIT_CPU, (limit, limit + 5)))
        out, err = proc.stdout.read(), proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        done = progress_summary(progress)
        if events_dir is not None and progress.exists():
            events_dir.mkdir(parents=True, exist_ok=True)
            name = mechanism.replace("-", "_") + "_events.jsonl"
            (events_dir / name).write_text(progress.read_text())
    record = {"bench": "wide_table", "mechanism": mechanism, "rows": rows,
              "columns": N_COLUMNS, "seed": seed, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
              "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "wall_s": round(wall, 2),
              "loadavg_before": load_before, "loadavg_after": loadavg(), "max_cpu_s": max_cpu,
              **done}
    lines = out.decode().strip().splitlines()
    if proc.returncode == 0 and lines:
        record.update(json.loads(lines[-1]), status="ok")
    elif proc.returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        record.update(status="timeout", workload_error=None)
    else:
        record.update(status="error", workload_error=None,
                      error=err.decode().strip().splitlines()[-1:] or [f"exit {proc.returncode}"])
    return record


# -- profile --------------------------------------------------------------------------------

def profile_rows(stats: pstats.Stats, key: str, top: int = 25) -> list[dict]:
    """The ``top`` functions by ``key`` (``cumulative`` or ``tottime``)."""
    stats.sort_stats(key)
    out = []
    for func in stats.fcn_list[:top]:
        cc, nc, tt, ct, _ = stats.stats[func]
        filename, line, name = func
        short = filename.split("site-packages/")[-1].replace(str(ROOT) + "/", "")
        out.append({"function": f"{short}:{line}({name})", "ncalls": nc,
                    "tottime_s": round(tt, 3), "cumtime_s": round(ct, 3)})
    return out


def profile(mechanism: str, rows: int, seed: int, events: int) -> list[dict]:
    """The mechanism under cProfile for its first ``events`` round events."""
    paths = generate(rows, seed)
    inputs = run_inputs(mechanism, paths)
    import synth_core.api  # noqa: F401  (imports outside the profile)
    import jax  # noqa: F401

    synth = synthesizer(mechanism)
    records = []
    prof = cProfile.Profile()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    prof.enable()
    for event in synth.run(inputs["data"], inputs["public"], schema=inputs["schema"]):
        records.append(event_record(event))
        if len(records) >= events:
            break
    prof.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = pstats.Stats(prof)
    base = {"bench": "wide_table_profile", "mechanism": mechanism, "rows": rows, "seed": seed}
    lines = [{**base, "kind": "event", **r} for r in records]
    lines.append({**base, "kind": "total", "events": len(records), "cpu_s": round(cpu, 2),
                  "wall_s": round(wall, 2), "loadavg": loadavg(),
                  "profiled_s": round(stats.total_tt, 2)})
    for key in ("cumulative", "tottime"):
        lines += [{**base, "kind": key, "rank": i + 1, **r}
                  for i, r in enumerate(profile_rows(stats, key))]
    return lines


def run_models(events_path: Path) -> list[list[tuple[str, ...]]]:
    """The model's cliques after each round event of a run's event file."""
    model, models = [], []
    for line in events_path.read_text().splitlines():
        if line.strip():
            model = model + [tuple(c) for c in json.loads(line)["cliques"]]
            models.append(model)
    return models


def size_filter_cost(seed: int, events_path: Path, limit_mb: float = 80.0,
                     report_at: tuple[int, ...] = (1, 10, 25, 48)) -> list[dict]:
    """CPU seconds (this process) of the size filter over every 3-way candidate, for the
    sequence of models of a run (``events_path``): :func:`synth_core.size_filter.size_filter`
    on every model in order (its cache carried from round to round) against the uncached
    question (``model_size_mb`` of the model plus each candidate) at the events
    ``report_at``; the verdicts must agree."""
    import itertools

    from synth_core.engine import Candidate
    from synth_core.model import model_size_mb
    from synth_core.size_filter import component_cells, size_filter

    sizes = column_sizes(seed)
    pool = [Candidate(cl) for cl in itertools.combinations(sizes, 3)]
    component_cells.cache_clear()
    lines, total = [], 0.0
    for i, model in enumerate(run_models(events_path)):
        start = time.process_time()
        kept = size_filter(sizes, model, pool, limit_mb)
        filtered = time.process_time() - start
        total += filtered
        if i not in report_at:
            continue
        start = time.process_time()
        covered = [set(cl) for cl in model]
        exact = [c for c in pool if any(set(c.clique) <= s for s in covered)
                 or model_size_mb(sizes, [*model, c.clique]) <= limit_mb]
        uncached = time.process_time() - start
        if exact != kept:
            raise AssertionError(f"size filter verdicts differ at event {i}")
        info = component_cells.cache_info()
        lines.append({"bench": "wide_table_size_filter", "event": i, "model_cliques": len(model),
                      "candidates": len(pool), "kept": len(kept), "limit_mb": limit_mb,
                      "cpu_s_uncached": round(uncached, 3), "cpu_s_filter": round(filtered, 3),
                      "cache_hits": info.hits, "cache_misses": info.misses,
                      "loadavg": loadavg()})
    lines.append({"bench": "wide_table_size_filter", "event": "all", "events": i + 1,
                  "candidates": len(pool), "cpu_s_filter": round(total, 3), "loadavg": loadavg()})
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=300_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-cpu", type=float, default=600.0, help="CPU seconds per run")
    ap.add_argument("--only", nargs="*", choices=MECHANISMS, default=list(MECHANISMS))
    ap.add_argument("--profile", choices=MECHANISMS)
    ap.add_argument("--profile-events", type=int, default=4,
                    help="round events (round 0 included) to profile")
    ap.add_argument("--generate-only", action="store_true")
    ap.add_argument("--size-filter", type=Path, metavar="EVENTS",
                    help="time the size filter alone over the models of a run's event file")
    ap.add_argument("--child", choices=MECHANISMS, help=argparse.SUPPRESS)
    ap.add_argument("--progress", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--label", help="a 'code' field on each run line (e.g. the commit measured)")
    ap.add_argument("--events-dir", type=Path,
                    help="copy each run's round events to DIR/<mechanism>_events.jsonl")
    args = ap.parse_args(argv)
    if args.child:
        child(args.child, generate(args.rows, args.seed), args.progress)
    elif args.generate_only:
        print(json.dumps({k: str(v) for k, v in generate(args.rows, args.seed).items()}))
    elif args.size_filter:
        for line in size_filter_cost(args.seed, args.size_filter):
            print(json.dumps(line), flush=True)
    elif args.profile:
        for line in profile(args.profile, args.rows, args.seed, args.profile_events):
            print(json.dumps(line), flush=True)
    else:
        for mech in args.only:
            record = run_one(mech, args.rows, args.seed, args.max_cpu, args.events_dir)
            print(json.dumps({"code": args.label, **record} if args.label else record), flush=True)


if __name__ == "__main__":
    main()
