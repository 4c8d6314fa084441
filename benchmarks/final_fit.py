"""How long the final Private-PGM fit needs to be: error against iterations.

Runs one mechanism to the end with a short final fit, then continues that fit
(warm-started) up to each checkpoint and prints, per checkpoint, the seconds
spent in the final fit so far, the model's own workload error (its exact
marginals against the private data, no sampling noise) and the workload error
of a synthetic sample. The rounds are the same for every checkpoint, so the
differences are due to the final fit alone. CURATOR-ONLY figures: this is a
benchmark on benchmark data.

    python benchmarks/final_fit.py --data adult_pub025 --mechanism jam-pgm --epsilon 10
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from common import dataset, emit, peak_rss_mb, require_shared


def model_workload_error(private, model, workload) -> float:
    errs = [np.abs(private.marginal(cl) / private.n - model.counts(cl) / model.total).sum()
            for cl in workload.cliques]
    return float(np.mean(errs))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="adult_pub025")
    ap.add_argument("--mechanism", default="jam-pgm")
    ap.add_argument("--epsilon", type=float, default=10.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fit-iters", type=int, default=100)
    ap.add_argument("--checkpoints", type=int, nargs="+", default=[50, 100, 200, 300, 500, 1000])
    args = ap.parse_args()
    require_shared()
    from synth_core import Synthesizer
    from synth_core.evaluate import workload_error
    from synth_core.marginals import CodedTable
    from synth_core.schema import load_schema

    priv, pub, domain = dataset(args.data)
    synth = Synthesizer(args.mechanism, epsilon=args.epsilon, delta=1e-9, workload="all-3way",
                        seed=args.seed, fit_iters=args.fit_iters,
                        final_fit_iters=args.checkpoints[0])
    start = time.perf_counter()
    for event in synth.run(str(priv), str(pub) if pub and args.mechanism != "aim" else None,
                           schema=load_schema(domain)):
        print(event.describe(), file=sys.stderr, flush=True)
    res, engine = synth.result, synth.engine
    rounds_seconds = time.perf_counter() - start
    private = res.inputs.data.private
    model, done, fit_seconds = res.model, args.checkpoints[0], res.model.seconds
    fits = [m.to_fit() for m in engine.state.measurements]
    rng = np.random.default_rng(args.seed)
    for target in args.checkpoints:
        if target > done:
            model = engine.estimator.fit(fits, model.total, warm=model, max_iters=target - done, tol=0.0)
            fit_seconds += model.seconds
            done = target
        sample = CodedTable.from_frame(model.sample(private.n, int(rng.integers(2 ** 31))), private.size_of)
        emit(bench="final-fit", data=args.data, mechanism=args.mechanism, epsilon=args.epsilon,
             seed=args.seed, final_iters=done, final_fit_seconds=round(fit_seconds, 1),
             run_seconds_before_final=round(rounds_seconds - res.model.seconds, 1),
             model_size_mb=round(model.size_mb, 1),
             model_workload_error=model_workload_error(private, model, res.workload),
             sample_workload_error=workload_error(private, sample, res.workload),
             peak_rss_mb=round(peak_rss_mb()))


if __name__ == "__main__":
    main()
