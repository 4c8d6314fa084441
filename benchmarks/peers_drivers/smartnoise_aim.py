"""smartnoise-synth's AIM (``snsynth.aim.AIMSynthesizer``) on a labelled CSV; runs in its venv.

The table transformer is one ``LabelTransformer`` per column, fitted on the
declared category lists (not on the private rows), so the model's domain is
the same as every other library's. All ``--degree``-way marginals, no cell
cap, AIM's default rounds. smartnoise converts (epsilon, delta) to rho through
OpenDP's Gaussian calibration; the driver passes the epsilon at which that
equals ``--rho``. Its noise comes from OpenDP (not seedable); ``--seed`` seeds
numpy's global generator, which its selection and sampling use.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common_driver import arguments, categories, matching_epsilon, write_info  # noqa: E402


def domain_transformer(cats: dict[str, list[str]]):
    """A TableTransformer whose label codes are fitted on the declared categories only."""
    from snsynth.transform import LabelTransformer, TableTransformer

    width = max(len(v) for v in cats.values())
    frame = pd.DataFrame({c: [v[i % len(v)] for i in range(width)] for c, v in cats.items()})
    transformer = TableTransformer([LabelTransformer(nullable=False) for _ in cats])
    transformer.fit(frame)
    return transformer


def main() -> None:
    args = arguments(__doc__)
    from snsynth.aim import AIMSynthesizer
    from snsynth.utils import cdp_rho

    cats = categories(args.schema)
    private = pd.read_csv(args.data, dtype=str, keep_default_na=False)[list(cats)]
    epsilon = matching_epsilon(cdp_rho, args.rho, args.epsilon, args.delta)
    np.random.seed(args.seed)
    synth = AIMSynthesizer(epsilon=epsilon, delta=args.delta, max_model_size=args.max_model_size,
                           degree=args.degree, max_cells=10 ** 12)
    synth.fit(private, transformer=domain_transformer(cats), categorical_columns=list(cats))
    synthetic = synth.sample(len(private))
    frame = pd.DataFrame(synthetic, columns=list(cats)) if not isinstance(synthetic, pd.DataFrame) else synthetic
    frame.to_csv(args.out, index=False)
    write_info(args.info, library="smartnoise-synth",
               version=importlib.metadata.version("smartnoise-synth"),
               epsilon_passed=epsilon, delta_passed=args.delta,
               rho_library=float(cdp_rho(epsilon, args.delta)), rounds="16 * columns (default)")


if __name__ == "__main__":
    main()
