"""dpmm's AIM (``dpmm.models.aim.AIMGM``) on a labelled CSV; runs in dpmm's venv.

The generative model is used directly, without dpmm's pipeline binner (the
domain is given, so no budget goes to binning), with domain compression off
(AIM as published), all ``--degree``-way marginals with no cell cap, and one
process (``n_jobs=1``). dpmm converts (epsilon, delta) to rho with its own
``cdp_rho``; the driver passes the epsilon at which that equals ``--rho``.
dpmm draws its Gaussian noise from OpenDP (not seedable); ``--seed`` seeds the
selection and sampling generator.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common_driver import arguments, categories, matching_epsilon, to_codes, to_labels, write_info  # noqa: E402


def main() -> None:
    args = arguments(__doc__)
    from dpmm.models.aim import AIMGM
    from dpmm.models.base.mechanisms import cdp_rho

    cats = categories(args.schema)
    codes = to_codes(pd.read_csv(args.data, dtype=str, keep_default_na=False), cats)
    epsilon = matching_epsilon(cdp_rho, args.rho, args.epsilon, args.delta)
    np.random.seed(args.seed)
    model = AIMGM(epsilon=epsilon, delta=args.delta, compress=False,
                  max_model_size=args.max_model_size, degree=args.degree,
                  max_cells=float("inf"), domain={c: len(v) for c, v in cats.items()},
                  random_state=np.random.RandomState(args.seed), n_jobs=1)
    model.fit(codes)
    synthetic = model.generate(n_records=len(codes))
    to_labels(synthetic[list(cats)], cats).to_csv(args.out, index=False)
    write_info(args.info, library="dpmm", version=importlib.metadata.version("dpmm"),
               epsilon_passed=epsilon, delta_passed=args.delta,
               rho_library=cdp_rho(epsilon, args.delta), rounds="16 * columns (default)")


if __name__ == "__main__":
    main()
