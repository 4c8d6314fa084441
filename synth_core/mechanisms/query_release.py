"""Shared parts of the query-release mechanisms (PMW-Pub, GEM, GEM-Pub).

These mechanisms select and measure single *counting queries* (one cell of a
workload marginal, as a fraction of ``n``) and do not fit a Private-PGM
model, so :class:`~synth_core.engine.Engine` cannot host them: its loop
always selects a whole marginal with the exponential mechanism, measures the
full count vector and refits Private-PGM. Their protocol is
:class:`QueryReleaseMechanism` (``run`` every round, ``sample`` the records)
and their loop :class:`QueryReleaseLoop`, the engine's sibling: the same
:class:`~synth_core.engine.RunLoop` (one :class:`~synth_core.privacy.Ledger`,
the run's noise source, the :class:`~synth_core.engine.RunState`, the keyword
:class:`~synth_core.engine.RoundEvent` builder), but the mechanism's own
rounds in place of the PGM loop. A mechanism declares this with
``Capabilities(releases=QUERY_ANSWERS)``.

Units in events and measurements are counts, like the other mechanisms: a
counting query answered as a fraction ``a`` of ``n`` is reported as ``n a``
and noise of std ``s`` on the fraction as ``n s`` per cell.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from ..engine import (PRIVATE, Candidate, CuratorScores, Measurement, PreparedData, RoundEvent,
                      RunLoop, RunState)
from ..errors import ConfigError
from ..marginals import CodedTable
from ..model import PGMEstimator
from .. import privacy
from ..privacy import Ledger, Neighbours
from ..workload import Workload
from .base import BOUNDED, QUERY_ANSWERS, Capabilities, Mechanism, require_public_rows

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


class SupportAnswers:
    """The counting queries' answers under a weighted distribution on a support.

    Support row ``x`` falls in exactly one cell of each of the ``C`` workload
    marginals, so a distribution ``A`` on ``S`` support rows gives a non-zero
    answer to at most ``S C`` of the ``Q`` queries (the *touched* ones):
    ``q(A) = sum_{x : x in q} A(x)``, per marginal a bincount of the weights
    over the marginal's touched cells. Every other query's answer is exactly 0.
    The structure holds ``C S`` 32-bit positions and at most ``S C`` touched
    queries with their answers, never ``O(Q)`` or the full domain.

    Each touched query sums its rows in support order, as a per-marginal
    ``np.bincount`` over the whole marginal does, so the answers are
    bit-identical to the dense ones.
    """

    def __init__(self, queries: CountingQueries, support: np.ndarray, columns: Sequence[str]):
        self.queries = queries
        self.rows = len(support)
        index = {c: j for j, c in enumerate(columns)}
        #: (C, S): each support row's position among its marginal's touched cells
        self.local = np.empty((len(queries.cliques), self.rows), dtype=np.int32)
        touched = []
        for i, cl in enumerate(queries.cliques):
            cell = np.zeros(self.rows, dtype=np.int64)
            for c in cl:
                cell = cell * queries.sizes[c] + support[:, index[c]]
            cells, self.local[i] = np.unique(cell, return_inverse=True)
            touched.append(cells + queries.offsets[i])
        #: sorted global indices of the touched queries; marginal i's are touched[starts[i]:starts[i+1]]
        self.touched = np.concatenate(touched) if touched else np.zeros(0, dtype=np.int64)
        self.starts = np.concatenate([[0], np.cumsum([len(t) for t in touched])]).astype(np.int64)
        self._out = np.empty(len(self.touched))

    @property
    def nbytes(self) -> int:
        """Bytes held by the structure (grows with support x marginals only)."""
        return self.local.nbytes + self.touched.nbytes + self.starts.nbytes + self._out.nbytes

    def touched_answers(self, weights: np.ndarray) -> np.ndarray:
        """``q(A)`` for each query in ``touched`` (the others are 0), in a buffer
        that the next call overwrites."""
        for i, lo, hi in zip(range(len(self.local)), self.starts[:-1], self.starts[1:]):
            self._out[lo:hi] = np.bincount(self.local[i], weights=weights, minlength=int(hi - lo))
        return self._out

    def _position(self, q: int) -> int:
        """Index of query ``q`` in ``touched``, or -1 when untouched."""
        j = int(np.searchsorted(self.touched, q))
        return j if j < len(self.touched) and self.touched[j] == q else -1

    def answer(self, touched_answers: np.ndarray, q: int) -> float:
        """Query ``q``'s answer from :meth:`touched_answers` (0 when untouched)."""
        j = self._position(q)
        return float(touched_answers[j]) if j >= 0 else 0.0

    def rows_in(self, q: int) -> np.ndarray:
        """The support rows that fall in query ``q``'s cell."""
        j = self._position(q)
        if j < 0:
            return np.zeros(0, dtype=np.int64)
        i = self.queries.clique_index(q)
        return np.flatnonzero(self.local[i] == j - self.starts[i])

    def dense(self, weights: np.ndarray) -> np.ndarray:
        """All ``Q`` answers as one dense vector (reference and tests; O(Q) memory)."""
        out = np.zeros(self.queries.total)
        out[self.touched] = self.touched_answers(weights)
        return out


class ScoreBuffer:
    """The selection scores ``|q(A) - q(D)|`` of every counting query, kept in one
    preallocated vector and updated in place where ``q(A)`` can be non-zero.

    An untouched query has ``q(A) = 0``, so its score is ``|0 - q(D)| = q(D)``,
    fixed for the whole run; only the touched ones change from round to round.
    ``selectable`` (optional) marks the queries selection may pick: the others
    hold ``-inf`` in :attr:`selection` (never chosen), while :attr:`scores`
    keeps every score (for the curator's per-marginal best).
    """

    def __init__(self, true: np.ndarray, touched: np.ndarray, selectable: np.ndarray | None):
        self.true = true
        self.touched = touched
        self.true_touched = true[touched]
        self.scores = np.abs(true)
        self._diff = np.empty(len(touched))
        if selectable is None:
            self.selection, self._keep = self.scores, None
        else:
            self.selection = np.where(selectable, self.scores, -np.inf)
            self._keep = selectable[touched]
            self._touched_selectable = touched[self._keep]

    def update(self, touched_answers: np.ndarray) -> None:
        """Scores for the answers of the touched queries (the others stay)."""
        np.subtract(touched_answers, self.true_touched, out=self._diff)
        np.abs(self._diff, out=self._diff)
        self.scores[self.touched] = self._diff
        if self._keep is not None:
            self.selection[self._touched_selectable] = self._diff[self._keep]


class QueryReleaseMechanism(Mechanism):
    """A mechanism that measures single counting queries in its own rounds
    (:class:`QueryReleaseLoop`) and samples its records itself (no PGM model).

    Bounded DP only: its queries are fractions of the public ``n``.
    """

    capabilities = Capabilities(neighbours=(BOUNDED,), releases=QUERY_ANSWERS)

    @abstractmethod
    def run(self, loop: "QueryReleaseLoop") -> Iterator[RoundEvent]:
        """Run every round, charging ``loop.ledger``, yielding one event per round
        (built with ``loop.event``)."""

    @abstractmethod
    def sample(self, loop: RunLoop, rows: int, rng: np.random.Generator,
               public_codes: Callable[[Sequence[str]], pd.DataFrame]) -> pd.DataFrame:
        """Synthetic records (integer codes) from the mechanism's own output."""

    # shared checks
    def _require_bounded(self, state: RunState) -> None:
        if not state.neighbours.n_is_public:
            raise ConfigError(
                f"{self.name} is defined under bounded DP (n public): its counting queries are "
                f"fractions of n with sensitivity 1/n.",
                hint="Use --neighbours bounded, or AIM / MWEM+PGM for unbounded DP.")

    def _require_public(self, state: RunState) -> None:
        require_public_rows(state, self.title)


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


class QueryReleaseLoop(RunLoop):
    """The loop of a :class:`QueryReleaseMechanism`: the engine's
    :class:`~synth_core.engine.RunLoop` (ledger, noise source, run state, event
    builder) running the mechanism's own rounds.

    ``model`` stays the uniform placeholder (with total ``n``): these mechanisms
    sample their synthetic records themselves (``sample``). The Private-PGM
    options of the Engine (``fit_iters``, ...) are accepted and unused.
    """

    def __init__(self, mechanism: QueryReleaseMechanism, data: PreparedData, workload: Workload,
                 *, rho: float, neighbours: Neighbours, seed: int | None,
                 mode: str = "research", noise: privacy.NoiseSource | None = None,
                 **_pgm_options):
        super().__init__(mechanism, data, workload, rho=rho, neighbours=neighbours, seed=seed,
                         estimator=PGMEstimator(data.sizes), mode=mode, noise=noise)
        self.seed = seed

    def rounds(self) -> Iterator[RoundEvent]:
        yield from self.mechanism.run(self)
        self.model = self.state.model
