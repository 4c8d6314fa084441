"""AIM (McKenna, Mullins, Sheldon, Miklau 2022, Algorithm 4).

Candidates are the downward closure ``W+`` of the workload, weighted by
``w_r = sum_s c_s |r ∩ s|``. All 1-way marginals are measured first. With
``T = 16 d`` as the round budget scale, ``sigma = sqrt(T / (2 * 0.9 * rho))``
and ``eps = sqrt(8 * 0.1 * rho / T)`` (90% measure, 10% select), in units of
the marginal's L2 sensitivity (noise std = sensitivity * sigma). Each round
filters candidates by model size (limit ``max_size * rho_used / rho``),
selects by the exponential mechanism on
``w_r (||M_r(D) - M_r(p)||_1 - sqrt(2/pi) * std * n_r)`` with sensitivity
``max w_r`` (times 2 under bounded DP), measures with Gaussian noise, refits
weighting each measurement by ``1/std``, and anneals: if the model's answer
on the measured marginal moved by at most ``sqrt(2/pi) * std * n_r`` then
``sigma /= 2`` and ``eps *= 2``. When less than two rounds' budget is left,
the last round spends exactly what remains.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .. import privacy
from ..engine import (PRIVATE, AdaptiveMechanism, Candidate, RoundPlan, RunState,
                      expected_noise_l1, model_errors, size_filter)
from ..errors import ConfigError

#: AIM's split of each round's budget: 90% measurement, 10% selection.
AIM_MEASURE_SHARE = 0.9


class AIM(AdaptiveMechanism):
    name = "aim"

    def __init__(self, max_model_size: float = 80.0, rounds: int | None = None,
                 public_columns: Sequence[str] = ()):
        if not max_model_size > 0:
            raise ConfigError("max_model_size must be positive (MB).")
        if rounds is not None and rounds < 1:
            raise ConfigError("AIM's round budget scale T must be at least 1.")
        if public_columns:
            raise ConfigError("AIM does not use public columns yet.",
                              hint="Use vjam-pgm for public columns (conditional AIM is not implemented yet).")
        self.max_model_size = float(max_model_size)
        self.T = rounds
        self.sigma = math.nan   # in units of the L2 sensitivity
        self.eps = math.nan
        self.weights: dict = {}
        self.done = False

    # -- helpers ---------------------------------------------------------------

    def _std(self, state: RunState, sigma: float) -> float:
        return state.neighbours.marginal_l2_sensitivity * sigma

    # -- hooks -----------------------------------------------------------------

    def initialise(self, state: RunState) -> list[Candidate]:
        self.weights = state.workload.candidate_weights()
        d = len(state.data.sizes)
        T = self.T or 16 * d
        if T < d:
            raise ConfigError(
                f"AIM's budget scale T={T} is smaller than the number of columns ({d}): the "
                f"1-way initialisation alone would cost {d}/{T} x 90% of the budget.",
                hint=f"Use rounds >= {d} (the paper's default is 16 x {d} = {16 * d}).")
        rho = state.ledger.total
        # sigma is in units of the L2 sensitivity: std 1 x sigma costs 1 / (2 sigma^2)
        self.sigma = privacy.gaussian_std(AIM_MEASURE_SHARE * rho / T, 1.0)
        self.eps = privacy.exponential_eps((1 - AIM_MEASURE_SHARE) * rho / T)
        oneway = [cl for cl in self.weights if len(cl) == 1]
        return [Candidate(cl, PRIVATE) for cl in oneway]

    def initial_noise(self, state: RunState) -> tuple[float, float]:
        std = self._std(state, self.sigma)
        return std, std

    def plan(self, state: RunState) -> RoundPlan | None:
        if self.done:
            return None
        ledger = state.ledger
        final = False
        remaining = ledger.total - ledger.spent
        if remaining < 2 * (privacy.gaussian_rho(self.sigma, 1.0) + privacy.exponential_rho(self.eps)):
            self.sigma = privacy.gaussian_std(AIM_MEASURE_SHARE * remaining, 1.0)
            self.eps = privacy.exponential_eps((1 - AIM_MEASURE_SHARE) * remaining)
            final = True
            self.done = True
        rho_measure = privacy.gaussian_rho(self.sigma, 1.0)
        rho_round = rho_measure + privacy.exponential_rho(self.eps)
        sens = max(self.weights.values()) * (2.0 if state.neighbours.n_is_public else 1.0)
        std = self._std(state, self.sigma)
        limit = self.max_model_size * (ledger.spent + rho_round) / ledger.total
        return RoundPlan(epsilon=self.eps, sensitivity=sens, noise_std=std,
                         rho_measure=rho_measure, fit_stddev=std, final=final,
                         size_limit_mb=limit)

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        pool = [Candidate(cl, PRIVATE) for cl in self.weights]
        return size_filter(state.data.sizes, state.measured_cliques, pool, plan.size_limit_mb)

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        out = np.empty(len(candidates))
        private = state.data.private
        current = model_errors(state, candidates)
        for i, cand in enumerate(candidates):
            cl = cand.clique
            err = current[cl]
            out[i] = self.weights[cl] * (err - expected_noise_l1(plan.noise_std, private.cells(cl)))
        return out

    def after_round(self, state, plan, chosen, before, after) -> None:
        cl = chosen.clique
        moved = np.abs(after.counts(cl) - before.counts(cl)).sum()
        if moved <= expected_noise_l1(plan.noise_std, state.data.private.cells(cl)):
            self.sigma /= 2
            self.eps *= 2
