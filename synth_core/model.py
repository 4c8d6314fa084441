"""Private-PGM (``mbi``) wrapper: fit, exact marginals, sample.

Estimation and sampling are ``mbi``'s. What this module adds is how they are
driven, because every new clique structure is a new compiled JAX program
(DESIGN.md section 5):

* one compiled program per fit: ``mbi``'s mirror-descent ``_init``, its
  ``_step`` in a ``while_loop`` with a convergence test, and the calibration of
  the junction tree, all in one ``jax.jit`` (``mbi.Estimator.estimate`` compiles
  three or more programs per new structure);
* scoring asks :class:`~synth_core.inference.ModelMarginals` (plain numpy on
  the calibrated beliefs) instead of compiling one program per candidate;
* the number of memory maps the process holds is watched; past a bound the
  JAX caches are cleared, so a long-lived process stays bounded.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import jax

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_enable_compilation_cache", False)

import jax.numpy as jnp  # noqa: E402
import mbi  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from mbi import junction_tree  # noqa: E402
from mbi.clique_vector import CliqueVector  # noqa: E402
from mbi.estimation import MirrorDescent, MirrorDescentState, minimum_variance_unbiased_total  # noqa: E402
from mbi.marginal_loss import LinearMeasurement, from_linear_measurements  # noqa: E402

from .inference import ModelMarginals  # noqa: E402

Clique = tuple[str, ...]

#: Mirror-descent steps between two convergence checks.
STEPS_PER_BLOCK = 50
#: Clear JAX's caches once the process holds more memory maps than this
#: (the kernel limit is 65,530; each compiled fit holds about 500 maps and
#: some 25 MB that the process reuses after a clear).
MAX_MEMORY_MAPS = 12_000

_JAX_LOCK = threading.Lock()


def memory_maps() -> int:
    """Number of memory maps this process holds (Linux), or -1 if unknown."""
    try:
        with open(f"/proc/{os.getpid()}/maps", "rb") as fh:
            return sum(1 for _ in fh)
    except OSError:
        return -1


def bound_compiled_programs(limit: int = MAX_MEMORY_MAPS) -> bool:
    """Clear JAX's compiled programs if the process holds too many memory maps."""
    if memory_maps() > limit:
        jax.clear_caches()
        return True
    return False


@dataclass(frozen=True)
class FitMeasurement:
    """A measurement as the estimator sees it: clique, values, and fitting std."""

    clique: Clique
    values: np.ndarray
    stddev: float = 1.0


def model_size_mb(sizes: Mapping[str, int], cliques: Sequence[Clique]) -> float:
    """Size in MB of the junction tree Private-PGM builds for ``cliques``.

    Equals ``mbi.junction_tree.hypothetical_model_size`` (a test checks this on
    random clique sets) without building networkx graphs: the size filter asks
    this for every candidate in every round. Same rules as mbi: a forest-free
    tree over all columns is triangulated as it is; otherwise mbi's greedy
    elimination order (cost = cells of the union of the cliques holding the
    column, 1 for a column in none, ties to the earlier column) is simulated,
    and the maximal elimination cliques are the junction tree's cliques.
    """
    if not cliques:
        return 0.0
    attrs = list(sizes)
    nbrs: dict[str, set] = {a: set() for a in attrs}
    for cl in cliques:
        for a in cl:
            nbrs[a].update(c for c in cl if c != a)
    edges = sum(len(v) for v in nbrs.values()) // 2
    if edges and edges == len(attrs) - 1 and _connected(nbrs):  # a tree: edges are the cliques
        cells = sum(sizes[a] * sizes[b] for a in attrs for b in nbrs[a] if a < b)
        return cells * 8 / 2 ** 20
    in_clique = {a for cl in cliques for a in cl}
    remaining = list(attrs)
    elim_cliques: list[frozenset] = []
    while remaining:
        best, best_cost = None, None
        for a in remaining:
            if a in in_clique or nbrs[a]:
                cost = sizes[a]
                for b in nbrs[a]:
                    cost *= sizes[b]
            else:
                cost = 1
            if best_cost is None or cost < best_cost:
                best, best_cost = a, cost
        around = nbrs.pop(best)
        for b in around:
            nbrs[b].discard(best)
            nbrs[b].update(c for c in around if c != b)
        remaining.remove(best)
        elim_cliques.append(frozenset(around | {best}))
    maximal = [c for c in set(elim_cliques) if not any(c < o for o in elim_cliques)]
    cells = sum(int(np.prod([sizes[a] for a in c], dtype=np.int64)) for c in maximal)
    return cells * 8 / 2 ** 20


def _connected(nbrs: dict[str, set]) -> bool:
    start = next(iter(nbrs))
    seen, stack = {start}, [start]
    while stack:
        for b in nbrs[stack.pop()]:
            if b not in seen:
                seen.add(b)
                stack.append(b)
    return len(seen) == len(nbrs)


@functools.lru_cache(maxsize=64)
def _domain(items: tuple[tuple[str, int], ...]) -> mbi.Domain:
    names, shape = zip(*items)
    return mbi.Domain(names, shape)


def make_domain(sizes: Mapping[str, int]) -> mbi.Domain:
    return _domain(tuple((str(k), int(v)) for k, v in sizes.items()))


def mirror_descent_step(oracle, state: MirrorDescentState, loss_fn, total) -> MirrorDescentState:
    """One step of ``mbi``'s mirror descent with Armijo line search, one oracle call.

    The iterates are those of ``mbi.estimation.MirrorDescent._step``: gradient
    step on the potentials, accept if the loss decreases sufficiently (step
    size times 1.01), otherwise keep the potentials (step size halved). The
    difference is bookkeeping: ``state.mu`` holds the marginals of
    ``state.potentials`` (``MirrorDescent._init`` sets them so), and after an
    accepted step the trial point's marginals are already known, so each step
    runs belief propagation once instead of twice.
    """
    loss, grad = jax.value_and_grad(loss_fn)(state.mu)
    trial = state.potentials - state.alpha * grad
    trial_mu = oracle(trial, total)
    trial_loss = loss_fn(trial_mu)
    accept = loss - trial_loss >= 0.5 * state.alpha * grad.dot(state.mu - trial_mu)
    alpha = jax.lax.select(accept, 1.01 * state.alpha, 0.5 * state.alpha)
    potentials, mu = jax.lax.cond(accept, lambda: (trial, trial_mu),
                                  lambda: (state.potentials, state.mu))
    return MirrorDescentState(mu, potentials, alpha, jax.lax.select(accept, trial_loss, loss))


@functools.partial(jax.jit, static_argnames=("estimator", "tree_cliques"))
def _fit_program(estimator, potentials, loss_fn, total, tol, max_blocks, tree_cliques):
    """One compiled program: init, mirror descent until converged, calibration."""
    domain = potentials.domain
    state = estimator._init(domain, loss_fn, total, warm_start=potentials)
    oracle = estimator._oracle(loss_fn.cliques, domain)

    def block(s):
        def step(carry, _):
            return mirror_descent_step(oracle, carry, loss_fn, total), None
        return jax.lax.scan(step, s, None, length=STEPS_PER_BLOCK)[0]

    def cond(carry):
        _, _, stalls, k = carry
        return jnp.logical_and(k < max_blocks, stalls < 2)

    def body(carry):
        s, prev, stalls, k = carry
        s = block(s)
        converged = prev - s.loss <= tol * jnp.maximum(jnp.abs(s.loss), 1.0)
        return s, s.loss, jnp.where(converged, stalls + 1, 0), k + 1

    init = (state, jnp.asarray(jnp.inf, dtype=state.loss.dtype), jnp.asarray(0), jnp.asarray(0))
    state, loss, _, blocks = jax.lax.while_loop(cond, body, init)
    marginals = state.mu
    beliefs = oracle(state.potentials.expand(list(tree_cliques)), total)
    return state.potentials, marginals, beliefs, loss, blocks


@dataclass
class FittedModel:
    """A Private-PGM model and the numpy view of its marginals."""

    sizes: dict[str, int]
    mrf: mbi.MarkovRandomField | None
    marginals: ModelMarginals
    cliques: tuple[Clique, ...]
    total: float
    size_mb: float
    iterations: int = 0
    seconds: float = 0.0

    def counts(self, clique: Sequence[str]) -> np.ndarray:
        return self.marginals.counts(clique)

    def sample(self, rows: int, seed: int) -> pd.DataFrame:
        """Synthetic records (integer codes) drawn by ``mbi`` from the model."""
        columns = list(self.sizes)
        if self.mrf is None:  # uniform model: nothing measured
            rng = np.random.default_rng(seed)
            return pd.DataFrame({c: rng.integers(0, s, rows) for c, s in self.sizes.items()})
        with _JAX_LOCK:  # mbi samples with NumPy's global generator
            saved = np.random.get_state()
            np.random.seed(seed % (2 ** 32))
            try:
                ds = self.mrf.synthetic_data(rows=rows)
            finally:
                np.random.set_state(saved)
        data = ds.to_dict()
        return pd.DataFrame({c: np.asarray(data[c], dtype=np.int64) for c in columns})


class PGMEstimator:
    """Fits Private-PGM models by mirror descent with warm starts.

    Args:
        sizes: column sizes (the domain), in schema order.
        max_iters: upper bound on mirror-descent steps per fit.
        tol: relative loss improvement per block below which a fit stops
            (two blocks in a row).
    """

    def __init__(self, sizes: Mapping[str, int], *, max_iters: int = 1000, tol: float = 1e-6):
        self.sizes = dict(sizes)
        self.domain = make_domain(self.sizes)
        self.max_iters = int(max_iters)
        self.tol = float(tol)
        self._estimator = MirrorDescent()
        self.compiles = 0

    def uniform(self, total: float) -> FittedModel:
        return FittedModel(self.sizes, None, ModelMarginals.uniform(self.sizes, total), (), total, 0.0)

    def estimate_total(self, measurements: Sequence[FitMeasurement]) -> float:
        """Minimum-variance unbiased estimate of the number of records (unbounded DP)."""
        return minimum_variance_unbiased_total(self._linear(measurements))

    def _linear(self, measurements):
        return [LinearMeasurement(jnp.asarray(m.values, dtype=jnp.float64), tuple(m.clique),
                                  stddev=float(m.stddev)) for m in measurements]

    def fit(self, measurements: Sequence[FitMeasurement], total: float,
            warm: FittedModel | None = None, max_iters: int | None = None,
            tol: float | None = None) -> FittedModel:
        """Fit a model to the measurements, warm-started from ``warm`` if given."""
        start = time.perf_counter()
        if not measurements:
            return self.uniform(total)
        linear = self._linear(measurements)
        loss_fn = from_linear_measurements(linear, self.domain)
        cliques = tuple(tuple(cl) for cl in loss_fn.cliques)
        tree, _ = junction_tree.make_junction_tree(self.domain, cliques)
        tree_cliques = tuple(sorted(tuple(cl) for cl in tree.nodes))
        if warm is not None and warm.mrf is not None:
            potentials = warm.mrf.potentials.expand(list(cliques))
        else:
            potentials = CliqueVector.zeros(self.domain, list(cliques))
        iters = self.max_iters if max_iters is None else int(max_iters)
        max_blocks = max(1, -(-iters // STEPS_PER_BLOCK))
        with _JAX_LOCK:
            before = _fit_program._cache_size()
            potentials, marginals, beliefs, _, blocks = _fit_program(
                self._estimator, potentials, loss_fn, float(total),
                self.tol if tol is None else float(tol), max_blocks, tree_cliques)
            beliefs = {cl: np.asarray(beliefs[cl].datavector(flatten=False)) for cl in tree_cliques}
            self.compiles += _fit_program._cache_size() - before
            bound_compiled_programs()
        mrf = mbi.MarkovRandomField(potentials=potentials, marginals=marginals, total=float(total))
        edges = [(tuple(a), tuple(b)) for a, b in tree.edges]
        view = ModelMarginals(self.sizes, beliefs, edges, float(total))
        size = float(sum(np.prod([self.sizes[c] for c in cl]) for cl in tree_cliques) * 8 / 2 ** 20)
        return FittedModel(self.sizes, mrf, view, cliques, float(total), size,
                           iterations=int(blocks) * STEPS_PER_BLOCK,
                           seconds=time.perf_counter() - start)
