"""Shared parts of the query-release mechanisms (PMW-Pub, GEM, GEM-Pub).

These mechanisms select and measure single *counting queries* (one cell of a
workload marginal, as a fraction of ``n``) and do not fit a Private-PGM
model, so :class:`~synth_core.engine.Engine` cannot host them without
changes: its loop always selects a whole marginal with the exponential
mechanism, measures the full count vector and refits Private-PGM.
:class:`DirectLoop` is their engine: the same constructor, the same
:class:`~synth_core.privacy.Ledger`, the same privacy functions, the same
:class:`~synth_core.engine.RunState` and :class:`~synth_core.engine.RoundEvent`
stream, but each mechanism's own round (``run``) in place of the PGM loop.

Units in events and measurements are counts, like the other mechanisms: a
counting query answered as a fraction ``a`` of ``n`` is reported as ``n a``
and noise of std ``s`` on the fraction as ``n s`` per cell.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from ..engine import (PRIVATE, AdaptiveMechanism, Candidate, CuratorScores, Measurement,
                      PreparedData, RoundEvent, RunState)
from ..errors import ConfigError
from ..marginals import CodedTable
from ..model import PGMEstimator
from .. import privacy
from ..privacy import Ledger, Neighbours
from ..workload import Workload

Clique = tuple[str, ...]


@dataclass(frozen=True)
class QueryMeasurement(Measurement):
    """A released measurement of one counting query: the cell of ``clique``.

    ``values`` holds one number, the clipped noisy answer in counts
    (``n`` times the clipped fraction); ``noise_std`` is in counts too.
    """

    cell: tuple[int, ...] = ()

    def to_json(self, with_values: bool = True) -> dict:
        out = super().to_json(with_values)
        out["cells"] = 1
        out["query"] = "count of one cell"
        out["cell"] = [int(v) for v in self.cell]
        return out


class CountingQueries:
    """All cells of the workload marginals, as one flat list of counting queries.

    Query ``q`` is cell ``q - offsets[i]`` (C order) of clique ``i``.
    """

    def __init__(self, workload: Workload, sizes: dict[str, int]):
        self.cliques: list[Clique] = list(workload.cliques)
        self.sizes = dict(sizes)
        self.shapes = [tuple(self.sizes[c] for c in cl) for cl in self.cliques]
        cells = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(cells)]).astype(np.int64)

    @property
    def total(self) -> int:
        return int(self.offsets[-1])

    def clique_index(self, q: int) -> int:
        return int(np.searchsorted(self.offsets, q, side="right") - 1)

    def locate(self, q: int) -> tuple[int, tuple[int, ...]]:
        """(clique index, cell codes) of query ``q``."""
        i = self.clique_index(q)
        cell = np.unravel_index(int(q - self.offsets[i]), self.shapes[i])
        return i, tuple(int(v) for v in cell)

    def describe(self, q: int) -> str:
        i, cell = self.locate(q)
        return ", ".join(f"{c}={v}" for c, v in zip(self.cliques[i], cell))

    def answers(self, table: CodedTable) -> np.ndarray:
        """Exact answers (fractions of the table's rows) of every query."""
        n = max(table.n, 1)
        return np.concatenate([table.marginal(cl) / n for cl in self.cliques])

    def per_clique_max(self, values: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(values, self.offsets[:-1])

    def curator(self, scores: np.ndarray, chosen_query: int) -> CuratorScores:
        """CURATOR-ONLY: the best score of each workload marginal, and the chosen one."""
        best = self.per_clique_max(scores)
        return CuratorScores(tuple(Candidate(cl, PRIVATE) for cl in self.cliques),
                             tuple(float(s) for s in best), self.clique_index(chosen_query))


class SelfRunningMechanism(AdaptiveMechanism):
    """A mechanism that runs its own rounds in :class:`DirectLoop` (no PGM model)."""

    #: :func:`synth_core.api` runs it with :class:`DirectLoop` instead of the Engine
    own_loop = True
    #: how the report names its selection step
    selection = "exponential mechanism (Gumbel-max)"

    @abstractmethod
    def run(self, loop: "DirectLoop") -> Iterator[RoundEvent]:
        """Run every round, charging ``loop.ledger``, yielding one event per round."""

    @abstractmethod
    def direct_sample(self, state: RunState, rows: int, rng: np.random.Generator):
        """Synthetic records (integer codes) from the mechanism's own output."""

    # the Engine's per-round hooks do not apply
    def plan(self, state):
        raise NotImplementedError(f"{self.name} runs its own loop (DirectLoop)")

    def candidates(self, state, plan):
        raise NotImplementedError(f"{self.name} runs its own loop (DirectLoop)")

    def scores(self, state, plan, candidates):
        raise NotImplementedError(f"{self.name} runs its own loop (DirectLoop)")

    # shared checks
    def _require_bounded(self, state: RunState) -> None:
        if not state.neighbours.n_is_public:
            raise ConfigError(
                f"{self.name} is defined under bounded DP (n public): its counting queries are "
                f"fractions of n with sensitivity 1/n.",
                hint="Use --neighbours bounded, or AIM / MWEM+PGM for unbounded DP.")

    def _require_public(self, state: RunState) -> None:
        if state.data.public is None or state.data.public.n == 0:
            raise ConfigError(f"{self.name} needs public rows.",
                              hint="Give a public table (--public) or a flag column (--public-flag).")


def closing_charge(ledger: Ledger, rho: float, last: bool) -> float:
    """The rho to charge for a step: ``rho``, except that the run's very last step
    spends exactly what is left when that differs from ``rho`` only by
    floating-point rounding (so the ledger ends at its total, never above)."""
    if last:
        left = ledger.total - ledger.spent
        if abs(left - rho) <= 1e-9 * ledger.total:
            return max(left, 0.0)
    return rho


def measure_counting_query(state: RunState, queries: "CountingQueries", q: int, true: np.ndarray,
                           sigma: float, sensitivity: float, rng: np.random.Generator,
                           round_: int, last: bool) -> tuple[int, float, float]:
    """Gaussian measurement of counting query ``q`` (a fraction), charged and recorded.

    Charges ``gaussian_rho(sigma, sensitivity)`` (the run's last step closes
    the ledger exactly), clips the noisy fraction to [0, 1], appends the
    released measurement (in counts) to ``state.measurements`` and returns
    ``(index of the query's clique, clipped fraction, rho charged)``.

    The noise comes from ``state.noise`` (``rng`` when the state has none):
    in research mode continuous Gaussian on the fraction; in release mode the
    query as an integer count (sensitivity 1) plus discrete Gaussian noise of
    std ``n sigma``, scaled back. Either way the cost is
    ``(1/n)^2 / (2 sigma^2) = 1 / (2 (n sigma)^2)``.
    """
    i, cell = queries.locate(q)
    ledger = state.ledger
    rho = closing_charge(ledger, privacy.gaussian_rho(sigma, sensitivity), last)
    ledger.charge(rho, round=round_, step="measure", mechanism="gaussian",
                  detail=f"{'×'.join(queries.cliques[i])}[{queries.describe(q)}]")
    n = state.n
    noise = state.noise if state.noise is not None else privacy.ResearchNoise(rng)
    a, released = noise.noisy_fraction(true[q], n, sigma)
    state.measurements.append(QueryMeasurement(
        round_, queries.cliques[i], PRIVATE, n * sigma, np.array([released]), 1.0, cell))
    return i, a, rho


def check_no_public_columns(name: str, public_columns: Sequence[str], variant: str) -> None:
    if public_columns:
        raise ConfigError(f"{name} does not use public columns; its public-columns variant is "
                          f"{variant} (--mechanism {variant.lower()}).",
                          hint="Run it with public rows only, or choose the variant for public "
                               "columns.")


class DirectLoop:
    """Engine-compatible runner for :class:`SelfRunningMechanism` (same attributes as
    :class:`~synth_core.engine.Engine` that the API reads: ``ledger``, ``state``,
    ``events``, ``model``, ``estimator``, ``rounds()``).

    ``model`` stays the uniform placeholder (with total ``n``): these mechanisms
    sample their synthetic records themselves (``direct_sample``).
    """

    def __init__(self, mechanism: SelfRunningMechanism, data: PreparedData, workload: Workload,
                 *, rho: float, neighbours: Neighbours, seed: int | None,
                 mode: str = "research", noise: privacy.NoiseSource | None = None,
                 **_pgm_options):
        self.mechanism = mechanism
        self.data = data
        self.workload = workload
        self.neighbours = neighbours
        self.ledger = Ledger(rho)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        # as the Engine's (``noise`` replaces the mode's source)
        self.noise = privacy.noise_source(mode, self.rng) if noise is None else noise
        self.estimator = PGMEstimator(data.sizes)
        total = float(data.n)
        self.state = RunState(data, workload, self.ledger, neighbours, self.rng, self.estimator,
                              self.estimator.uniform(total), noise=self.noise)
        self.events: list[RoundEvent] = []
        self.model = None

    def event(self, round_: int, cliques, source: str, sigma, eps, rho_select: float,
              rho_measure: float, started: float, size_mb: float, n_candidates: int = 0,
              note: str = "", curator: CuratorScores | None = None) -> RoundEvent:
        ev = RoundEvent(self.mechanism.name, round_, self.mechanism.rounds_planned(self.state),
                        tuple(tuple(c) for c in cliques), source, sigma, eps, rho_select,
                        rho_measure, self.ledger.spent, self.ledger.total, size_mb,
                        time.perf_counter() - started, n_candidates, note, curator)
        self.events.append(ev)
        return ev

    def rounds(self) -> Iterator[RoundEvent]:
        yield from self.mechanism.run(self)
        self.model = self.state.model
