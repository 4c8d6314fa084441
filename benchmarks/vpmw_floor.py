"""How far vPMW's rounds move it: its error with (nearly) exact answers, per round count.

vPMW's error on full Adult barely changes with epsilon in the vertical paper setting
(``reproduce.py vertical-adult --setting paper``). This runs that figure's vPMW jobs
with a huge epsilon (default 10,000: the noise on each measured answer is negligible)
and a given number of rounds, so the error left is the algorithm's and its sampled
support's, not the noise's. One JSON line per (fraction, rounds, seed): workload error
on W (CURATOR-ONLY) and the run's CPU seconds (user + sys, as ``experiments.run_job``
measures them; the runs share one process).

    python benchmarks/vpmw_floor.py --fractions 0.25 0.5 0.75 --rounds 1 100 1000 --seeds 0
"""

from __future__ import annotations

import argparse

import reproduce
from common import emit, require_shared, with_run_fields

from synth_core.experiments import run_job


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fractions", nargs="+", type=float, default=[0.25, 0.5, 0.75])
    ap.add_argument("--rounds", nargs="+", type=int, default=[1, 100, 1000])
    ap.add_argument("--epsilon", type=float, default=10_000.0)
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = ap.parse_args()
    require_shared()
    splits = {reproduce.vertical_name(f) for f in args.fractions}
    jobs = [j for sweep in reproduce.build_sweeps("vertical-adult", mechanisms=["vpmw"],
                                                  seeds=args.seeds, epsilons=[args.epsilon],
                                                  setting="paper")
            for j in sweep.jobs() if j.dataset.name in splits]
    for job in jobs:
        for rounds in args.rounds:
            row, _ = run_job(with_run_fields(job, rounds=rounds))
            emit(bench="vpmw-floor", dataset=job.dataset.name, epsilon=args.epsilon,
                 seed=job.config.seed, rounds=rounds, status=row["status"],
                 workload_error=row["workload_error"], cpu_seconds=row["cpu_seconds"])


if __name__ == "__main__":
    main()
