"""A tiny dependent table and cheap run settings shared by whole-run tests.

Four categorical columns (``a`` 3 values, ``b`` 2, ``c`` 4, ``d`` 3) where
each depends on the ones before, so adaptive mechanisms find structure; and
settings small enough that every mechanism runs in about a second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SIZES = {"a": 3, "b": 2, "c": 4, "d": 3}
SCHEMA = {"columns": [{"name": c, "kind": "categorical", "categories": list(range(k))}
                      for c, k in SIZES.items()]}


def dependent_table(n: int, seed: int) -> pd.DataFrame:
    """``n`` rows over :data:`SIZES` with dependent columns (codes as integers)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 2
    c = (a + b + rng.integers(0, 2, n)) % 4
    d = (c + rng.integers(0, 2, n)) % 3
    return pd.DataFrame({"a": a, "b": b, "c": c, "d": d})


PRIVATE = dependent_table(300, 1)
PUBLIC = dependent_table(120, 2)
#: public rows far from the private ones (c and d constant): JAM-PGM then picks
#: private marginals, so its report has noisy answers
SHIFTED_PUBLIC = PUBLIC.assign(c=0, d=0)

#: few fit iterations per round and at the end
FIT = dict(fit_iters=20, final_fit_iters=40)
#: a GEM network small enough for a test
GEM_TINY = dict(hidden=(16,), noise_dim=8, batch=16, inner_steps=5, max_queries=5, threads=1)
