"""A long-lived process that runs many mechanisms in a row must stay bounded.

Runs N mechanism runs back to back in one process (alternating JAM-PGM and
AIM on a shared dataset, different seeds) and prints, per run and at the
end, the process's memory maps, resident memory and the number of compiled
fit programs. The kernel's limit is 65,530 maps; the authors' code died of it.

    python benchmarks/long_process.py --data titanic --runs 20
"""

from __future__ import annotations

import argparse
import time

from common import dataset, emit, peak_rss_mb, require_shared, rss_mb


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="titanic")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--epsilon", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=10, help="JAM-PGM rounds per run")
    ap.add_argument("--implicit-from-mb", type=float, default=None,
                    help="use the implicit oracle from this model size on (0: in every fit, "
                         "to exercise its larger compiled programs on small data)")
    args = ap.parse_args()
    require_shared()
    if args.implicit_from_mb is not None:
        import synth_core.model
        synth_core.model.IMPLICIT_FROM_MB = args.implicit_from_mb

    from synth_core import Synthesizer
    from synth_core.model import memory_maps
    from synth_core.schema import load_schema

    priv, pub, domain = dataset(args.data)
    schema = load_schema(domain)
    start_maps, start_rss = memory_maps(), rss_mb()
    emit(bench="long_process", stage="start", memory_maps=start_maps, rss_mb=start_rss,
         implicit_from_mb=args.implicit_from_mb)
    compiles = 0
    t0 = time.perf_counter()
    for i in range(args.runs):
        mech = "jam-pgm" if i % 2 == 0 else "aim"
        synth = Synthesizer(mech, epsilon=args.epsilon, seed=i,
                            rounds=args.rounds if mech == "jam-pgm" else None)
        res = synth.fit(str(priv), str(pub) if mech == "jam-pgm" else None, schema=schema)
        compiles += synth.engine.estimator.compiles
        emit(bench="long_process", stage="run", run=i, mechanism=mech, rounds=len(res.events),
             seconds=res.seconds, compiles_so_far=compiles, memory_maps=memory_maps(),
             rss_mb=rss_mb())
    emit(bench="long_process", stage="end", runs=args.runs, seconds=time.perf_counter() - t0,
         compiles=compiles, memory_maps_before=start_maps, memory_maps_after=memory_maps(),
         rss_mb_before=start_rss, rss_mb_after=rss_mb(), peak_rss_mb=peak_rss_mb())


if __name__ == "__main__":
    main()
