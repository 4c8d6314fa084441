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
from .query_release import (CountingQueries, DirectLoop, SelfRunningMechanism,
                            check_no_public_columns, measure_counting_query)

#: The number of rounds of the authors' PMW-Pub reproduction script.
PMW_PUB_DEFAULT_ROUNDS = 500


class PMWPub(SelfRunningMechanism):
    name = "pmw-pub"
    uses_public_rows = True
    selection = "permute-and-flip (as report-noisy-max with exponential noise)"

    def __init__(self, rounds: int | None = None, max_model_size: float | None = None,
                 public_columns: Sequence[str] = ()):
        # max_model_size is accepted (the API passes it to every mechanism) and unused
        check_no_public_columns("PMW-Pub", public_columns, "vPMW")
        if rounds is None:
            rounds = PMW_PUB_DEFAULT_ROUNDS
        if rounds < 1:
            raise ConfigError("PMW-Pub needs at least one round.")
        self.T = int(rounds)
        self.support: pd.DataFrame | None = None   # distinct public records (codes)
        self.initial: np.ndarray | None = None     # public empirical distribution on the support
        self.distribution: np.ndarray | None = None  # the output: average of the iterates

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    def run(self, loop: DirectLoop):
        state = loop.state
        self._require_bounded(state)
        self._require_public(state)
        started = time.perf_counter()
        data, ledger, rng = state.data, loop.ledger, loop.rng
        n = data.n
        columns = list(data.private.columns)
        pub = data.public.to_frame()[columns]
        support, counts = np.unique(pub.to_numpy(), axis=0, return_counts=True)
        self.support = pd.DataFrame(support, columns=columns)
        A = counts / counts.sum()
        self.initial = A.copy()
        queries = CountingQueries(state.workload, data.sizes)
        # each support record's cell in each workload marginal
        cells = []
        for cl in queries.cliques:
            idx = np.zeros(len(support), dtype=np.int64)
            for c in cl:
                idx = idx * data.sizes[c] + support[:, columns.index(c)]
            cells.append(idx)
        true = queries.answers(data.private)

        def answers(weights: np.ndarray) -> np.ndarray:
            return np.concatenate([np.bincount(ix, weights=weights, minlength=int(m))
                                   for ix, m in zip(cells, np.diff(queries.offsets))])

        size_mb = len(support) * 8 / 2 ** 20
        yield loop.event(0, [], PUBLIC, None, None, 0.0, 0.0, started, size_mb,
                         note=f"initialisation: public distribution on {len(support)} distinct "
                              f"public records")
        eps0 = privacy.pmw_pub_eps0(ledger.total, self.T)
        sens = 1.0 / n
        sigma = 1.0 / (n * eps0)           # std of the noise on the fraction
        total = np.zeros_like(A)
        for t in range(1, self.T + 1):
            started = time.perf_counter()
            state.round = t
            synth = answers(A)
            scores = np.abs(synth - true)
            rho_select = privacy.permute_and_flip_rho(eps0)
            ledger.charge(rho_select, round=t, step="select", mechanism="permute-and-flip",
                          detail=f"{queries.total} counting queries")
            q = privacy.report_noisy_max_exponential(scores, eps0, sens, rng)
            i, a, rho_measure = measure_counting_query(state, queries, q, true, sigma, sens, rng,
                                                       t, last=t == self.T)
            hit = (cells[i] == q - queries.offsets[i]).astype(float)
            A = A * np.exp(hit * (a - synth[q]) / 2.0)
            A /= A.sum()
            total += A
            yield loop.event(t, [queries.cliques[i]], PRIVATE, n * sigma, eps0, rho_select,
                             rho_measure, started, size_mb, queries.total,
                             note=f"cell {queries.describe(q)}",
                             curator=queries.curator(scores, q))
        self.distribution = total / self.T

    def direct_sample(self, state: RunState, rows: int, rng: np.random.Generator) -> pd.DataFrame:
        """``rows`` public support records drawn with the averaged weights."""
        p = self.distribution / self.distribution.sum()
        pick = rng.choice(len(self.support), size=rows, p=p)
        return self.support.iloc[pick].reset_index(drop=True)
