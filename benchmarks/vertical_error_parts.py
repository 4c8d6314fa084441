"""Where a vertical paper-setting run's error lies: on the marginals with a private column,
or on the public-only ones.

The vertical paper's error is over ``W``, every marginal of up to 3 columns (the paper
setting of ``reproduce.py vertical-adult``). With a fraction of the columns public, ``W``
splits into ``W'`` (the marginals with at least one private column: the paper's "private
error") and the public-only marginals; the error on ``W`` is their count-weighted mean:

    err(W) = (|W'| err(W') + |W_pub| err(W_pub)) / |W|.

This reads each finished run's per-marginal errors from the figure's store
(``paper_setting/store/marginals``, written by every run; runs adopted from a committed
table have none and are left out) and prints one JSON line per (split, run) with the three
errors and counts, then one per (split, mechanism, epsilon) with their means over seeds.
A mechanism that reads only the private table (plain AIM) runs once for the three splits;
its ``workload_error_private`` in ``runs.jsonl`` is for the first split's public columns,
so here its parts are computed for each split's own. CURATOR-ONLY diagnostics.

    python benchmarks/vertical_error_parts.py [--epsilons 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd
import reproduce
from common import emit, require_shared

from synth_core.experiments import MARGINAL_JOIN

FIGURE, SETTING = "vertical-adult", "paper"


def error_parts(per_marginal: pd.DataFrame, public_columns) -> dict:
    """Mean error on all marginals, on those with a column outside ``public_columns``
    (``W'``) and on the public-only ones, with their counts, from one run's rows
    (``marginal``: columns joined by :data:`MARGINAL_JOIN`; ``error``)."""
    public = set(public_columns)
    only_public = per_marginal["marginal"].map(lambda m: set(m.split(MARGINAL_JOIN)) <= public)

    def mean(errors: pd.Series):
        return float(errors.mean()) if len(errors) else None

    return dict(error_all=mean(per_marginal["error"]),
                error_private=mean(per_marginal.loc[~only_public, "error"]),
                error_public_only=mean(per_marginal.loc[only_public, "error"]),
                marginals_private=int((~only_public).sum()),
                marginals_public_only=int(only_public.sum()))


def run_parts(store, runs: pd.DataFrame, splits: dict, shared: tuple) -> list[dict]:
    """One row per (split, finished run with per-marginal errors): the run under its own
    split, and a mechanism in ``shared`` under every split (``splits``: name -> public
    columns)."""
    rows = []
    for run in reproduce.finished_runs(runs).to_dict("records"):
        per = pd.DataFrame(store.marginals_of(run["run_id"]))
        if per.empty:
            continue
        shown_in = list(splits) if run["mechanism"] in shared else [run["dataset"]]
        for split in shown_in:
            rows.append(dict(dataset=split, mechanism=run["mechanism"],
                             epsilon=float(run["epsilon"]), seed=int(run["seed"]),
                             run_id=run["run_id"], **error_parts(per, splits[split])))
    return rows


def summarise(rows: list[dict]) -> list[dict]:
    """Means over seeds per (split, mechanism, epsilon), with the seeds."""
    if not rows:
        return []
    frame = pd.DataFrame(rows)
    out = []
    for (split, mech, eps), g in frame.groupby(["dataset", "mechanism", "epsilon"]):
        out.append(dict(dataset=split, mechanism=mech, epsilon=float(eps),
                        seeds=sorted(int(s) for s in g["seed"]),
                        **{k: float(g[k].mean()) for k in ("error_all", "error_private",
                                                           "error_public_only")},
                        marginals_private=int(g["marginals_private"].iloc[0]),
                        marginals_public_only=int(g["marginals_public_only"].iloc[0])))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--epsilons", nargs="+", type=float, help="default: every epsilon stored")
    ap.add_argument("--out", type=Path,
                    default=reproduce.folder(FIGURE, SETTING) / "error_parts.jsonl",
                    help="also write the summary lines here (default: %(default)s)")
    args = ap.parse_args()
    require_shared()
    splits = {d.name: tuple(d.public_columns) for d, _ in reproduce.panels(FIGURE)}
    store = reproduce.figure_store(FIGURE, SETTING)
    runs = store.runs()
    if args.epsilons:
        runs = runs[runs["epsilon"].isin(args.epsilons)]
    rows = run_parts(store, runs, splits, reproduce.private_only(FIGURE, SETTING))
    if not rows:
        raise SystemExit(f"no finished run with per-marginal errors in {store.root}: run "
                         f"`reproduce.py {FIGURE} --setting {SETTING}` first (nothing written)")
    for row in rows:
        emit(bench="vertical-error-parts", **row)
    summary = summarise(rows)
    for row in summary:
        emit(bench="vertical-error-parts-summary", **row)
    args.out.write_text("".join(json.dumps(r) + "\n" for r in summary), encoding="utf-8")


if __name__ == "__main__":
    main()
