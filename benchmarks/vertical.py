"""Public columns on Adult (the vertical paper's experiment): AIM, vJAM-PGM,
Conditional AIM and Conditional vJAM-PGM with 25%, 50% and 75% of the columns
public, over epsilons and seeds.

Data: ``../shared/data/adult`` (48,842 rows, 15 columns, Private-PGM domain).
Workload: all 3-way marginals, delta 1e-9, bounded DP. The public columns are
the first ``round(f * 15)`` of :data:`PUBLIC_ORDER` (demographics first: the
attributes most often public in practice). Each run executes in its own
process, so ``peak_rss_mb`` is that run's peak. Every run reports two errors
(curator-only diagnostics):

* ``error_all``: workload error on the whole all-3-way workload ``W``;
* ``error_private``: on ``W'``, the 3-way marginals with at least one private
  column (the issue's measure for conditional methods; conditional methods are
  exact on the others).

Results are appended to ``benchmarks/results/vertical.jsonl`` (one JSON line
per run, printed too); a finished (fraction, mechanism, epsilon, seed) is
skipped when the script runs again, so it can be stopped and resumed.

    python benchmarks/vertical.py --fractions 0.25 0.5 0.75 --epsilons 0.1 1 10 --seeds 0 1 2
    python benchmarks/vertical.py --summary          # table of means and the orderings
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, ROOT, cpu_seconds, emit, peak_rss_mb, require_shared

PUBLIC_ORDER = ["sex", "race", "age", "native-country", "marital-status", "relationship",
                "education", "education-num", "workclass", "occupation", "hours-per-week",
                "fnlwgt", "capital-gain", "capital-loss", "income>50K"]
MECHANISMS = {
    "aim": ("aim", False),
    "vjam-pgm": ("vjam-pgm", False),
    "conditional-aim": ("aim", True),
    "conditional-vjam-pgm": ("vjam-pgm", True),
}
RESULTS = ROOT / "benchmarks" / "results" / "vertical.jsonl"


def public_columns(fraction: float) -> list[str]:
    return PUBLIC_ORDER[:int(round(fraction * len(PUBLIC_ORDER)))]


def run_one(fraction: float, label: str, epsilon: float, seed: int,
            condition_max_mb: float | None = None) -> dict:
    from synth_core import Synthesizer
    from synth_core.conditional import conditional_workload
    from synth_core.evaluate import workload_error
    from synth_core.schema import load_schema

    name, conditional = MECHANISMS[label]
    public = public_columns(fraction)
    options = {"conditional": True} if conditional else {}
    if conditional and condition_max_mb is not None:
        options["condition_max_mb"] = condition_max_mb
    synth = Synthesizer(name, epsilon=epsilon, delta=1e-9, workload="all-3way",
                        neighbours="bounded", seed=seed, max_model_size=80.0, **options)
    start, cpu0 = time.perf_counter(), cpu_seconds()
    rounds = public_rounds = 0
    for event in synth.run(str(DATA / "adult" / "adult.csv"), schema=load_schema(DATA / "adult" / "domain.json"),
                           public_columns=public if name == "vjam-pgm" or conditional else ()):
        print(f"[{fraction} {label} eps={epsilon} seed={seed}] {event.describe()}",
              file=sys.stderr, flush=True)
        if event.round > 0:
            rounds += 1
            public_rounds += event.source != "private"
    res = synth.result
    private, synthetic = res.inputs.data.private, res.synthetic_table
    restricted = conditional_workload(res.workload, public)
    cond = res.report.get("conditional_generation") or {}
    return dict(bench="vertical", data="adult", public_fraction=fraction, public_columns=public,
                mechanism=label, epsilon=epsilon, seed=seed,
                condition_max_mb=cond.get("condition_max_mb"),
                error_all=workload_error(private, synthetic, res.workload),
                error_private=workload_error(private, synthetic, restricted),
                seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu0,
                rounds=rounds, public_rounds=public_rounds, rho_spent=res.ledger.spent,
                rho_total=res.ledger.total,
                conditioning_marginals=len(cond.get("conditioning_marginals", [])),
                conditioning_dropped=len(cond.get("conditioning_marginals_dropped", [])),
                peak_rss_mb=peak_rss_mb())


def done_keys() -> set:
    if not RESULTS.exists():
        return set()
    keys = set()
    for line in RESULTS.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            keys.add((r["public_fraction"], r["mechanism"], r["epsilon"], r["seed"]))
    return keys


def summary() -> None:
    rows = [json.loads(l) for l in RESULTS.read_text().splitlines() if l.strip()]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["public_fraction"], r["epsilon"]), {}).setdefault(r["mechanism"], []).append(r)
    for (frac, eps), by_mech in sorted(groups.items()):
        means = {m: statistics.mean(x["error_private"] for x in rs) for m, rs in by_mech.items()}
        means_all = {m: statistics.mean(x["error_all"] for x in rs) for m, rs in by_mech.items()}
        best = min(means, key=means.get)
        emit(bench="vertical-summary", public_fraction=frac, epsilon=eps,
             seeds={m: len(rs) for m, rs in by_mech.items()},
             error_private=means, error_all=means_all,
             seconds={m: statistics.mean(x["seconds"] for x in rs) for m, rs in by_mech.items()},
             peak_rss_mb={m: max(x["peak_rss_mb"] for x in rs) for m, rs in by_mech.items()},
             lowest=best,
             conditional_aim_lowest=best == "conditional-aim",
             vjam_beats_aim=(means.get("vjam-pgm", float("inf")) < means.get("aim", float("-inf"))))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.25, 0.5, 0.75])
    ap.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=list(MECHANISMS))
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--condition-max-mb", type=float, default=None,
                    help="bound on the conditioning marginals' model (MB; default: the library's)")
    ap.add_argument("--summary", action="store_true", help="print the summary of the results file")
    ap.add_argument("--one", nargs=4, metavar=("FRACTION", "MECHANISM", "EPSILON", "SEED"),
                    help=argparse.SUPPRESS)  # one run in this process (used internally)
    args = ap.parse_args()
    if args.summary:
        return summary()
    require_shared()
    if args.one:
        frac, label, eps, seed = args.one
        emit(**run_one(float(frac), label, float(eps), int(seed), args.condition_max_mb))
        return
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    done = done_keys()
    for seed in args.seeds:
        for frac in args.fractions:
            for eps in args.epsilons:
                for label in args.mechanisms:
                    if (frac, label, eps, seed) in done:
                        continue
                    cmd = [sys.executable, __file__, "--one", str(frac), label, str(eps), str(seed)]
                    if args.condition_max_mb is not None:
                        cmd += ["--condition-max-mb", str(args.condition_max_mb)]
                    out = subprocess.run(cmd, capture_output=True, text=True)
                    lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
                    if out.returncode != 0 or not lines:
                        emit(bench="vertical", public_fraction=frac, mechanism=label, epsilon=eps,
                             seed=seed, failed=True, stderr=out.stderr[-2000:])
                        continue
                    print(lines[-1], flush=True)
                    with RESULTS.open("a") as fh:
                        fh.write(lines[-1] + "\n")


if __name__ == "__main__":
    main()
