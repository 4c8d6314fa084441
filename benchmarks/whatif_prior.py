"""What-if prior of mechanisms that use no public information: how far is the
estimate made before any stand-in run from the stand-in runs themselves?

For each mechanism without public data (MWEM+PGM, AIM, MST, PrivBayes+PGM,
Independent), each workload setting (all-3way at the mechanism's defaults;
all-2way with 6 rounds, 20 fit iterations, 100 final) and each epsilon, one
stand-in run on the titanic sample's ``public-rows`` stand-in (seed 0; public
information only, no private value read) gives a measured error ``y``, and
``x(eps)`` is the noise term of ``synth_core.whatif.noise_estimator``.

Prints a ``whatif-prior-point`` line per run (x, y, y / x ** 1/2, the prior
estimate with ``CALIBRATION["scale_private_only"]`` and their ratio, and the
ratio the estimate with the public-information prior ``CALIBRATION["scale"]``
would have) and one ``whatif-prior`` line: the geometric mean of y / x ** 1/2
(the scale that fits these runs), the worst ratio of estimate to run with each
prior, CPU seconds and the load average. Needs no shared data.

    nice -n 10 python benchmarks/whatif_prior.py > benchmarks/results/whatif/prior.jsonl
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import replace

from common import cpu_seconds, emit

from synth_core import load_sample
from synth_core.whatif import CALIBRATION, PublicBasis, noise_estimator, predict_error_curve

MECHANISMS = ("mwem-pgm", "aim", "mst", "privbayes-pgm", "independent")
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
SETTINGS = {"all-3way, defaults": dict(workload="all-3way"),
            "all-2way, 6 rounds": dict(workload="all-2way", rounds=6, fit_iters=20,
                                       final_fit_iters=100)}


def main() -> None:
    warnings.simplefilter("ignore")
    start = cpu_seconds()
    sample = load_sample("titanic")
    basis = PublicBasis(sample.schema, n=len(sample.private), n_note="n is public (bounded DP)",
                        rows=sample.public, rows_label="titanic public rows")
    logs, ratios, public_prior_ratios = [], [], []
    for mechanism in MECHANISMS:
        for label, settings in SETTINGS.items():
            estimator = noise_estimator(basis, mechanism, settings)
            prior = estimator.estimates(EPSILONS)
            public_prior = replace(estimator, scale=CALIBRATION["scale"]).estimates(EPSILONS)
            runs = predict_error_curve(basis, mechanism, EPSILONS, seeds=1, **settings)
            for point in runs.points:
                x, y = estimator.x(point.epsilon), point.mean
                logs.append(math.log(y / math.sqrt(x)))
                ratios.append(prior[point.epsilon] / y)
                public_prior_ratios.append(public_prior[point.epsilon] / y)
                emit(bench="whatif-prior-point", mechanism=mechanism, settings=label,
                     epsilon=point.epsilon, x=x, error=y, error_over_sqrt_x=y / math.sqrt(x),
                     prior=prior[point.epsilon], prior_over_error=prior[point.epsilon] / y,
                     prior_scale=estimator.scale,
                     public_prior_over_error=public_prior[point.epsilon] / y)
    worst = max(ratios, key=lambda r: abs(math.log(r)))
    emit(bench="whatif-prior", runs=len(ratios), fitted_scale=math.exp(sum(logs) / len(logs)),
         prior_scale=CALIBRATION["scale_private_only"], worst_prior_over_error=worst,
         worst_factor=max(worst, 1 / worst),
         public_prior_over_error_range=[min(public_prior_ratios), max(public_prior_ratios)],
         cpu_seconds=cpu_seconds() - start,
         load_average=os.getloadavg()[0])


if __name__ == "__main__":
    main()
