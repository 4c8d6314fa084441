"""Where JAM-PGM's rounds measure: public rows or private rows, per Adult split.

One JSON line per (split, epsilon, seed): JAM-PGM at its defaults (all-3way, delta
1e-9, bounded DP, seeded research run, the setting of ``reproduce.py jam-adult``),
the number of rounds that measured the public rows (free) and the private rows, the
workload error (CURATOR-ONLY) and the CPU seconds of this process so far (user +
sys; runs in one process share their imports). It measures one candidate cause of a
failing JAM-PGM paper claim (docs/experiments.md): at epsilon 10, JAM-PGM on the
least biased split (adult_pub025) is above its error on adult_pub050.

    python benchmarks/jam_sources.py --splits adult_pub025 adult_pub050 --epsilons 10 --seeds 0 1 2
"""

from __future__ import annotations

import argparse

from common import DATA, cpu_seconds, emit, require_shared

from synth_core import Synthesizer
from synth_core.engine import PRIVATE, PUBLIC


def sources(split: str, epsilon: float, seed: int) -> dict:
    """One JAM-PGM run on ``split``: its rounds by source and its workload error."""
    import pandas as pd

    folder = DATA / split
    private, public = pd.read_csv(folder / "priv.csv"), pd.read_csv(folder / "pub.csv")
    synth = Synthesizer("jam-pgm", epsilon=epsilon, workload="all-3way", seed=seed,
                        delta=1e-9, neighbours="bounded")
    rounds = [e.source for e in synth.run(private, public, schema=folder / "domain.json")
              if e.round > 0]
    return dict(split=split, epsilon=epsilon, seed=seed, rounds=len(rounds),
                public_rounds=rounds.count(PUBLIC), private_rounds=rounds.count(PRIVATE),
                workload_error=synth.result.curator_diagnostics().workload_error,
                cpu_seconds=cpu_seconds())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", nargs="+", default=["adult_pub025", "adult_pub050"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    args = ap.parse_args()
    require_shared()
    for seed in args.seeds:
        for split in args.splits:
            for eps in args.epsilons:
                emit(bench="jam-sources", **sources(split, eps, seed))


if __name__ == "__main__":
    main()
