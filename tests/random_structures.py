"""Random clique structures with log-potentials, for oracle tests."""

from __future__ import annotations

import numpy as np

from synth_core.inference import maximal_cliques


def random_structure(seed: int, columns=(6, 9), clique_size=(2, 4), n_cliques=(5, 9),
                     scale: float = 2.0):
    """Random column sizes (2 to 5 values; ``columns`` a half-open range), overlapping cliques
    of ``clique_size`` columns (kept if maximal), and normal log-potentials of std ``scale``."""
    rng = np.random.default_rng(seed)
    sizes = {f"col{i}": int(rng.integers(2, 6)) for i in range(int(rng.integers(*columns)))}
    cols = list(sizes)
    cliques = maximal_cliques([tuple(rng.choice(cols, size=int(rng.integers(*clique_size)),
                                                replace=False))
                               for _ in range(int(rng.integers(*n_cliques)))])
    potentials = {cl: rng.normal(0, scale, [sizes[c] for c in cl]) for cl in cliques}
    return sizes, cliques, potentials
