"""Where JAM-PGM's rounds measure: public rows or private rows, per Adult split.

One JSON line per (split, epsilon, seed): the JAM-PGM jobs of ``reproduce.py jam-adult``
(its default setting: all-3way, delta 1e-9, bounded DP, seeded research run),
the number of rounds that measured the public rows (free) and the private rows, the
workload error (CURATOR-ONLY) and the CPU seconds of this process so far (user +
sys; runs in one process share their imports). It measures one candidate cause of a
failing JAM-PGM paper claim (docs/experiments.md): at epsilon 10, JAM-PGM on the
least biased split (adult_pub025) is above its error on adult_pub050.

    python benchmarks/jam_sources.py --splits adult_pub025 adult_pub050 --epsilons 10 --seeds 0 1 2
"""

from __future__ import annotations

import argparse

import reproduce
from common import cpu_seconds, emit, require_shared

from synth_core import Synthesizer
from synth_core.engine import PRIVATE, PUBLIC
from synth_core.experiments import job_events


def sources(job) -> dict:
    """One run of a JAM-PGM job of the figure: its rounds by source and its error."""
    synth = Synthesizer.from_config(job.config.with_option_overrides())
    rounds = [e.source for e in job_events(synth, job) if e.round > 0]
    return dict(split=job.dataset.name, epsilon=job.config.epsilon, seed=job.config.seed,
                rounds=len(rounds), public_rounds=rounds.count(PUBLIC),
                private_rounds=rounds.count(PRIVATE),
                workload_error=synth.result.curator_diagnostics().workload_error,
                cpu_seconds=cpu_seconds())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", nargs="+", default=["adult_pub025", "adult_pub050"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = ap.parse_args()
    require_shared()
    jobs = [j for sweep in reproduce.build_sweeps("jam-adult", mechanisms=["jam-pgm"],
                                                  seeds=args.seeds, epsilons=args.epsilons)
            for j in sweep.jobs() if j.dataset.name in args.splits]
    for job in sorted(jobs, key=lambda j: (j.config.seed, args.splits.index(j.dataset.name),
                                           j.config.epsilon)):
        emit(bench="jam-sources", **sources(job))


if __name__ == "__main__":
    main()
