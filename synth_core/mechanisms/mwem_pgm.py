"""MWEM+PGM (McKenna, Mullins, Sheldon, Miklau 2022, the AIM paper's Algorithm 1).

A fixed number of rounds ``T`` over the workload cliques ``W`` (no
initialisation, the model starts uniform). Each round gets ``rho / T``, half
for selection and half for measurement:

* selection: exponential mechanism with ``eps = 2 sqrt(rho / T)`` (cost
  ``eps^2 / 8 = rho / (2T)``) on the score ``||M_r(D) - M_r(p)||_1 - n_r``;
  the score's sensitivity is the marginal's L1 sensitivity (1 unbounded,
  2 bounded);
* measurement: Gaussian noise ``sigma = sqrt(T / rho)`` in units of the L2
  sensitivity (cost ``1 / (2 sigma^2) = rho / (2T)``), so the noise std per
  cell is ``sigma`` under unbounded DP and ``sqrt(2) sigma`` under bounded DP;
* the model is refitted with Private-PGM (all measurements share one std).

Round ``t`` actually spends ``(rho - rho_used) / (T - t)``, which equals
``rho / T`` in every round (all rounds spend in full) and makes the last round
spend exactly what is left, so the ledger ends at ``rho`` without rounding
drift.

``T`` defaults to the number of columns ``d`` (Private-PGM's example
``mwem+pgm.py``); the AIM paper's Algorithm 1 has no model-size filter, the
example code filters candidates by a fixed size limit: we apply
``max_model_size`` (default 80 MB) as a fixed limit.
"""

from __future__ import annotations

import numpy as np

from .. import privacy
from ..engine import PRIVATE, Candidate, RoundPlan, RunState, model_errors, size_filter
from ..errors import ConfigError
from .base import MAX_MODEL_SIZE_OPTION, AdaptiveMechanism, Capabilities, Option, ScoreTerms

#: MWEM+PGM's split of each round's budget between selection and measurement.
MWEM_SELECT_SHARE = 0.5


class MWEMPGM(AdaptiveMechanism):
    name = "mwem-pgm"
    title = "MWEM+PGM"
    capabilities = Capabilities(public_columns_variant="vjam-pgm, or aim with --conditional")
    options = (Option("rounds", int, None, "rounds T (default: the number of columns)"),
               MAX_MODEL_SIZE_OPTION)

    def __init__(self, rounds: int | None = None, max_model_size: float = 80.0):
        if rounds is not None and rounds < 1:
            raise ConfigError("MWEM+PGM needs at least one round.")
        if not max_model_size > 0:
            raise ConfigError("max_model_size must be positive (MB).")
        self.T = rounds
        self.max_model_size = float(max_model_size)

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    def initialise(self, state: RunState) -> list[Candidate]:
        if self.T is None:
            self.T = len(state.data.sizes)
        return []

    def plan(self, state: RunState) -> RoundPlan | None:
        t = state.round  # rounds completed so far
        ledger = state.ledger
        if t >= self.T:
            return None
        rho_t = (ledger.total - ledger.spent) / (self.T - t)
        rho_select = MWEM_SELECT_SHARE * rho_t
        rho_measure = rho_t - rho_select
        std = privacy.gaussian_std(rho_measure, state.neighbours.marginal_l2_sensitivity)
        return RoundPlan(epsilon=privacy.exponential_eps(rho_select),
                         sensitivity=state.neighbours.marginal_l1_sensitivity,
                         noise_std=std, rho_measure=rho_measure, fit_stddev=std,
                         final=(t == self.T - 1), size_limit_mb=self.max_model_size)

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        pool = [Candidate(cl, PRIVATE) for cl in state.workload.cliques]
        out = size_filter(state.data.sizes, state.measured_cliques, pool, plan.size_limit_mb)
        if not out:
            raise ConfigError(
                f"No workload marginal fits the model size limit ({plan.size_limit_mb:g} MB).",
                hint="Raise --max-model-size.")
        return out

    def score_terms(self, state: RunState, plan: RoundPlan, candidate: Candidate) -> ScoreTerms:
        """Weight 1 and offset ``n_r``, the number of cells."""
        return ScoreTerms(1.0, float(state.data.private.cells(candidate.clique)))

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        """``||M_r(D) - M_r(p)||_1 - n_r`` (:meth:`score_terms`)."""
        current = model_errors(state, candidates)
        return np.array([self.score_terms(state, plan, c).score(current[c.clique])
                         for c in candidates])
