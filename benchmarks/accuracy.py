"""Accuracy and speed of JAM-PGM and AIM on the shared benchmark data.

Prints one JSON line per run (workload error, seconds end to end, seconds to
the first round event, peak resident memory) and a summary line per setting
with the mean over seeds, the reference figure of the authors' code where one
exists (../shared/reference/results.jsonl) and the public proxy line.

    python benchmarks/accuracy.py --data titanic adult_pub025 --mechanisms jam-pgm aim \
        --epsilons 0.1 1 10 --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from common import cpu_seconds, dataset, emit, peak_rss_mb, public_proxy, reference_results, require_shared

MECH_REF = {"jam-pgm": "jam", "aim": "aim"}


def run_one(name, mechanism, epsilon, seed, rounds, fit_iters):
    from synth_core import Synthesizer
    from synth_core.model import memory_maps
    from synth_core.schema import load_schema

    priv, pub, domain = dataset(name)
    synth = Synthesizer(mechanism, epsilon=epsilon, delta=1e-9, workload="all-3way",
                        neighbours="bounded", rounds=rounds, seed=seed, max_model_size=80.0,
                        fit_iters=fit_iters)
    start = time.perf_counter()
    cpu_start = cpu_seconds()
    first = None
    n_rounds = 0
    public_rounds = 0
    for event in synth.run(str(priv), str(pub) if pub and mechanism != "aim" else None,
                           schema=load_schema(domain)):
        if first is None:
            first = time.perf_counter() - start
        print(f"[{name} {mechanism} eps={epsilon} seed={seed}] {event.describe()}", file=sys.stderr, flush=True)
        if event.round > 0:
            n_rounds += 1
            public_rounds += event.source == "public"
    res = synth.result
    return dict(bench="accuracy", data=name, mechanism=mechanism, epsilon=epsilon, seed=seed,
                workload_error=res.curator_diagnostics().workload_error,
                seconds=time.perf_counter() - start, cpu_seconds=cpu_seconds() - cpu_start,
                first_event_seconds=first,
                rounds=n_rounds, public_rounds=public_rounds,
                rho_spent=res.ledger.spent, rho_total=res.ledger.total,
                compiles=synth.engine.estimator.compiles, memory_maps=memory_maps(),
                peak_rss_mb=peak_rss_mb())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["titanic", "adult_pub025"])
    ap.add_argument("--mechanisms", nargs="+", default=["jam-pgm", "aim"])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 1.0, 10.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--rounds", type=int, default=None, help="JAM-PGM rounds (default 30)")
    ap.add_argument("--fit-iters", type=int, default=100)
    args = ap.parse_args()
    require_shared()
    refs = reference_results()
    proxy = public_proxy()
    for name in args.data:
        for mech in args.mechanisms:
            for eps in args.epsilons:
                runs = []
                for seed in args.seeds:
                    rec = run_one(name, mech, eps, seed, args.rounds, args.fit_iters)
                    emit(**rec)
                    runs.append(rec)
                errs = [r["workload_error"] for r in runs]
                ref = [r["workload_error"] for r in refs
                       if r["data"] == name and r.get("mech") == MECH_REF[mech] and r["eps"] == eps]
                mean = statistics.mean(errs)
                emit(bench="accuracy-summary", data=name, mechanism=mech, epsilon=eps,
                     seeds=len(runs), mean_workload_error=mean,
                     sd_workload_error=statistics.stdev(errs) if len(errs) > 1 else 0.0,
                     mean_seconds=statistics.mean(r["seconds"] for r in runs),
                     max_seconds=max(r["seconds"] for r in runs),
                     mean_cpu_seconds=statistics.mean(r["cpu_seconds"] for r in runs),
                     max_first_event_seconds=max(r["first_event_seconds"] for r in runs),
                     reference_workload_error=ref[0] if ref else None,
                     ratio_to_reference=(mean / ref[0]) if ref else None,
                     public_proxy=proxy.get(name),
                     below_public_proxy=(mean < proxy[name]) if name in proxy else None)


if __name__ == "__main__":
    main()
