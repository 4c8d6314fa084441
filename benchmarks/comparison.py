"""Workload error and seconds of the comparison mechanisms (and the others) on the
shared benchmark data, one JSON line per (data, mechanism, epsilon, seed).

All runs: all-3way workload, delta 1e-9, bounded DP, the mechanisms' paper
defaults unless ``--rounds`` / ``--option`` say otherwise. A summary line per
setting gives the mean over seeds and the public proxy line.

    python benchmarks/comparison.py --data titanic --mechanisms mwem-pgm pmw-pub gem gem-pub \
        --epsilons 1 --seeds 0
    python benchmarks/comparison.py --data adult_pub025 --mechanisms gem-pub --epsilons 1 --seeds 0
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from common import cpu_seconds, dataset, emit, peak_rss_mb, public_proxy, require_shared

PUBLIC_USERS = {"jam-pgm", "pmw-pub", "gem-pub", "public-only"}
#: mechanisms that take public columns (``--public-columns``) instead of public rows
COLUMN_USERS = {"vjam-pgm", "vpmw", "vgem-pub"}


def parse_options(items):
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        for cast in (int, float, str):
            try:
                out[key.replace("-", "_")] = cast(value)
                break
            except ValueError:
                continue
    return out


def run_one(name, mechanism, epsilon, seed, rounds, options, quiet, public_columns=()):
    from synth_core import Synthesizer
    from synth_core.schema import load_schema

    priv, pub, domain = dataset(name)
    synth = Synthesizer(mechanism, epsilon=epsilon, delta=1e-9, workload="all-3way",
                        neighbours="bounded", rounds=rounds, seed=seed, **options)
    start, cpu_start = time.perf_counter(), cpu_seconds()
    first = None
    n_rounds = 0
    extra = {"public_columns": list(public_columns)} if mechanism in COLUMN_USERS else {}
    for event in synth.run(str(priv), str(pub) if pub and mechanism in PUBLIC_USERS else None,
                           schema=load_schema(domain), **extra):
        if first is None:
            first = time.perf_counter() - start
        if not quiet:
            print(f"[{name} {mechanism} eps={epsilon} seed={seed}] {event.describe()}",
                  file=sys.stderr, flush=True)
        n_rounds += event.round > 0
    res = synth.result
    rec = dict(bench="comparison", data=name, mechanism=mechanism, epsilon=epsilon, seed=seed,
               workload_error=res.curator_diagnostics().workload_error,
               seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu_start,
               first_event_seconds=first, rounds=n_rounds,
               rho_spent=res.ledger.spent, rho_total=res.ledger.total,
               options=options, peak_rss_mb=peak_rss_mb(), **extra)
    mech = synth.engine.mechanism
    if hasattr(mech, "answers"):  # GEM family: the error of the generator's own distribution
        import numpy as np
        from synth_core.mechanisms.query_release import CountingQueries

        st = synth.engine.state
        queries = CountingQueries(st.workload, st.data.sizes)
        diff = np.abs(queries.answers(st.data.private) - mech.answers())
        rec["distribution_workload_error"] = float(np.add.reduceat(diff, queries.offsets[:-1]).mean())
    pre = getattr(mech, "pretrain_report", None)
    if pre:
        rec["pretrain"] = pre
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["titanic", "adult_pub025"])
    ap.add_argument("--mechanisms", nargs="+", default=["mwem-pgm", "pmw-pub", "gem", "gem-pub"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--rounds", type=int, default=None, help="T (default: each mechanism's)")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                    help="mechanism option, e.g. hidden=1024,1024 (repeatable)")
    ap.add_argument("--public-columns", default="",
                    help="comma-separated public columns for vjam-pgm, vpmw, vgem-pub")
    ap.add_argument("--quiet", action="store_true", help="do not print round events to stderr")
    args = ap.parse_args()
    require_shared()
    proxy = public_proxy()
    options = parse_options(args.option)
    for name in args.data:
        for mech in args.mechanisms:
            for eps in args.epsilons:
                runs = []
                for seed in args.seeds:
                    rec = run_one(name, mech, eps, seed, args.rounds, options, args.quiet,
                                  [c for c in args.public_columns.split(",") if c])
                    emit(**rec)
                    runs.append(rec)
                errs = [r["workload_error"] for r in runs]
                emit(bench="comparison-summary", data=name, mechanism=mech, epsilon=eps,
                     seeds=len(runs), mean_workload_error=statistics.mean(errs),
                     stdev_workload_error=statistics.stdev(errs) if len(errs) > 1 else 0.0,
                     mean_seconds=statistics.mean(r["seconds"] for r in runs),
                     public_proxy=proxy.get(name))


if __name__ == "__main__":
    main()
