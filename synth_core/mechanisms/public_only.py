"""Public-only baseline: the public rows rescaled to ``n`` records. Zero budget.

It is the reference line in every comparison (the JAM paper's "public proxy").
Its synthetic data is the public table with every row repeated ``n / n_pub``
times in expectation (randomised rounding keeps exactly ``n`` rows).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..engine import RunState
from ..errors import ConfigError
from .base import PUBLIC_ROWS, AdaptiveMechanism, Capabilities, require_public_rows


class PublicOnly(AdaptiveMechanism):
    name = "public-only"
    title = "Public-only baseline"
    capabilities = Capabilities(public_rows=True, releases=PUBLIC_ROWS, zero_budget=True)
    options = ()

    def initialise(self, state: RunState):
        require_public_rows(state, "The public-only baseline")
        return []

    def plan(self, state):
        return None

    def candidates(self, state, plan):
        return []

    def scores(self, state, plan, candidates):
        return np.empty(0)

    def sample(self, loop, rows: int, rng: np.random.Generator, public_codes=None) -> pd.DataFrame:
        """The public rows, each repeated ``rows / n_pub`` times by randomised rounding."""
        pub = loop.state.data.public.to_frame()
        reps = np.full(len(pub), rows / len(pub))
        base = np.floor(reps).astype(int)
        extra = rows - base.sum()
        if extra > 0:
            base[rng.choice(len(pub), size=extra, replace=False)] += 1
        out = pub.loc[np.repeat(np.arange(len(pub)), base)].reset_index(drop=True)
        return out.sample(frac=1.0, random_state=rng.integers(2 ** 32)).reset_index(drop=True)
