"""Empirical privacy audit (synth_core/audit.py), long version: one JSON line
per (building block, variant, epsilon) with the 95%-confidence lower bound on
epsilon, the claim it is compared with, whether it is flagged (bound above
the claim), the trials and seconds.

Building blocks: the exponential mechanism (claim: parameter eps is eps-DP,
delta 0), the Gaussian measurement calibrated to (eps, 1e-5) through the
project's zCDP conversion, and MWEM+PGM end to end (3 binary columns, 2
rounds, add/remove-one neighbours). Broken variants: sensitivity halved (EM),
noise std halved (Gaussian), noise std divided by 4 and 8 (MWEM+PGM).

The selection audit (``--blocks selection``; synth_core.audit.audit_selection)
runs AIM (bounded and unbounded) and JAM-PGM (bounded; it refuses unbounded
DP) through the engine until their first selection, on neighbours where one
record flips the best candidate; claim: the epsilon round 1's selection was
charged (1.0). Broken variants select with 1/4 (and 1/16) of the score
sensitivity, i.e. at 4 (16) times the charged epsilon. One JSON line each:
mechanism, neighbours, trials, charged epsilon, lower bound, flagged, CPU
seconds (user + sys), load average, wall seconds.

    nice -n 10 .venv/bin/python benchmarks/privacy_audit.py
    nice -n 10 .venv/bin/python benchmarks/privacy_audit.py --em-trials 100000 \
        --gaussian-trials 1000000 --e2e-trials 20000
    nice -n 10 .venv/bin/python benchmarks/privacy_audit.py --blocks selection \
        --selection-trials 10000 --selection-factors 1 4
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402

from common import cpu_seconds, emit  # noqa: E402
from synth_core import audit  # noqa: E402

DELTA = 1e-5
BLOCKS = ("building", "mwem", "selection")


def record(block, variant, eps, bound, claim, trials, seconds):
    emit(block=block, variant=variant, epsilon=eps, delta=bound.delta, claim=claim,
         epsilon_lower=round(bound.epsilon_lower, 4), flagged=bound.epsilon_lower > claim,
         event=bound.event, direction=bound.direction, hits=list(bound.hits), trials=trials,
         confidence=bound.confidence, seconds=round(seconds, 2))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epsilons", type=float, nargs="*", default=[0.5, 1.0, 2.0],
                    help="epsilons of the building-block audits (none: only the end-to-end one)")
    ap.add_argument("--em-trials", type=int, default=100_000)
    ap.add_argument("--gaussian-trials", type=int, default=1_000_000)
    ap.add_argument("--e2e-trials", type=int, default=20_000)
    ap.add_argument("--e2e-epsilons", type=float, nargs="+", default=[1.0])
    ap.add_argument("--selection-trials", type=int, default=10_000,
                    help="runs on each neighbour per selection audit")
    ap.add_argument("--selection-factors", type=float, nargs="+", default=[1.0, 4.0, 16.0],
                    help="1: honest; f > 1: selection at f times the charged epsilon")
    ap.add_argument("--blocks", nargs="+", choices=BLOCKS, default=list(BLOCKS))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if "building" in args.blocks:
        building_blocks(args)
    if "mwem" in args.blocks:
        mwem_pgm(args)
    if "selection" in args.blocks:
        selection(args)
    return 0


def selection(args) -> None:
    """The selection audit of every mechanism, relation and factor."""
    for mechanism, relations in audit.SELECTION_MECHANISMS.items():
        for neighbours in relations:
            for factor in args.selection_factors:
                wall, cpu = time.perf_counter(), cpu_seconds()
                r = audit.audit_selection(mechanism, neighbours, trials=args.selection_trials,
                                          seed=args.seed, factor=factor)
                b = r.bound
                emit(block="selection (first pick, one record flips it)", mechanism=mechanism,
                     neighbours=neighbours, variant="honest" if factor == 1 else
                     f"selection at {factor:g} x the charged epsilon", trials=r.trials,
                     charged_epsilon=r.charged_epsilon, epsilon_lower=round(b.epsilon_lower, 4),
                     fraction_of_charged=round(b.epsilon_lower / r.charged_epsilon, 3),
                     flagged=r.flagged, event_epsilon=round(r.event_epsilon, 4),
                     target_probability=[round(p, 5) for p in r.target_probability],
                     round0_spread=round(r.round0_spread, 4), hits=list(b.hits),
                     direction=b.direction, confidence=b.confidence,
                     cpu_seconds=round(cpu_seconds() - cpu, 1),
                     load_average=[round(x, 2) for x in os.getloadavg()],
                     wall_seconds=round(time.perf_counter() - wall, 1))


def building_blocks(args) -> None:
    """The exponential mechanism and the Gaussian measurement, honest and broken."""
    rng = np.random.default_rng(args.seed)
    for eps in args.epsilons:
        for variant, told in (("honest", 1.0), ("sensitivity halved", 0.5)):
            t = time.perf_counter()
            b = audit.audit_exponential(eps, trials=args.em_trials, rng=rng, assumed_sensitivity=told)
            record("exponential mechanism (20 candidates)", variant, eps, b, eps, args.em_trials,
                   time.perf_counter() - t)
        for variant, factor in (("honest", 1.0), ("noise std halved", 0.5)):
            t = time.perf_counter()
            b, claim = audit.audit_gaussian(eps, DELTA, trials=args.gaussian_trials, rng=rng,
                                            std_factor=factor)
            record("gaussian measurement", variant, eps, b, claim, args.gaussian_trials,
                   time.perf_counter() - t)


def mwem_pgm(args) -> None:
    """MWEM+PGM end to end, honest and with a quarter and an eighth of the noise."""
    for eps in args.e2e_epsilons:
        for variant, div in (("honest", 1.0), ("noise std / 4", 4.0), ("noise std / 8", 8.0)):
            t = time.perf_counter()
            b, claim = audit.audit_mwem_pgm(eps, DELTA, trials=args.e2e_trials, seed=args.seed,
                                            noise_divisor=div)
            record("mwem-pgm end to end (3 binary columns, 2 rounds)", variant, eps, b, claim,
                   args.e2e_trials, time.perf_counter() - t)


if __name__ == "__main__":
    sys.exit(main())
