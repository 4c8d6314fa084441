"""PrivBayes+PGM: PrivBayes's network selection (Zhang, Cormode, Procopiuc,
Srivastava, Xiao 2017), its marginals measured with Gaussian noise and
estimated with Private-PGM (McKenna, Sheldon, Miklau 2019; a baseline of the
AIM paper).

PrivBayes is defined under bounded DP (replace one record; ``n`` is public)
and so is this mechanism. With ``d`` columns and degree ``k``:

* **Budget**: a share ``beta = 0.3`` of ``rho`` selects the network (PrivBayes's
  ``beta`` applied to ``rho``), ``1 - beta`` measures it.
* **Network** (GreedyBayes): the first column is drawn uniformly (without the
  data); each of the ``d - 1`` rounds then selects a pair ``(X, Pi)``, ``X`` a
  column not yet in the network and ``Pi`` a set of ``min(k, |V|)`` columns of
  the network ``V``, by the exponential mechanism with
  ``eps = sqrt(8 beta rho / (d - 1))`` (cost ``beta rho / (d - 1)``) on the
  score ``I(X; Pi)``, the empirical mutual information, whose sensitivity is
  PrivBayes's bound (:func:`~synth_core.privacy.privbayes_mi_sensitivity`;
  the binary bound when every candidate of the round has a binary ``X`` or
  ``Pi``, else the general one).
* **Measurement**: the marginals ``(X, Pi)`` of rounds ``k .. d - 1`` (the
  ``d - k`` that are not inside a later one; the first ``k - 1`` rounds only
  select) are measured with Gaussian noise, each costing
  ``(1 - beta) rho / (d - k)`` (L2 sensitivity ``sqrt(2)``); the last round
  spends exactly what is left. Private-PGM fits them (weights ``1/std``).
* **Degree**: ``k`` as given, else PrivBayes's theta-usefulness rule with the
  Gaussian noise in place of the Laplace noise: the largest ``k`` in
  ``1 .. d - 1`` with ``n / (g^(k+1) std_k) >= theta = 4``, where ``g`` is the
  geometric mean of the column sizes (``g^(k+1)``: the cells of a typical
  ``(k+1)``-way marginal; 2 on binary data, PrivBayes's case) and ``std_k``
  the noise std of a measurement when ``d - k`` are measured (1 if none
  qualifies).
* **Model size**: a candidate whose marginal would grow the Private-PGM model
  beyond ``max_model_size`` is left out of the round (PrivBayes has no such
  limit; its own estimation needs none).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import privacy
from ..engine import PRIVATE, Candidate, RoundPlan, RunState, size_filter
from ..errors import ConfigError
from .base import BOUNDED, MAX_MODEL_SIZE_OPTION, AdaptiveMechanism, Capabilities, Option

#: PrivBayes's share of the budget for the network (its beta)
PRIVBAYES_SELECT_SHARE = 0.3
#: PrivBayes's theta-usefulness threshold (its default theta)
PRIVBAYES_THETA = 4.0


def mutual_information(counts: np.ndarray, x_size: int) -> float:
    """``I(X; Pi)`` in nats of the joint counts over ``(X, *Pi)`` (``X`` the first axis):
    ``sum p(x, pi) log(p(x, pi) / (p(x) p(pi)))`` of the empirical distribution."""
    joint = counts.reshape(x_size, -1)
    n = joint.sum()
    if n <= 0:
        return 0.0
    expected = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True) / n
    seen = joint > 0
    return float((joint[seen] * np.log(joint[seen] / expected[seen])).sum() / n)


def usefulness_degree(n: int, sizes: dict[str, int], rho: float) -> int:
    """The largest ``k`` with ``n / (g^(k+1) std_k) >= theta`` (module docstring), at least 1."""
    d = len(sizes)
    log_g = sum(math.log(v) for v in sizes.values()) / d
    best = 1
    for k in range(1, d):
        rho_each = (1 - PRIVBAYES_SELECT_SHARE) * rho / (d - k)
        std = privacy.gaussian_std(rho_each, math.sqrt(2.0))
        if math.log(n / std) - (k + 1) * log_g >= math.log(PRIVBAYES_THETA):
            best = k
    return best


class PrivBayesPGM(AdaptiveMechanism):
    name = "privbayes-pgm"
    title = "PrivBayes+PGM"
    capabilities = Capabilities(public_columns_variant="aim with --conditional",
                                neighbours=(BOUNDED,))
    selection = "exponential mechanism (Gumbel-max) on PrivBayes's mutual information"
    options = (Option("degree", int, None,
                      "degree k of the Bayesian network (default: PrivBayes's "
                      "theta-usefulness rule)"),
               MAX_MODEL_SIZE_OPTION)

    def __init__(self, degree: int | None = None, max_model_size: float = 80.0):
        if degree is not None and degree < 1:
            raise ConfigError("PrivBayes's degree k must be at least 1.")
        if not max_model_size > 0:
            raise ConfigError("max_model_size must be positive (MB).")
        self.degree = degree
        self.max_model_size = float(max_model_size)
        self.k = 0
        #: the network: columns in the order they joined and each one's parents
        self.order: list[str] = []
        self.parents: dict[str, tuple[str, ...]] = {}
        self._pool: list[Candidate] = []

    def rounds_planned(self, state: RunState) -> int | None:
        return len(state.data.sizes) - 1

    def initialise(self, state: RunState) -> list[Candidate]:
        """The degree and the first column (uniform, data-independent); nothing is measured."""
        columns = list(state.data.sizes)
        d = len(columns)
        if d < 2:
            raise ConfigError("PrivBayes needs at least two columns.",
                              hint="Use the independent mechanism for one column.")
        if not state.neighbours.n_is_public:
            raise ConfigError("PrivBayes+PGM is defined under bounded DP (its score's "
                              "sensitivity needs the public n).", hint="Use neighbours=bounded.")
        self.k = min(self.degree or usefulness_degree(state.n, state.data.sizes,
                                                      state.ledger.total), d - 1)
        first = columns[int(state.rng.integers(d))]
        self.order, self.parents = [first], {first: ()}
        return []

    def _pool_of(self, state: RunState) -> list[Candidate]:
        """Every ``(X, Pi)``: ``X`` outside the network, ``Pi`` ``min(k, |V|)`` of its columns,
        whose marginal keeps the model within ``max_model_size``."""
        outside = [c for c in state.data.sizes if c not in self.parents]
        size = min(self.k, len(self.order))
        pool = [Candidate((x, *pi), PRIVATE) for x in outside
                for pi in itertools.combinations(self.order, size)]
        selected = [(c, *self.parents[c]) for c in self.order[1:]]
        kept = size_filter(state.data.sizes, selected, pool, self.max_model_size)
        if not kept:
            raise ConfigError(f"No PrivBayes candidate of degree {self.k} fits the model size "
                              f"limit ({self.max_model_size:g} MB).",
                              hint="Lower the option degree or raise max_model_size.")
        return kept

    def _sensitivity(self, state: RunState, pool) -> float:
        sizes = state.data.sizes
        binary = all(sizes[c.clique[0]] == 2 or math.prod(sizes[p] for p in c.clique[1:]) == 2
                     for c in pool)
        return privacy.privbayes_mi_sensitivity(state.n, binary)

    def plan(self, state: RunState) -> RoundPlan | None:
        d, j = len(state.data.sizes), len(self.order)   # round j selects the (j+1)-th column
        if j >= d:
            return None
        ledger = state.ledger
        self._pool = self._pool_of(state)
        rho_select = PRIVBAYES_SELECT_SHARE * ledger.total / (d - 1)
        final = j == d - 1
        measure = j >= self.k
        if final:
            rho_measure = ledger.total - ledger.spent - rho_select
        elif measure:
            rho_measure = (1 - PRIVBAYES_SELECT_SHARE) * ledger.total / (d - self.k)
        else:
            rho_measure = 0.0
        std = privacy.gaussian_std(rho_measure, state.neighbours.marginal_l2_sensitivity) \
            if measure else math.inf
        return RoundPlan(epsilon=privacy.exponential_eps(rho_select),
                         sensitivity=self._sensitivity(state, self._pool), noise_std=std,
                         rho_measure=rho_measure, fit_stddev=std, final=final, measure=measure)

    def candidates(self, state: RunState, plan: RoundPlan) -> list[Candidate]:
        return list(self._pool)

    def scores(self, state: RunState, plan: RoundPlan, candidates) -> np.ndarray:
        """CURATOR-ONLY: ``I(X; Pi)`` of each candidate on the private table."""
        private, sizes = state.data.private, state.data.sizes
        return np.array([mutual_information(private.marginal(c.clique), sizes[c.clique[0]])
                         for c in candidates])

    def after_round(self, state, plan, chosen, before, after) -> None:
        x, *pi = chosen.clique
        self.order.append(x)
        self.parents[x] = tuple(pi)
