"""The adaptive-measurements loop (select, measure, generate) of the Private-PGM mechanisms.

A Private-PGM mechanism is a strategy with a few hooks
(:class:`~synth_core.mechanisms.base.AdaptiveMechanism`): initial
measurements, the plan of a round (budget split, noise, stop rule), the
candidate pool, their scores, and what happens after a fit. The
:class:`Engine` owns everything else: the ledger charges, the exponential
mechanism, the Gaussian measurement, the Private-PGM fit, timing, and the
:class:`RoundEvent` stream. :class:`RunLoop` is the part every loop shares
(ledger, noise source, run state, the keyword event builder); the
query-release mechanisms run in its other subclass,
:class:`~synth_core.mechanisms.query_release.QueryReleaseLoop`.

Releasable and curator-only values are kept apart: a :class:`RoundEvent`'s
``curator`` field (candidate scores computed from the private data without
noise) is never written to a release file; :meth:`RoundEvent.to_release`
drops it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Iterator, Sequence

import numpy as np

from . import privacy
from .marginals import CodedTable
from .model import FitMeasurement, FittedModel, PGMEstimator, model_size_mb
from .privacy import Ledger, Neighbours
from .size_filter import size_filter  # noqa: F401  (the mechanisms import it from here)
from .workload import Workload

Clique = tuple[str, ...]

PRIVATE = "private"
PUBLIC = "public"


@dataclass(frozen=True)
class Candidate:
    """A marginal that may be measured, and where it would be measured."""

    clique: Clique
    source: str = PRIVATE


@dataclass(frozen=True)
class Measurement:
    """A released measurement: the clique, its source, noise and noisy answer.

    ``fit_stddev`` is how the estimator weights it (``1/fit_stddev``).
    """

    round: int
    clique: Clique
    source: str
    noise_std: float          # std of the noise added per cell (0 for public)
    values: np.ndarray
    fit_stddev: float = 1.0

    def to_fit(self) -> FitMeasurement:
        return FitMeasurement(self.clique, self.values, self.fit_stddev)

    def to_json(self, with_values: bool = True) -> dict:
        out = {"round": self.round, "clique": list(self.clique), "source": self.source,
               "noise_std": self.noise_std, "cells": int(self.values.size)}
        if with_values:
            out["noisy_answer"] = [float(v) for v in self.values]
        return out


@dataclass(frozen=True)
class CuratorScores:
    """CURATOR-ONLY: exact candidate scores computed from the private data.

    Never part of a release.
    """

    candidates: tuple[Candidate, ...]
    scores: tuple[float, ...]
    chosen: int
    #: the selection's score sensitivity (``None``: not an exponential-mechanism round)
    sensitivity: float | None = None
    #: what a private pick would have cost to measure (a public pick spends none of it)
    rho_measure_planned: float | None = None

    def to_json(self) -> dict:
        return {
            "candidates": [{"clique": list(c.clique), "source": c.source, "score": s}
                           for c, s in zip(self.candidates, self.scores)],
            "chosen": self.chosen,
        }


@dataclass(frozen=True, kw_only=True)
class RoundEvent:
    """What happened in one round (built by keyword: :meth:`RunLoop.event`).

    ``round`` 0 is the initialisation (measurements without selection).
    ``sigma`` is the std of the Gaussian noise added to each cell (``None`` for
    public measurements); ``epsilon`` the selection parameter (``None`` when
    nothing was selected). ``rho_round`` is what the round spent,
    ``rho_spent`` the running total and ``rho_total`` the budget.
    """

    mechanism: str
    round: int
    rounds_planned: int | None
    cliques: tuple[Clique, ...]
    source: str
    sigma: float | None
    epsilon: float | None
    rho_select: float
    rho_measure: float
    rho_spent: float
    rho_total: float
    model_size_mb: float
    seconds: float
    n_candidates: int = 0
    note: str = ""
    #: CURATOR-ONLY (exact scores): left out of the printed form, which a notebook
    #: saves beside its output
    curator: CuratorScores | None = field(default=None, compare=False, repr=False)
    #: the engine of the round's last model fit: ``numpy`` or ``jax`` (``""``: none yet)
    fit_path: str = field(default="", compare=False)

    @property
    def clique(self) -> Clique | None:
        return self.cliques[0] if len(self.cliques) == 1 else None

    @property
    def rho_round(self) -> float:
        return self.rho_select + self.rho_measure

    def to_release(self) -> dict:
        """The releasable part of the event: without the curator's scores, and without
        ``seconds`` (a round's time grows with the private table's size, which is not
        public under unbounded DP, and with its fit's work; timings stay in the live
        events and the curator's files)."""
        out = asdict(self)
        out.pop("curator")
        out.pop("seconds")
        out["cliques"] = [list(c) for c in self.cliques]
        return out

    def describe(self) -> str:
        what = ", ".join("×".join(c) for c in self.cliques) if self.cliques else "-"
        parts = [f"round {self.round:>3}", f"{self.source:<7}", what]
        if self.sigma is not None:
            parts.append(f"sigma={self.sigma:.4g}")
        if self.epsilon is not None:
            parts.append(f"select eps={self.epsilon:.4g}")   # one selection; rounds add up in rho
        parts.append(f"rho {self.rho_spent:.4g}/{self.rho_total:.4g}")
        parts.append(f"model {self.model_size_mb:.3g} MB")
        parts.append(f"{self.seconds:.2f}s")
        if self.note:
            parts.append(self.note)
        return "  ".join(parts)


@dataclass
class PreparedData:
    """Integer-coded private data and, optionally, public rows over the same schema."""

    private: CodedTable
    public: CodedTable | None = None

    @property
    def sizes(self) -> dict[str, int]:
        return self.private.size_of

    @property
    def n(self) -> int:
        return self.private.n


@dataclass
class RoundPlan:
    """A mechanism's budget decisions for one round."""

    epsilon: float                 # exponential-mechanism parameter
    sensitivity: float             # score sensitivity
    noise_std: float               # Gaussian std per cell if a private marginal is measured
    rho_measure: float             # what that measurement costs
    fit_stddev: float = 1.0        # estimator weight of the measurement (1/fit_stddev)
    final: bool = False
    size_limit_mb: float = float("inf")
    #: False: the round only selects (its marginal is measured inside a later one)
    measure: bool = True


@dataclass
class RunState:
    """Everything a mechanism's hooks may read."""

    data: PreparedData
    workload: Workload
    ledger: Ledger
    neighbours: Neighbours
    rng: np.random.Generator
    estimator: PGMEstimator
    model: FittedModel
    measurements: list[Measurement] = field(default_factory=list)
    round: int = 0
    #: where measurement and selection noise comes from (research or release mode)
    noise: privacy.NoiseSource | None = None

    @property
    def n(self) -> int:
        return self.data.n

    @property
    def total(self) -> float:
        """The model's total: n under bounded DP, estimated under unbounded DP."""
        if self.neighbours.n_is_public:
            return float(self.data.n)
        if not self.measurements:
            return 1.0
        return self.estimator.estimate_total([m.to_fit() for m in self.measurements])

    @property
    def measured_cliques(self) -> list[Clique]:
        return [m.clique for m in self.measurements]


#: Per-round fit iterations of a mechanism that sets none of its own: enough for
#: mechanisms whose rounds do not test how far a fit moved (JAM-PGM, vJAM-PGM,
#: MWEM+PGM), and ten times cheaper than AIM's 1,000.
DEFAULT_FIT_ITERS = 100


#: candidate cliques whose model marginals exist at once while scoring (a round's
#: answers on a wide table are hundreds of MB; freed chunk by chunk, they are never all held)
SCORE_CHUNK = 64


def model_errors(state: "RunState", candidates: Sequence[Candidate]) -> dict[Clique, float]:
    """CURATOR-ONLY: ``||M_r(D) - M_r(p)||_1`` of each candidate clique (exact, from private data)."""
    private = state.data.private
    cliques = list(dict.fromkeys(c.clique for c in candidates))
    out = {}
    for i in range(0, len(cliques), SCORE_CHUNK):
        answers = state.model.counts_many(cliques[i:i + SCORE_CHUNK])
        out.update({cl: float(np.abs(private.marginal(cl) - ans).sum())
                    for cl, ans in answers.items()})
    return out


def expected_noise_l1(noise_std: float, cells: int) -> float:
    """Expected L1 norm of Gaussian noise with std ``noise_std`` on ``cells`` cells."""
    return float(np.sqrt(2.0 / np.pi) * noise_std * cells)


class RunLoop:
    """What every run shares, whichever loop drives it: the mechanism, the data,
    one :class:`~synth_core.privacy.Ledger`, the run's generator and noise
    source, the :class:`RunState` the mechanism reads, and the event builder.

    :class:`Engine` (Private-PGM mechanisms) and
    :class:`~synth_core.mechanisms.query_release.QueryReleaseLoop`
    (query-release mechanisms) are its two loops; the API reads ``ledger``,
    ``state``, ``events``, ``model``, ``noise``, ``last_selection`` and
    ``rounds()`` of either.
    """

    def __init__(self, mechanism, data: PreparedData, workload: Workload, *, rho: float,
                 neighbours: Neighbours, seed: int | None, estimator: PGMEstimator,
                 mode: str = "research", noise: privacy.NoiseSource | None = None):
        self.mechanism = mechanism
        self.data = data
        self.workload = workload
        self.neighbours = neighbours
        self.ledger = Ledger(rho)
        self.rng = np.random.default_rng(seed)
        # research: noise from self.rng; release: OpenDP (self.rng then only samples records);
        # ``noise`` replaces the mode's source (tests wrap one to record every draw)
        self.noise = privacy.noise_source(mode, self.rng) if noise is None else noise
        self.estimator = estimator
        total = float(data.n) if neighbours.n_is_public else 1.0
        self.state = RunState(data, workload, self.ledger, neighbours, self.rng, estimator,
                              estimator.uniform(total), noise=self.noise)
        self.events: list[RoundEvent] = []
        self.model: FittedModel | None = None
        #: (round, plan, pool, chosen, model before the measurement) of the last selection
        #: of a Private-PGM run; synth_core.uncertainty releases what of it the section-5
        #: bounds need (``None``: no marginal was selected)
        self.last_selection = None

    def event(self, *, round: int, cliques: Sequence[Sequence[str]], source: str, started: float,
              model_size_mb: float, sigma: float | None = None, epsilon: float | None = None,
              rho_select: float = 0.0, rho_measure: float = 0.0, n_candidates: int = 0,
              note: str = "", curator: CuratorScores | None = None) -> RoundEvent:
        """Record and return the :class:`RoundEvent` of a round that has just measured.

        The loop fills in what it owns: the mechanism's name and planned rounds,
        the ledger's running total and budget, and the seconds since ``started``.
        """
        ev = RoundEvent(mechanism=self.mechanism.name, round=round,
                        rounds_planned=self.mechanism.rounds_planned(self.state),
                        cliques=tuple(tuple(c) for c in cliques), source=source, sigma=sigma,
                        epsilon=epsilon, rho_select=rho_select, rho_measure=rho_measure,
                        rho_spent=self.ledger.spent, rho_total=self.ledger.total,
                        model_size_mb=model_size_mb, seconds=time.perf_counter() - started,
                        n_candidates=n_candidates, note=note, curator=curator,
                        fit_path=getattr(self.estimator, "last_path", None) or "")
        self.events.append(ev)
        return ev

    def rounds(self) -> Iterator[RoundEvent]:
        raise NotImplementedError


class Engine(RunLoop):
    """Runs one Private-PGM mechanism (:class:`~synth_core.mechanisms.base.AdaptiveMechanism`)
    on prepared data and yields a :class:`RoundEvent` per round."""

    def __init__(self, mechanism, data: PreparedData, workload: Workload,
                 *, rho: float, neighbours: Neighbours, seed: int | None,
                 fit_iters: int | None = None, final_fit_iters: int = 1000,
                 fit_tol: float = 1e-4,
                 final_fit_tol: float = 1e-7, mode: str = "research",
                 noise: privacy.NoiseSource | None = None):
        fit_iters = mechanism.fit_iters if fit_iters is None else int(fit_iters)
        estimator = PGMEstimator(data.sizes, max_iters=fit_iters, tol=fit_tol,
                                 oracle=mechanism.fit_oracle)
        super().__init__(mechanism, data, workload, rho=rho, neighbours=neighbours, seed=seed,
                         estimator=estimator, mode=mode, noise=noise)
        self.final_fit_iters = final_fit_iters
        self.final_fit_tol = final_fit_tol
        self._needs_fit = False

    # -- steps -----------------------------------------------------------------

    def _refit(self, max_iters: int | None = None, tol: float | None = None) -> None:
        st = self.state
        before = st.model
        self.estimator = st.estimator  # a mechanism may replace it (conditional models)
        st.model = self.estimator.fit([m.to_fit() for m in st.measurements], st.total,
                                      warm=before, max_iters=max_iters, tol=tol)
        self._needs_fit = False

    def _measure(self, cand: Candidate, round_: int, noise_std: float, fit_std: float,
                 rho_measure: float) -> Measurement:
        st = self.state
        if cand.source == PRIVATE:
            self.ledger.charge(rho_measure, round=round_, step="measure", mechanism="gaussian",
                               detail="×".join(cand.clique))
            exact = st.data.private.marginal(cand.clique)
            values = self.noise.measure(exact, noise_std)
            m = Measurement(round_, cand.clique, PRIVATE, noise_std, values, fit_std)
        else:
            values = self.mechanism.public_answer(st, cand.clique)
            m = Measurement(round_, cand.clique, cand.source, 0.0, values, fit_std)
        st.measurements.append(m)
        self._needs_fit = True
        return m

    def _model_size_mb(self) -> float:
        return model_size_mb(self.data.sizes, self.state.measured_cliques)

    # -- the loop ----------------------------------------------------------------

    def rounds(self) -> Iterator[RoundEvent]:
        """Run the mechanism, yielding an event as soon as each round has measured."""
        mech, st = self.mechanism, self.state
        started = time.perf_counter()
        init = mech.initialise(st)
        if init:
            rho0 = 0.0
            sources = {c.source for c in init}
            noise_std, fit_std = mech.initial_noise(st) if PRIVATE in sources else (0.0, 1.0)
            rho_each = privacy.gaussian_rho(noise_std, self.neighbours.marginal_l2_sensitivity) \
                if PRIVATE in sources else 0.0
            for cand in init:
                self._measure(cand, 0, noise_std, fit_std, rho_each)
                rho0 += rho_each if cand.source == PRIVATE else 0.0
            yield self.event(round=0, cliques=[c.clique for c in init],
                             source="+".join(sorted(sources)),
                             sigma=noise_std if PRIVATE in sources else None, rho_measure=rho0,
                             started=started, model_size_mb=self._model_size_mb(),
                             note="initialisation")
        pending = None  # (plan, chosen, model before the measurement) awaiting the refit
        while True:
            # a round's seconds include the refit after the previous measurement
            started = time.perf_counter()
            if self._needs_fit:
                self._refit()
            if pending is not None:
                plan, chosen, before = pending
                mech.after_round(st, plan, chosen, before, st.model)
                pending = None
                if plan.final:
                    break
            plan = mech.plan(st)
            if plan is None:
                break
            st.round += 1
            pool = mech.candidates(st, plan)
            scores = np.asarray(mech.scores(st, plan, pool), dtype=float)
            rho_select = privacy.exponential_rho(plan.epsilon)
            self.ledger.charge(rho_select, round=st.round, step="select", mechanism="exponential",
                               detail=f"{len(pool)} candidates")
            idx = self.noise.select(scores, plan.epsilon, plan.sensitivity)
            chosen = pool[idx]
            before = st.model
            m = self._measure(chosen, st.round, plan.noise_std, plan.fit_stddev,
                              plan.rho_measure) if plan.measure else None
            self.last_selection = (st.round, plan, tuple(pool), chosen, before)
            private = m is not None and chosen.source == PRIVATE
            rho_meas = plan.rho_measure if private else 0.0
            curator = CuratorScores(tuple(pool), tuple(float(s) for s in scores), idx,
                                    plan.sensitivity, plan.rho_measure if plan.measure else 0.0)
            yield self.event(round=st.round, cliques=[chosen.clique], source=chosen.source,
                             sigma=m.noise_std if private else None,
                             epsilon=plan.epsilon, rho_select=rho_select, rho_measure=rho_meas,
                             started=started, model_size_mb=self._model_size_mb(),
                             n_candidates=len(pool), curator=curator,
                             note="" if m is not None else "selected only (inside a later round's)")
            pending = (plan, chosen, before)
        self._refit(self.final_fit_iters, self.final_fit_tol)
        self.model = st.model
