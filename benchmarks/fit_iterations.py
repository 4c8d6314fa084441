"""Mirror-descent iterations per round fit: JAM-PGM and vJAM-PGM at 100 and 1,000.

Each round of JAM-PGM and vJAM-PGM refits the Private-PGM model with at most
``fit_iters`` mirror-descent steps (it stops earlier once the relative change
of the loss is below ``fit_tol``). This sweep runs the same seeded jobs at
each value and reports, per (dataset, epsilon, fit_iters), the workload error
over seeds (mean, sample standard deviation, min, max) and the CPU seconds per
run, and per (dataset, epsilon) the paired difference

    d_s = err_s(1000) - err_s(100)    for each seed s run at both,

its mean and its standard error ``sd(d) / sqrt(n)``. A negative mean with
``|mean| > 2 x standard error`` is a gain beyond seed noise.

Settings (all-3-way workload, delta 1e-9, bounded DP, 80 MB size limit):

* ``titanic``: JAM-PGM on Titanic with its public table, the JAM paper's six
  epsilons (its Figure 2 setting, ``reproduce.py jam-titanic --setting paper``).
* ``adult``: JAM-PGM on adult_pub025 (public rows with 25% women),
  epsilon 0.1, 1, 10.
* ``vertical``: vJAM-PGM on Adult with 50% of the columns public (the
  vertical figure's split), epsilon 1.

Runs are isolated processes in a resumable Parquet store
(``benchmarks/results/fit_iterations/store/``, not committed); the committed
``runs.jsonl`` is exported from it. A job of this sweep has the same run id as
the same job of the JAM Titanic paper-setting grid (the run id does not depend
on the sweep's name), so those finished runs are copied from that store
instead of being run again (``--no-adopt`` runs them).

    python benchmarks/fit_iterations.py titanic --seeds 0 1 2
    python benchmarks/fit_iterations.py adult --epsilons 1 10 --seeds 0
    python benchmarks/fit_iterations.py vertical --seeds 0 --iters 1000
    python benchmarks/fit_iterations.py --summary
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys

import pandas as pd
import reproduce
from common import emit, require_shared

from synth_core.experiments import MechanismSpec, ResultStore, Sweep, run_sweep

OUT = reproduce.OUT / "fit_iterations"
ITERS = (100, 1000)
BASE = dict(reproduce.SETTINGS, max_model_size=80.0)
#: setting -> (its dataset's name in the runs, the dataset, mechanism, epsilons, default
#: seeds); the dataset is built only to run (building it checks that its files exist)
SETTINGS = {
    "titanic": ("titanic", lambda: reproduce._split("titanic"), "jam-pgm",
                reproduce.JAM_PAPER["epsilons"], (0, 1, 2)),
    "adult": ("adult_pub025", lambda: reproduce._split("adult_pub025"), "jam-pgm",
              (0.1, 1.0, 10.0), (0, 1)),
    "vertical": (reproduce.vertical_name(0.5), lambda: reproduce._vertical(0.5), "vjam-pgm",
                 (1.0,), (0, 1)),
}


def store() -> ResultStore:
    return ResultStore(OUT / "store")


def build_sweep(setting: str, fit_iters: int, epsilons=None, seeds=None) -> Sweep:
    """The setting's runs at ``fit_iters`` per round fit (the mechanism's label is
    its name, so the run id is the same as in the figures' sweeps)."""
    _, data, mech, eps, default_seeds = SETTINGS[setting]
    return Sweep((data(),), (MechanismSpec(mech, mech),), tuple(epsilons or eps),
                 tuple(seeds or default_seeds), dict(BASE, fit_iters=int(fit_iters)),
                 name="fit-iterations")


def adopt(sweep: Sweep, target: ResultStore, source: ResultStore) -> int:
    """Copy the sweep's finished runs (run and marginal files) from ``source``
    into ``target``; the number copied."""
    have, done = target.finished_ids(), source.finished_ids()
    copied = 0
    for job in sweep.jobs():
        if job.run_id in done and job.run_id not in have:
            for sub in ("runs", "marginals"):
                src = source.root / sub / f"{job.run_id}.parquet"
                if src.exists():
                    (target.root / sub).mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, target.root / sub / src.name)
            copied += 1
    return copied


def fit_iters_of(config: str) -> int:
    """The per-round fit iterations a stored run used (its resolved configuration)."""
    return int(json.loads(config)["run"]["fit_iters"])


def setting_of(dataset: str) -> str:
    names = {spec[0]: name for name, spec in SETTINGS.items()}
    return names.get(dataset, dataset)


def cell_rows(runs: pd.DataFrame) -> list[dict]:
    """Per (setting, epsilon, fit_iters): error mean, sd, min, max and CPU s per run."""
    rows = []
    for (data, eps, iters), g in runs.groupby(["dataset", "epsilon", "fit_iters"], sort=True):
        err, cpu = [float(v) for v in g["workload_error"]], [float(v) for v in g["cpu_seconds"]]
        private = [float(v) for v in g["workload_error_private"] if v is not None and v == v]
        rows.append({"kind": "cell", "setting": setting_of(data), "dataset": data,
                     "mechanism": g["mechanism"].iloc[0], "epsilon": float(eps),
                     "fit_iters": int(iters), "seeds": sorted(int(s) for s in g["seed"]),
                     "error_mean": statistics.mean(err),
                     "error_sd": statistics.stdev(err) if len(err) > 1 else None,
                     "error_min": min(err), "error_max": max(err),
                     "error_private_mean": statistics.mean(private) if private else None,
                     "cpu_mean": statistics.mean(cpu), "cpu_total": sum(cpu)})
    return rows


def _pairs(runs: pd.DataFrame) -> list[tuple[str, float, list[int], list[float], list[float]]]:
    """Per (dataset, epsilon) with seeds run at both counts: the seeds, the paired
    differences d = err(1000) - err(100) and the CPU seconds (100-iteration runs first)."""
    out = []
    for (data, eps), g in runs.groupby(["dataset", "epsilon"], sort=True):
        by = {it: sub.set_index("seed") for it, sub in g.groupby("fit_iters")}
        if set(ITERS) - set(by):
            continue
        seeds = sorted(set(by[ITERS[0]].index) & set(by[ITERS[1]].index))
        if seeds:
            d = [float(by[1000].loc[s, "workload_error"]) - float(by[100].loc[s, "workload_error"])
                 for s in seeds]
            cpu = [float(by[it].loc[s, "cpu_seconds"]) for it in ITERS for s in seeds]
            out.append((data, float(eps), [int(s) for s in seeds], d, cpu))
    return out


def _difference(d: list[float], cpu: list[float]) -> dict:
    """Mean of the paired differences, its standard error, whether it is beyond seed
    noise (|mean| > 2 se) and the CPU ratio 1000/100 (``cpu``: the 100-iteration half first)."""
    se = statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1 else None
    mean = statistics.mean(d)
    half = len(cpu) // 2
    return {"diff_mean": mean, "diff_se": se, "diffs": [round(x, 4) for x in d],
            "beyond_noise": None if se is None else abs(mean) > 2 * se,
            "cpu_ratio": sum(cpu[half:]) / sum(cpu[:half])}


def paired_rows(runs: pd.DataFrame) -> list[dict]:
    """Per (setting, epsilon): the seeds run at both iteration counts, the mean
    paired difference d = err(1000) - err(100), its standard error and the CPU ratio."""
    return [{"kind": "paired", "setting": setting_of(data), "dataset": data, "epsilon": eps,
             "seeds": seeds, **_difference(d, cpu)} for data, eps, seeds, d, cpu in _pairs(runs)]


def pooled_rows(runs: pd.DataFrame) -> list[dict]:
    """Per setting: every pair over its epsilons pooled (the mean d over all pairs, its
    standard error; the CPU ratio of all the paired runs)."""
    pooled: dict[str, tuple[list, list, list, list]] = {}
    for data, eps, seeds, d, cpu in _pairs(runs):
        acc = pooled.setdefault(data, ([], [], [], []))
        half = len(cpu) // 2
        acc[0].append(eps), acc[1].extend(d), acc[2].extend(cpu[:half]), acc[3].extend(cpu[half:])
    return [{"kind": "pooled", "setting": setting_of(data), "dataset": data, "epsilons": eps,
             "pairs": len(d), **_difference(d, low + high)}
            for data, (eps, d, low, high) in sorted(pooled.items())]


def finished_runs() -> pd.DataFrame:
    runs = store().runs()
    if not len(runs):
        return runs
    runs = runs[runs["status"] == "finished"].copy()
    runs["fit_iters"] = [fit_iters_of(c) for c in runs["config"]]
    return runs


def summarize() -> None:
    """Export runs.jsonl and write summary.jsonl (cells, paired differences, pooled per setting)."""
    runs = finished_runs()
    if not len(runs):
        print("no finished runs in the store", file=sys.stderr)
        return
    reproduce.export_runs(store(), OUT / "runs.jsonl")
    rows = cell_rows(runs) + paired_rows(runs) + pooled_rows(runs)
    (OUT / "summary.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                       encoding="utf-8")
    for r in rows:
        emit(bench="fit-iterations-summary", **r)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("setting", nargs="?", choices=list(SETTINGS))
    ap.add_argument("--iters", nargs="+", type=int, default=list(ITERS))
    ap.add_argument("--epsilons", nargs="+", type=float, help="default: the setting's")
    ap.add_argument("--seeds", nargs="+", type=int, help="default: the setting's")
    ap.add_argument("--no-adopt", action="store_true",
                    help="run jobs the JAM Titanic paper-setting store already holds")
    ap.add_argument("--summary", action="store_true", help="only export and summarize")
    args = ap.parse_args()
    if args.setting and not args.summary:
        require_shared()
        for iters in args.iters:
            sweep = build_sweep(args.setting, iters, args.epsilons, args.seeds)
            if not args.no_adopt:
                n = adopt(sweep, store(), reproduce.figure_store("jam-titanic", "paper"))
                print(f"copied {n} finished runs from the jam-titanic paper store",
                      file=sys.stderr)
            for row in run_sweep(sweep, store(), isolate=True, quiet=True,
                                 on_start=lambda job, i, n: print(
                                     f"run {i + 1}/{n}: {job.label()} fit_iters {iters}",
                                     file=sys.stderr, flush=True)):
                emit(bench="fit-iterations", fit_iters=iters, **{k: row[k] for k in (
                    "dataset", "mechanism", "epsilon", "seed", "status", "workload_error",
                    "workload_error_private", "seconds", "cpu_seconds", "error")})
    summarize()


if __name__ == "__main__":
    main()
