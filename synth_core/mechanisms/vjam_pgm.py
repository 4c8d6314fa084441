"""vJAM-PGM (Maddock, Gade, Cormode, Bullock 2025, "Leveraging Vertical
Public-Private Split for Improved Synthetic Data Generation", section 3.2).

JAM-PGM adapted to a *vertical* split: some columns ``P`` of the private table
are public for every record (``public_columns``), the remaining columns ``Q``
are private. Bounded DP only.

**Privacy model.** Neighbouring tables have the same ``n`` records with the
same public values and differ in the private values of one record. A
marginal on a clique ``r`` inside ``P`` is then identical on neighbours (L1
and L2 sensitivity 0: it is public). A marginal on a clique with at least one
private column moves one count from one cell to another: L1 sensitivity 2,
L2 sensitivity sqrt 2, as for any marginal under bounded DP. The release
protects the private columns only.

**Candidates.** The downward closure ``W+`` of the workload, each clique once:
*public* if it lies inside ``P`` (answered exactly with ``M_r(D_P)``, the
table's own public columns; noise 0; free), *private* otherwise (Gaussian,
charged). A public clique inside an already measured public clique is left
out: its exact answer is a function of a measurement already released, so
measuring it would spend selection budget on nothing (dropping it depends only
on earlier releases, not on the data). Candidates are filtered by JAM-PGM's
adaptive size limit ``max_size * (rho_used + rho_t) / rho``.

**Initialisation (round 0).** All 1-way marginals of ``W+``: public ones
exact and free; the ``k`` private ones with Gaussian noise, charged together
one round's share of the budget, ``rho_0 = rho / (T + 1)``: each costs
``rho_0 / k``, noise std per cell ``sqrt(2) / sqrt(2 rho_0 / k) =
sqrt(k / rho_0)``. (The paper says AIM-style: AIM measures its 1-ways with a
round's noise; with JAM's T = 30 that would cost the private 1-ways ``k``
rounds' budget, so we give them one round, as if the initialisation were an
extra round without selection. If no 1-way is private, nothing is charged
and ``rho_0`` stays in the pool.)

**Rounds 1..T** (JAM-PGM's schedule). With ``t`` rounds done after the
initialisation, ``rho_t = (rho - rho_used) / (T - t)``;
``rho_select = (1 - alpha) rho_t``, ``rho_measure = alpha rho_t``
(``alpha = 0.8``); noise std ``sqrt(2) / sqrt(2 rho_measure) = 1 /
sqrt(rho_measure)``; ``eps_t = sqrt(8 rho_select)`` (cost ``eps_t^2 / 8``).
Scores:

* public clique: ``||M_r(D_P) - M_r(p)||_1`` (the error the exact
  measurement would remove);
* private clique: ``||M_r(D) - M_r(p)||_1 - sqrt(2/pi) sigma_t n_r``.

Selection always costs ``rho_select``, even when a public clique is picked
(the exponential mechanism runs over private and public candidates jointly,
and the private scores depend on the private columns). **Frugal budgeting**:
a public pick spends only ``rho_select``; its ``rho_measure`` stays in the
pool and flows into later rounds through ``rho_t``. If the last round picks a
public clique its ``rho_measure`` is left unspent; otherwise the ledger ends
at exactly ``rho``.

**Score sensitivity 2** (JAM-PGM uses 4). The exponential mechanism needs
``Delta >= max_r |score(D, r) - score(D', r)|`` over neighbours ``D, D'``.
The model ``p`` and ``sigma_t`` are fixed by earlier releases (fully adaptive
composition), so they are constants here. A public clique's score depends
only on ``M_r(D_P)``, which is equal on neighbours: it changes by 0. A
private clique's score is ``||M_r(D) - c||_1`` minus a constant; by the
triangle inequality it changes by at most ``||M_r(D) - M_r(D')||_1 <= 2``.
So ``Delta = 2``. JAM-PGM's 4 comes from its public score, a *difference* of
two L1 errors against the private data (``||M_r(D) - M_r(p)||_1 -
||M_r(D) - M_r(D_pub) n / n_pub||_1``), each moving by up to 2; vJAM-PGM has
no such score. Using 2 is the exact sensitivity of the scores as defined, so
the selection is no less private than JAM-PGM's and better calibrated.

The model starts uniform; Private-PGM fits all measurements with equal weight
(as JAM-PGM), exact public ones included. Public rows are not used.

**Edge cases.** Without public columns every clique is private: vJAM-PGM
runs JAM-PGM's schedule with private measurements only (and warns). With
every column public nothing is protected: the workload marginals are
measured exactly, no budget is spent, and the run warns.

**Conditional vJAM-PGM** (``conditional=True``, section 3.3): the workload
becomes ``W'`` (marginals with a private column); the public cliques of
``W'+`` are not selected round by round but measured exactly at the
initialisation as *conditioning marginals*, under ``condition_max_mb``
(:mod:`synth_core.conditional`), so the pool holds private cliques only
(the score sensitivity stays 2); the size limit grows from their model size.
Records keep their public values; private values are sampled from the model
conditioned on them. The model fitted is a pattern model
(:mod:`synth_core.pattern_model`: the public columns' empirical distribution
and the private columns given each public pattern) where it is small, else the
joint Private-PGM model; the fit oracle below concerns joint models only.

**Fit oracle.** Every fit keeps the estimator's oracle rule, and the
estimator's cost model chooses between numpy and a compiled program per fit
(:func:`synth_core.model.fit_costs`). A structure compiled for a round is then
reused by the final fit (1,000 steps) with the same oracle, where rounds
compiled with Hugin left the implicit program to compile for the final fit
(docs/performance.md, "Public columns on Adult").
A conditional run with many conditioning marginals fits its rounds with Hugin
(:meth:`synth_core.conditional.ConditionalSetup.fit_oracle`); its final fit
goes back to the rule it started with.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import privacy
from ..conditional import CONDITION_MAX_MB, ConditionalSetup, check_known_columns
from ..engine import PRIVATE, PUBLIC, Candidate, RoundPlan, RunState, size_filter
from ..errors import ConfigError
from .base import (BOUNDED, CONDITIONAL_OPTIONS, MAX_MODEL_SIZE_OPTION, PUBLIC_COLUMNS_OPTION,
                   REQUIRED, AdaptiveMechanism, Capabilities, Option, ScoreTerms)
from .jam_pgm import (JAM_DEFAULT_ROUNDS, JAM_MEASURE_SHARE, jam_round_budget, jam_schedule,
                      jam_score_terms, jam_scores)

#: Sensitivity of vJAM-PGM's scores under bounded DP (see the module docstring).
VJAM_SCORE_SENSITIVITY = 2.0


class VJAMPGM(AdaptiveMechanism):
    name = "vjam-pgm"
    title = "vJAM-PGM"
    #: its vertical split is what it is for (without public columns it runs
    #: JAM-PGM's schedule privately, and warns)
    capabilities = Capabilities(public_columns=REQUIRED, conditional=True,
                                neighbours=(BOUNDED,))
    options = (PUBLIC_COLUMNS_OPTION,
               Option("rounds", int, JAM_DEFAULT_ROUNDS, "rounds T after the initialisation"),
               Option("alpha", float, JAM_MEASURE_SHARE,
                      "share of each round's budget spent on measurement"),
               MAX_MODEL_SIZE_OPTION, *CONDITIONAL_OPTIONS)

    def __init__(self, public_columns: Sequence[str] = (), rounds: int = JAM_DEFAULT_ROUNDS,
                 alpha: float = JAM_MEASURE_SHARE, max_model_size: float = 80.0,
                 conditional: bool = False, condition_max_mb: float = CONDITION_MAX_MB):
        self.T, self.alpha, self.max_model_size = jam_schedule(
            "vJAM-PGM", rounds, alpha, max_model_size)
        self.vertical = ConditionalSetup.create("vJAM-PGM", public_columns, conditional,
                                                condition_max_mb, self.max_model_size,
                                                public_without_conditional=True)
        self.public_columns = self.vertical.public_columns
        self._public = frozenset(self.public_columns)
        self.all_public = False
        self.workload = None
        self.rho_init = 0.0          # round 0's budget (spent on the private 1-ways)
        self.n_private_oneways = 0
        self._round_pool: list[Candidate] = []
        self._final_oracle = self.fit_oracle   # the oracle rule of the final fit

    # -- helpers ---------------------------------------------------------------

    def is_public(self, clique) -> bool:
        return set(clique) <= self._public

    def source_of(self, clique) -> str:
        return PUBLIC if self.is_public(clique) else PRIVATE

    def _check_columns(self, state: RunState) -> None:
        # checked here, not in the constructor, so that settings can name the
        # mechanism before the public columns are chosen (the app's pages)
        if self.vertical.active:
            return  # ConditionalSetup.prepare checks the split
        if not self.public_columns:
            self.vertical.warnings.append("vJAM-PGM ran without public columns: every marginal was "
                                 "measured privately (JAM-PGM's schedule without public data).")
            return
        check_known_columns(self.public_columns, state.data.sizes)
        if set(state.data.sizes) <= self._public:
            self.all_public = True
            self.vertical.warnings.append("Every column is marked public: nothing is protected and no "
                                 "budget was spent; the workload marginals were measured exactly.")

    # -- hooks -----------------------------------------------------------------

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    def initialise(self, state: RunState) -> list[Candidate]:
        self._check_columns(state)
        if not state.neighbours.n_is_public:
            raise ConfigError("vJAM-PGM is defined under bounded DP (n public).",
                              hint="Use --neighbours bounded, or AIM for unbounded DP.")
        self._final_oracle = state.estimator.oracle
        self.workload = self.vertical.prepare(state)
        if self.all_public:
            return [Candidate(cl, PUBLIC) for cl in self.workload.cliques]
        oneway = [cl for cl in self.workload.downward_closure() if len(cl) == 1]
        init = [Candidate(cl, self.source_of(cl)) for cl in oneway]
        if self.vertical.active:  # the conditioning marginals replace the public 1-ways
            init = self.vertical.initial_public() + [c for c in init if c.source == PRIVATE]
        self.n_private_oneways = sum(c.source == PRIVATE for c in init)
        # the initialisation is round 0 of T + 1 equal shares, without selection
        self.rho_init = state.ledger.total / (self.T + 1) if self.n_private_oneways else 0.0
        return init

    def initial_noise(self, state: RunState) -> tuple[float, float]:
        rho_each = self.rho_init / self.n_private_oneways
        return privacy.gaussian_std(rho_each, state.neighbours.marginal_l2_sensitivity), 1.0

    def _pool(self, state: RunState) -> list[Candidate]:
        covered = [set(m.clique) for m in state.measurements if m.source == PUBLIC]
        pool = []
        for cl in self.workload.downward_closure():
            if self.is_public(cl):
                if self.vertical.active:
                    continue  # measured up front, or dropped by the conditioning bound
                if not any(set(cl) <= c for c in covered):
                    pool.append(Candidate(cl, PUBLIC))
            else:
                pool.append(Candidate(cl, PRIVATE))
        return pool

    def _last_round(self, state: RunState) -> None:
        """Before the final fit: its oracle by the default rule (it is a long fit)."""
        state.estimator.oracle = self._final_oracle

    def after_round(self, state: RunState, plan: RoundPlan, chosen, before, after) -> None:
        if plan.final:
            self._last_round(state)

    def plan(self, state: RunState) -> RoundPlan | None:
        if self.all_public:
            self._last_round(state)
            return None
        budget = jam_round_budget(state, self.T, self.alpha, self.max_model_size)
        if budget is None:
            self._last_round(state)
            return None
        t, rho_select, rho_measure, std, limit = budget  # t: rounds since the initialisation
        limit = self.vertical.size_limit(self.max_model_size, limit / self.max_model_size)
        self._round_pool = size_filter(state.data.sizes, state.measured_cliques,
                                       self._pool(state), limit)
        if not self._round_pool:
            # only possible when every workload marginal lies inside the public
            # columns and all of them are measured (exactly): nothing left to do
            self._last_round(state)
            return None
        return RoundPlan(epsilon=privacy.exponential_eps(rho_select),
                         sensitivity=VJAM_SCORE_SENSITIVITY, noise_std=std,
                         rho_measure=rho_measure, fit_stddev=1.0,
                         final=(t == self.T - 1), size_limit_mb=limit)

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        return list(self._round_pool)

    def score_terms(self, state: RunState, plan: RoundPlan, candidate: Candidate) -> ScoreTerms:
        return jam_score_terms(state, plan, candidate, proxy=False)

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        return jam_scores(state, plan, candidates)   # public cliques: exact M_r(D_P)
