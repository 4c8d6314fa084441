"""PMW-Pub (Liu, Vietri, Steinke, Ullman, Wu 2021, "Leveraging Public Data for
Practical Private Query Release", Algorithm 1).

A distribution ``A`` over the *support* of the public data (its distinct
records), initialised to the public empirical distribution. Queries are the
counting queries of the workload marginals (every cell), answered as
fractions: ``q(D) = M_r(D)[cell] / n``. Bounded DP, so each has sensitivity
``1/n``. With ``rho = eps_tilde^2 / 2`` and ``eps0 = eps_tilde / sqrt(2T)``
(i.e. ``eps0 = sqrt(rho / T)``), each of the ``T`` rounds

1. selects ``q_t`` by permute-and-flip with parameter ``eps0`` on the score
   ``|q(A_{t-1}) - q(D)|`` (sensitivity ``1/n``); charged ``eps0^2 / 2``;
2. measures ``a_t = q_t(D) + N(0, (1 / (n eps0))^2)``, clipped to [0, 1];
   charged ``(1/n)^2 / (2 (1/(n eps0))^2) = eps0^2 / 2``;
3. updates ``A_t(x) ∝ A_{t-1}(x) exp(q_t(x) (a_t - q_t(A_{t-1})) / 2)``.

Per round ``eps0^2 = rho / T``; in total exactly ``rho``. This is our reading of
the paper's ``eps0 = eps_tilde / sqrt(2T)``: the two ``eps0``-DP steps per round
make ``2T`` pure-DP steps, each ``eps0^2 / 2``-zCDP, and ``2T eps0^2 / 2 =
eps_tilde^2 / 2 = rho``. The authors' code (dp-query-release, ``alpha = 0.5``)
spends the same: selection at ``alpha eps0'`` and measurement at
``(1 - alpha) eps0'`` with ``eps0' = 2 sqrt(rho / T)``.

The output is the average ``(1/T) sum_{t=1..T} A_t``; the synthetic records are
``n`` draws from the public support weighted by it. Weakness, on purpose
visible: no record outside the public support can ever appear.

Cost of a round. A support record falls in one cell of each workload marginal,
so ``q(A)`` is non-zero for at most ``S C`` queries (``S`` support records,
``C`` marginals): the answers are one bincount of the weights over those
(:class:`~synth_core.mechanisms.query_release.SupportAnswers`), the scores are
rewritten in place only there (:class:`~synth_core.mechanisms.query_release.ScoreBuffer`;
every other query scores ``q(D)`` all run long) and the update touches the
support records in the chosen cell. What remains proportional to the number
``Q`` of counting queries is the selection itself (one exponential draw per
query).

``T`` defaults to 500, the authors' reproduction script for PMW-Pub
(``nhist_mw/run_pub_acs_PA.sh``). Permute-and-flip is sampled as
report-noisy-max with exponential noise (the same distribution, one vectorised
pass over millions of queries).
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import pandas as pd

from .. import privacy
from ..engine import PRIVATE, PUBLIC, RunState
from ..errors import ConfigError
from .base import (BOUNDED, PUBLIC_COLUMNS_OPTION, QUERY_ANSWERS, REQUIRED, Capabilities,
                   Option)
from .query_release import (CountingQueries, QueryReleaseLoop, QueryReleaseMechanism,
                            ScoreBuffer, SupportAnswers, measure_counting_query)
from .vertical import check_public_split, parse_public_columns

#: The number of rounds of the authors' PMW-Pub reproduction script.
PMW_PUB_DEFAULT_ROUNDS = 500


#: the options PMW-Pub and vPMW share
_ROUNDS = Option("rounds", int, None, f"rounds T (default {PMW_PUB_DEFAULT_ROUNDS})")
_UNUSED_SIZE = Option("max_model_size", float, None,
                      "accepted (the API passes it to every mechanism) and unused: no PGM model")


class PMWPub(QueryReleaseMechanism):
    name = "pmw-pub"
    title = "PMW-Pub"
    capabilities = Capabilities(public_rows=True, public_columns_variant="vPMW (--mechanism vpmw)",
                                neighbours=(BOUNDED,), releases=QUERY_ANSWERS)
    options = (_ROUNDS, _UNUSED_SIZE)
    selection = "permute-and-flip (as report-noisy-max with exponential noise)"

    def __init__(self, rounds: int | None = None, max_model_size: float | None = None):
        if rounds is None:
            rounds = PMW_PUB_DEFAULT_ROUNDS
        if rounds < 1:
            raise ConfigError("PMW-Pub needs at least one round.")
        self.T = int(rounds)
        self.support: pd.DataFrame | None = None   # distinct public records (codes)
        self.initial: np.ndarray | None = None     # public empirical distribution on the support
        self.distribution: np.ndarray | None = None  # the output: average of the iterates
        self.query_answers: SupportAnswers | None = None  # the answers' structure on the support

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    # -- the support and the initial distribution (vPMW overrides these) ------------

    def _support(self, state: RunState, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, str]:
        """(support records as codes in the data's column order, initial weights, note)."""
        data = state.data
        pub = data.public.to_frame()[list(data.private.columns)]
        support, counts = np.unique(pub.to_numpy(), axis=0, return_counts=True)
        return support, counts / counts.sum(), \
            f"initialisation: public distribution on {len(support)} distinct public records"

    def _selectable(self, queries: CountingQueries, columns: Sequence[str]) -> np.ndarray | None:
        """Mask of the queries selection may pick (``None``: all)."""
        return None

    def _check(self, state: RunState) -> None:
        self._require_bounded(state)
        self._require_public(state)

    def run(self, loop: QueryReleaseLoop):
        state = loop.state
        self._check(state)
        started = time.perf_counter()
        data, ledger, rng = state.data, loop.ledger, loop.rng
        n = data.n
        columns = list(data.private.columns)
        support, A, note = self._support(state, rng)
        A = np.array(A, dtype=float)   # updated in place
        self.support = pd.DataFrame(support, columns=columns)
        self.initial = A.copy()
        queries = CountingQueries(state.workload, data.sizes)
        selectable = self._selectable(queries, columns)
        n_candidates = queries.total if selectable is None else int(selectable.sum())
        # each support record's cell in each workload marginal: answers are bincounts
        answers = self.query_answers = SupportAnswers(queries, support, columns)
        true = queries.answers(data.private)
        buffer = ScoreBuffer(true, answers.touched, selectable)
        size_mb = len(support) * 8 / 2 ** 20
        yield loop.event(round=0, cliques=[], source=PUBLIC, started=started,
                         model_size_mb=size_mb, note=note)
        eps0 = privacy.pmw_pub_eps0(ledger.total, self.T)
        sens = 1.0 / n
        sigma = 1.0 / (n * eps0)           # std of the noise on the fraction
        total = np.zeros_like(A)
        for t in range(1, self.T + 1):
            started = time.perf_counter()
            state.round = t
            synth = answers.touched_answers(A)
            buffer.update(synth)
            rho_select = privacy.permute_and_flip_rho(eps0)
            ledger.charge(rho_select, round=t, step="select", mechanism="permute-and-flip",
                          detail=f"{n_candidates} counting queries")
            # research: rng; release: OpenDP
            q = loop.noise.permute_and_flip(buffer.selection, eps0, sens)
            i, a, rho_measure = measure_counting_query(state, queries, q, true, sigma, sens, rng,
                                                       t, last=t == self.T)
            # A(x) exp(q(x) (a - q(A)) / 2): only the rows in q's cell change
            hit = answers.rows_in(q)
            A[hit] *= np.exp(np.ones(len(hit)) * (a - answers.answer(synth, q)) / 2.0)
            A /= A.sum()
            total += A
            yield loop.event(round=t, cliques=[queries.cliques[i]], source=PRIVATE,
                             sigma=n * sigma, epsilon=eps0, rho_select=rho_select,
                             rho_measure=rho_measure, started=started, model_size_mb=size_mb,
                             n_candidates=n_candidates, note=f"cell {queries.describe(q)}",
                             curator=queries.curator(buffer.scores, q))
        self.distribution = total / self.T

    def sample(self, loop, rows: int, rng: np.random.Generator, public_codes=None) -> pd.DataFrame:
        """``rows`` support records drawn with the averaged weights."""
        p = self.distribution / self.distribution.sum()
        pick = rng.choice(len(self.support), size=rows, p=p)
        return self.support.iloc[pick].reset_index(drop=True)


#: vPMW: the support holds about this many records (each record's public values
#: repeated, with private values drawn uniformly); see :class:`VPMW`.
VPMW_SUPPORT_SIZE = 50_000


class VPMW(PMWPub):
    """vPMW (seed 002): PMW-Pub for a *vertical* split, public columns ``P`` and
    private columns ``Q`` of the one private table; bounded DP (neighbours
    differ in one record's private values).

    **Support.** Multiplicative weights needs a finite support. The full domain
    (on Adult about 10^15 cells) is out of reach, and so is the seed paper's
    initial distribution as a table (a model of the 3-way marginals of ``P``
    times uniform on ``Q``). We use a *sampled* support instead: every record's
    public values (the table's own public columns, which are public), repeated
    ``k = max(1, round(support_size / n))`` times, each copy with private values
    drawn uniformly and independently from ``Q``'s domain (data-independent
    draws from the run's generator). With equal initial weights the initial
    distribution's marginals on ``P`` equal the table's exactly (so its 3-way
    marginals of public columns are the seed paper's initialisation), and ``Q``
    is approximately uniform and independent of ``P``. ``k n`` records
    (default about 50,000: Adult 2 copies, Titanic 50) keep a round's answers
    under a second. Like PMW-Pub it can only re-weight its support: private
    value combinations never drawn cannot appear.

    **Rounds** as PMW-Pub (same ``eps0``, permute-and-flip, Gaussian,
    update, average of iterates), over the counting queries that touch a
    private column (sensitivity ``1/n``); queries inside ``P`` are exact at
    the start and are not selected (they would cost budget for a public answer).
    """

    name = "vpmw"
    title = "vPMW"
    capabilities = Capabilities(public_columns=REQUIRED, neighbours=(BOUNDED,),
                                releases=QUERY_ANSWERS)
    options = (PUBLIC_COLUMNS_OPTION, _ROUNDS,
               Option("support_size", int, VPMW_SUPPORT_SIZE,
                      "about how many records the sampled support holds"),
               _UNUSED_SIZE)

    def __init__(self, public_columns: Sequence[str] = (), rounds: int | None = None,
                 support_size: int = VPMW_SUPPORT_SIZE, max_model_size: float | None = None):
        super().__init__(rounds=rounds, max_model_size=max_model_size)
        self.public_columns = parse_public_columns("vPMW", public_columns)
        if int(support_size) < 1:
            raise ConfigError(f"support_size must be positive, got {support_size!r}.")
        self.support_size = int(support_size)
        self.private_columns: tuple[str, ...] = ()

    def _check(self, state: RunState) -> None:
        self._require_bounded(state)
        self.private_columns = check_public_split("vPMW", self.public_columns, state.data.sizes)

    def _support(self, state: RunState, rng: np.random.Generator):
        data = state.data
        columns = list(data.private.columns)
        codes = data.private.to_frame()[columns].to_numpy()
        k = max(1, int(round(self.support_size / data.n)))
        support = np.tile(codes, (k, 1))
        for c in self.private_columns:
            j = columns.index(c)
            support[:, j] = rng.integers(0, data.sizes[c], size=len(support))
        return support, np.full(len(support), 1.0 / len(support)), \
            (f"initialisation: {len(support)} records ({k} per record: its public values "
             f"{', '.join(self.public_columns)}, uniform private values)")

    def _selectable(self, queries: CountingQueries, columns: Sequence[str]) -> np.ndarray:
        public = set(self.public_columns)
        mask = np.ones(queries.total, dtype=bool)
        for i, cl in enumerate(queries.cliques):
            if set(cl) <= public:
                mask[queries.offsets[i]:queries.offsets[i + 1]] = False
        if not mask.any():
            raise ConfigError("vPMW: every workload marginal lies inside the public columns, so "
                              "there is nothing private to measure.",
                              hint="Use a workload with private columns, or public-only.")
        return mask
