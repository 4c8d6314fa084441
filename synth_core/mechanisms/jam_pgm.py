"""JAM-PGM (Fuentes, Mullins, McKenna, Miklau, Sheldon 2024, Algorithm 2).

Joint candidates ``W+ x {private, public}``. A public measurement of ``r`` is
``M_r(D_pub) * n / n_pub`` and costs nothing. Round ``t`` (of ``T``) gets
``rho_t = (rho - rho_used) / (T - t)``, split ``rho_select = (1 - alpha) rho_t``
and ``rho_measure = alpha rho_t`` (``alpha = 0.8``); the noise std per cell is
``sqrt(2) / sqrt(2 rho_measure)`` (bounded DP, L2 sensitivity sqrt 2) and the
selection parameter ``eps_t = sqrt(8 rho_select)``. Scores are the current
error minus the predicted error of the measurement:
``||M_r(D) - M_r(p)||_1 - sqrt(2/pi) sigma_t n_r`` (private) and
``||M_r(D) - M_r(p)||_1 - ||M_r(D) - M_r(D_pub) n / n_pub||_1`` (public), with
sensitivity 4. Frugal budgeting: a public pick spends only ``rho_select`` and
the unspent measurement budget flows into later rounds (a public pick in the
last round leaves it unspent). Candidates are filtered by the adaptive size
limit ``max_size * rho_used / rho`` (counting the round's own budget). The
model starts uniform and fits all measurements with equal weight.

**Public rows and public columns together** (``public_columns``). Neighbours
then differ in the private values of one record (bounded DP; ``n`` and every
record's public values are public); the public rows are a separate table.
Three sources compete in one exponential mechanism:

* a clique inside the public columns has one candidate, ``public-columns``:
  its exact marginal ``M_r(D_P)`` from the table itself (free; score
  ``||M_r(D_P) - M_r(p)||_1``, which does not depend on private values).
  The exact answer beats both a proxy and a noisy measurement of the same
  marginal, so neither is offered for it; one inside an already measured
  exact clique is left out;
* a clique with a private column has JAM-PGM's two candidates: ``private``
  (Gaussian, charged, score as above) and ``public`` (the public-row proxy
  ``M_r(D_pub) n / n_pub``, free, JAM-PGM's public score).

The score sensitivity stays 4 (the proxy score; the exact scores change by
0, the private ones by at most 2). The exact public 1-way marginals are
measured at the initialisation (free, nothing to select). The budget
schedule and frugal budgeting are JAM-PGM's: an exact or proxy pick spends
only the selection budget.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import privacy
from ..conditional import CONDITION_MAX_MB, ConditionalSetup, check_known_columns
from ..engine import (PRIVATE, PUBLIC, Candidate, RoundPlan, RunState, expected_noise_l1,
                      model_errors, size_filter)
from ..errors import ConfigError
from .base import (BOUNDED, MAX_MODEL_SIZE_OPTION, OPTIONAL, PUBLIC_COLUMNS_OPTION,
                   AdaptiveMechanism, Capabilities, Option, ScoreTerms, check_budget_share,
                   require_public_rows)

#: JAM-PGM's share of each round's budget spent on measurement.
JAM_MEASURE_SHARE = 0.8
#: Sensitivity of JAM-PGM's scores under bounded DP (difference of two L1 errors).
JAM_SCORE_SENSITIVITY = 4.0
#: JAM-PGM's rounds T when the run sets none. The JAM paper tuned T per data set
#: and does not state the values (docs/experiments.md, the paper setting).
JAM_DEFAULT_ROUNDS = 30
#: Source of an exact measurement from the table's own public columns (JAM-PGM with both).
PUBLIC_COLUMNS = "public-columns"


def jam_schedule(name: str, rounds, alpha: float, max_model_size: float) -> tuple[int, float, float]:
    """Checked ``(T, alpha, max_model_size)`` of JAM-PGM's budget schedule (``None`` rounds: 30)."""
    if rounds is None:
        rounds = JAM_DEFAULT_ROUNDS
    if rounds < 1:
        raise ConfigError(f"{name} needs at least one round.")
    alpha = check_budget_share(alpha, "the measurement share")
    if not max_model_size > 0:
        raise ConfigError("max_model_size must be positive (MB).")
    return int(rounds), alpha, float(max_model_size)


def jam_round_budget(state: RunState, T: int, alpha: float, max_model_size: float):
    """JAM-PGM's schedule for the next round, or ``None`` when the rounds or budget are used up.

    Returns ``(t, rho_select, rho_measure, noise_std, size_limit_mb)`` with ``t``
    the rounds completed so far, ``rho_t = (rho - rho_used) / (T - t)`` split
    ``(1 - alpha) : alpha`` and the adaptive limit ``max_size (rho_used + rho_t) / rho``.
    """
    t = state.round
    ledger = state.ledger
    if t >= T or ledger.remaining <= 0:
        return None
    rho_t = (ledger.total - ledger.spent) / (T - t)
    rho_select = (1 - alpha) * rho_t
    rho_measure = alpha * rho_t
    std = privacy.gaussian_std(rho_measure, state.neighbours.marginal_l2_sensitivity)
    limit = max_model_size * (ledger.spent + rho_t) / ledger.total
    return t, rho_select, rho_measure, std, limit


def jam_score_terms(state: RunState, plan: RoundPlan, cand: Candidate,
                    proxy: bool) -> ScoreTerms:
    """JAM-PGM's score terms: current error minus the predicted error of the measurement.

    A private candidate: weight 1, offset ``sqrt(2/pi) sigma_t n_r``; a public-row
    proxy (source ``public`` when ``proxy``): offset its proxy error, a function
    of the private data (``None``: not released); an exact public answer (any
    other source): offset 0, measuring it removes all of the error.
    """
    if cand.source == PRIVATE:
        return ScoreTerms(1.0, expected_noise_l1(plan.noise_std,
                                                 state.data.private.cells(cand.clique)))
    if cand.source == PUBLIC and proxy:
        return ScoreTerms(1.0, None)
    return ScoreTerms(1.0, 0.0)


def jam_scores(state: RunState, plan: RoundPlan, candidates, proxy_error=None) -> np.ndarray:
    """CURATOR-ONLY: JAM-PGM's scores, current error minus predicted error
    (:func:`jam_score_terms`; a public-row proxy's offset is ``proxy_error(r)``)."""
    current = model_errors(state, candidates)
    out = np.empty(len(candidates))
    for i, cand in enumerate(candidates):
        cl = cand.clique
        terms = jam_score_terms(state, plan, cand, proxy_error is not None)
        if terms.offset is None:  # the public-row proxy's error, curator-only
            terms = ScoreTerms(terms.weight, proxy_error(cl))
        out[i] = current[cl] - terms.offset
    return out


class JAMPGM(AdaptiveMechanism):
    name = "jam-pgm"
    title = "JAM-PGM"
    capabilities = Capabilities(public_rows=True, public_columns=OPTIONAL,
                                neighbours=(BOUNDED,))
    options = (Option("rounds", int, JAM_DEFAULT_ROUNDS, "rounds T"),
               Option("alpha", float, JAM_MEASURE_SHARE,
                      "share of each round's budget spent on measurement"),
               MAX_MODEL_SIZE_OPTION, PUBLIC_COLUMNS_OPTION)

    def __init__(self, rounds: int = JAM_DEFAULT_ROUNDS, alpha: float = JAM_MEASURE_SHARE,
                 max_model_size: float = 80.0, public_columns: Sequence[str] = ()):
        self.T, self.alpha, self.max_model_size = jam_schedule(
            "JAM-PGM", rounds, alpha, max_model_size)
        self.vertical = ConditionalSetup.create("JAM-PGM", public_columns, False, CONDITION_MAX_MB,
                                                self.max_model_size,
                                                public_without_conditional=True)
        self._public_errors: dict = {}
        self._errors_of = None   # the private table ``_public_errors`` was computed on

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    def initialise(self, state: RunState) -> list[Candidate]:
        require_public_rows(state, "JAM-PGM", instead="AIM")
        if not state.neighbours.n_is_public:
            raise ConfigError("JAM-PGM is defined under bounded DP (n public).",
                              hint="Use --neighbours bounded, or AIM for unbounded DP.")
        public = self.vertical.public_columns
        if not public:
            return []
        check_known_columns(public, state.data.sizes)
        if set(state.data.sizes) <= set(public):
            raise ConfigError("Every column is marked public: JAM-PGM would select among free "
                              "exact answers at a selection cost.",
                              hint="Use vjam-pgm, which then measures them exactly and spends "
                                   "nothing, or leave a column private.")
        return [Candidate(cl, PUBLIC_COLUMNS) for cl in state.workload.downward_closure()
                if len(cl) == 1 and self.vertical.is_public(cl)]

    def public_answer(self, state: RunState, clique) -> np.ndarray:
        if self.vertical.is_public(clique):   # exact, from the table's public columns
            return self.vertical.public_answer(state, clique)
        pub = state.data.public   # its counts, rescaled to the private table's n
        return pub.marginal(clique) * (state.n / pub.n)

    def _public_error(self, state: RunState, clique) -> float:
        """CURATOR-ONLY: L1 distance between the private and the rescaled public marginal.

        Cached per private table (a score on another table, e.g. a neighbour in
        the sensitivity tests, is computed afresh)."""
        private = state.data.private
        if self._errors_of is not private:
            self._errors_of, self._public_errors = private, {}
        if clique not in self._public_errors:
            self._public_errors[clique] = float(
                np.abs(private.marginal(clique) - self.public_answer(state, clique)).sum())
        return self._public_errors[clique]

    def plan(self, state: RunState) -> RoundPlan | None:
        budget = jam_round_budget(state, self.T, self.alpha, self.max_model_size)
        if budget is None:
            return None
        t, rho_select, rho_measure, std, limit = budget
        return RoundPlan(epsilon=privacy.exponential_eps(rho_select),
                         sensitivity=JAM_SCORE_SENSITIVITY, noise_std=std,
                         rho_measure=rho_measure, fit_stddev=1.0,
                         final=(t == self.T - 1), size_limit_mb=limit)

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        closure = state.workload.downward_closure()
        exact = [set(m.clique) for m in state.measurements if m.source == PUBLIC_COLUMNS]
        pool = []
        for cl in closure:
            if self.vertical.is_public(cl):
                if not any(set(cl) <= c for c in exact):
                    pool.append(Candidate(cl, PUBLIC_COLUMNS))
            else:
                pool.extend(Candidate(cl, src) for src in (PRIVATE, PUBLIC))
        return size_filter(state.data.sizes, state.measured_cliques, pool, plan.size_limit_mb)

    def score_terms(self, state: RunState, plan: RoundPlan, candidate: Candidate) -> ScoreTerms:
        return jam_score_terms(state, plan, candidate, proxy=True)

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        return jam_scores(state, plan, candidates,
                          proxy_error=lambda cl: self._public_error(state, cl))
