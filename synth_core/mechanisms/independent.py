"""Independent (the baseline of the AIM paper, McKenna, Mullins, Sheldon, Miklau 2022, section 6).

Every 1-way marginal is measured once with the Gaussian mechanism, the budget
split equally over the ``d`` columns: each costs ``rho / d``, so its noise std
is ``Delta_2 / sqrt(2 rho / d)`` with ``Delta_2`` the marginal's L2
sensitivity (1 unbounded, ``sqrt(2)`` bounded). Nothing is selected: the
measured marginals do not depend on the data. Private-PGM fits the noisy
1-ways (each weighted by ``1/std``); with no marginal over two columns its
model is the product of its 1-way marginals, from which records are sampled.
"""

from __future__ import annotations

import numpy as np

from .. import privacy
from ..engine import PRIVATE, Candidate, RoundPlan, RunState
from .base import AdaptiveMechanism, Capabilities


class Independent(AdaptiveMechanism):
    name = "independent"
    title = "Independent"
    capabilities = Capabilities(public_columns_variant="aim with --conditional")
    selection = "none (every 1-way marginal, chosen without the data)"

    def rounds_planned(self, state: RunState) -> int | None:
        return 0

    def initialise(self, state: RunState) -> list[Candidate]:
        """Every 1-way marginal, in column order."""
        return [Candidate((c,), PRIVATE) for c in state.data.sizes]

    def initial_noise(self, state: RunState) -> tuple[float, float]:
        """``std = Delta_2 / sqrt(2 rho / d)``: the ``d`` measurements spend ``rho``."""
        share = state.ledger.total / len(state.data.sizes)
        std = privacy.gaussian_std(share, state.neighbours.marginal_l2_sensitivity)
        return std, std

    def plan(self, state: RunState) -> RoundPlan | None:
        return None

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        return []

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        return np.zeros(len(candidates))
