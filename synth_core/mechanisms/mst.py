"""MST (McKenna, Sheldon, Miklau 2021, "Winning the NIST Contest"; the authors' ``mst.py``).

The budget ``rho`` is split in thirds over three steps:

1. measure every 1-way marginal with Gaussian noise (each ``rho / (3d)``);
2. fit Private-PGM to them (an independent model ``p_1``) and select a
   maximum spanning tree of the 2-way marginals with Kruskal's algorithm,
   each of its ``d - 1`` edges chosen by the exponential mechanism among the
   pairs that join two components, on the score (edge weight)
   ``w_ab = ||M_ab(D) - M_ab(p_1)||_1`` with sensitivity the marginal's L1
   sensitivity (1 unbounded, 2 bounded: ``p_1`` is a function of released
   values), each selection costing ``rho / (3 (d - 1))``;
3. measure the tree's ``d - 1`` 2-way marginals with Gaussian noise (each
   ``rho / (3 (d - 1))``), fit Private-PGM to all measurements (weights
   ``1/std``) and sample.

MST is defined under unbounded DP (L2 sensitivity 1); under bounded DP the
same costs hold with the marginals' L2 sensitivity ``sqrt(2)`` and the
scores' sensitivity 2, as for the other mechanisms. The weights are computed
once, from ``p_1``, as in MST; the Engine measures each edge in the round
that selects it (the selections do not depend on the edge measurements, so
the output distribution is MST's). Round ``t`` spends
``(rho - rho_used) / (2 (d - 1 - t))`` on its selection and on its
measurement: ``rho / (3 (d - 1))`` each, the last round exactly what is left.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import privacy
from ..engine import PRIVATE, Candidate, RoundPlan, RunState
from ..errors import ConfigError
from .base import AdaptiveMechanism, Capabilities

#: MST's split of the budget: 1-way measurements, tree selection, 2-way measurements
MST_STEP_SHARE = 1.0 / 3.0


class Components:
    """Disjoint sets of columns (Kruskal's forest): which pairs an edge may join."""

    def __init__(self, columns):
        self.parent = {c: c for c in columns}

    def root(self, c: str) -> str:
        while self.parent[c] != c:
            self.parent[c] = self.parent[self.parent[c]]
            c = self.parent[c]
        return self.parent[c]

    def joined(self, a: str, b: str) -> bool:
        return self.root(a) == self.root(b)

    def join(self, a: str, b: str) -> None:
        self.parent[self.root(a)] = self.root(b)


class MST(AdaptiveMechanism):
    name = "mst"
    title = "MST"
    capabilities = Capabilities(public_columns_variant="aim with --conditional")
    selection = "exponential mechanism (Gumbel-max), one spanning-tree edge per round"

    def __init__(self):
        self.forest: Components | None = None
        self.edges: list[tuple[str, str]] = []
        #: M_ab(p_1) of every pair: the 1-way model's 2-way marginals (released values only)
        self.one_way_estimates: dict | None = None

    def rounds_planned(self, state: RunState) -> int | None:
        return len(state.data.sizes) - 1

    def initialise(self, state: RunState) -> list[Candidate]:
        columns = list(state.data.sizes)
        if len(columns) < 2:
            raise ConfigError("MST needs at least two columns (it selects a tree of 2-way "
                              "marginals).", hint="Use the independent mechanism for one column.")
        self.forest = Components(columns)
        self.edges = list(itertools.combinations(columns, 2))
        return [Candidate((c,), PRIVATE) for c in columns]

    def initial_noise(self, state: RunState) -> tuple[float, float]:
        """Each of the ``d`` 1-ways costs ``rho / (3 d)``."""
        share = MST_STEP_SHARE * state.ledger.total / len(state.data.sizes)
        std = privacy.gaussian_std(share, state.neighbours.marginal_l2_sensitivity)
        return std, std

    def plan(self, state: RunState) -> RoundPlan | None:
        t, d = state.round, len(state.data.sizes)
        if t >= d - 1:
            return None
        if self.one_way_estimates is None:   # the first round: p_1 is the model of the 1-ways
            self.one_way_estimates = state.model.counts_many(self.edges)
        ledger = state.ledger
        rho_half = (ledger.total - ledger.spent) / (2 * (d - 1 - t))
        std = privacy.gaussian_std(rho_half, state.neighbours.marginal_l2_sensitivity)
        return RoundPlan(epsilon=privacy.exponential_eps(rho_half),
                         sensitivity=state.neighbours.marginal_l1_sensitivity,
                         noise_std=std, rho_measure=rho_half, fit_stddev=std,
                         final=(t == d - 2))

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        """The pairs that join two components of the forest selected so far."""
        return [Candidate(e, PRIVATE) for e in self.edges if not self.forest.joined(*e)]

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        """CURATOR-ONLY: ``||M_ab(D) - M_ab(p_1)||_1`` of each pair. The error is of
        ``p_1``, not of the round's model, so the scores have no section-5 terms
        (``score_terms`` stays ``None``)."""
        private = state.data.private
        return np.array([float(np.abs(private.marginal(c.clique)
                                      - self.one_way_estimates[c.clique]).sum())
                         for c in candidates])

    def after_round(self, state, plan, chosen, before, after) -> None:
        self.forest.join(*chosen.clique)
