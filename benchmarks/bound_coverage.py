"""Coverage of the released marginal bounds (AIM paper, section 5).

Runs a mechanism many times (seeds x epsilons) on a bundled sample, computes
the 95% bounds of synth_core.uncertainty from each release (report and
synthetic records only) and compares them with the true error
``||M_r(D) - M_r(S)||_1`` computed here from the private data (CURATOR-ONLY:
this is a benchmark). Prints one JSON line per (mechanism, kind): the number
of (run, marginal) pairs, the share of them whose bound covers the true error,
the ratio mean bound / mean true error (and how many pairs got no bound), and for supported marginals the std of
the standardised noisy estimate ``(ybar_r - M_r(D)) / sigbar_r`` (1 if the
stated per-cell noise is right); then a summary line per mechanism.

    python benchmarks/bound_coverage.py --sample titanic --mechanisms aim,mwem-pgm,jam-pgm
    python benchmarks/bound_coverage.py --sample adult-pub025 --columns age,education,sex,race,income
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections import defaultdict

import numpy as np

from common import cpu_seconds, emit


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sample", default="titanic")
    ap.add_argument("--columns", default="", help="comma-separated subset of columns (default: all)")
    ap.add_argument("--mechanisms", default="aim,mwem-pgm,jam-pgm")
    ap.add_argument("--workload", default="all-2way")
    ap.add_argument("--epsilons", default="0.3,1,3")
    ap.add_argument("--runs", type=int, default=12, help="runs per mechanism (seeds 0..runs-1)")
    ap.add_argument("--rounds", type=int, default=None, help="rounds (AIM: budget scale T)")
    ap.add_argument("--level", type=float, default=0.95)
    ap.add_argument("--fit-iters", type=int, default=50)
    ap.add_argument("--final-fit-iters", type=int, default=200)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    from synth_core import Synthesizer, load_sample
    from synth_core.uncertainty import SUPPORTED, combined_estimate, marginal_bounds

    sample = load_sample(args.sample)
    private, public, schema = sample.private, sample.public, sample.schema
    if args.columns:
        cols = [c.strip() for c in args.columns.split(",")]
        private, schema = private[cols], schema.project(cols)
        public = public[cols] if public is not None else None
    epsilons = [float(e) for e in args.epsilons.split(",")]
    for mech in args.mechanisms.split(","):
        started, cpu0 = time.perf_counter(), cpu_seconds()
        stats = defaultdict(lambda: {"pairs": 0, "covered": 0, "bound": 0.0, "error": 0.0,
                                     "no_bound": 0})
        z = []
        for seed in range(args.runs):
            eps = epsilons[seed % len(epsilons)]
            synth = Synthesizer(mech, epsilon=eps, workload=args.workload, seed=seed,
                                rounds=args.rounds, fit_iters=args.fit_iters,
                                final_fit_iters=args.final_fit_iters)
            uses_public = mech in ("jam-pgm", "public-only")
            res = synth.fit(private, public if uses_public else None, schema=schema)
            truth, synthetic = res.inputs.data.private, res.synthetic_table
            for b in marginal_bounds(res.report, res.synthetic_codes, level=args.level):
                s = stats[b.kind]
                if b.bound_l1 is None:
                    s["no_bound"] += 1
                    continue
                s["pairs"] += 1
                err = float(np.abs(truth.marginal(b.clique) - synthetic.marginal(b.clique)).sum())
                s["covered"] += err <= b.bound_l1
                s["bound"] += b.bound_l1
                s["error"] += err
                if b.kind == SUPPORTED:
                    ybar, sd, _ = combined_estimate(res.report, b.clique)
                    z.append((ybar - truth.marginal(b.clique)) / sd)
            print(f"{mech} seed {seed} eps {eps:g} done", file=sys.stderr, flush=True)
        seconds = round(time.perf_counter() - started, 1)
        common = {"bench": "bound_coverage", "sample": args.sample, "columns": args.columns or "all",
                  "workload": args.workload, "mechanism": mech, "epsilons": epsilons,
                  "runs": args.runs, "level": args.level}
        bounded = {"pairs": 0, "covered": 0, "bound": 0.0, "error": 0.0}
        for kind, s in sorted(stats.items()):
            line = {**common, "kind": kind, "pairs": s["pairs"], "pairs_without_bound": s["no_bound"]}
            if s["pairs"]:
                line.update(coverage=round(s["covered"] / s["pairs"], 4),
                            mean_bound_over_mean_error=round(s["bound"] / max(s["error"], 1e-12), 2))
                for k in bounded:
                    bounded[k] += s[k]
            if kind == SUPPORTED and z:
                line["supported_z_std"] = round(float(np.concatenate(z).std()), 3)
            emit(**line)
        emit(**common, kind="all with a bound", pairs=bounded["pairs"],
             coverage=round(bounded["covered"] / max(bounded["pairs"], 1), 4),
             mean_bound_over_mean_error=round(bounded["bound"] / max(bounded["error"], 1e-12), 2),
             seconds=seconds, cpu_seconds=round(cpu_seconds() - cpu0, 1))


if __name__ == "__main__":
    main()
