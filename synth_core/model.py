"""Private-PGM (``mbi``) wrapper: fit, exact marginals, sample.

Estimation and sampling are ``mbi``'s. What this module adds is how they are
driven, because every new clique structure is a new compiled JAX program
(docs/performance.md, "Where the time goes"):

* one compiled program per fit, with a single marginal-oracle call site:
  ``mbi``'s mirror descent with Armijo line search, shifted so that each step
  evaluates the trial point the previous step proposed
  (:func:`mirror_descent_step`), in a ``while_loop`` with a convergence test.
  ``mbi.Estimator.estimate`` compiles three or more programs per new
  structure, each with the oracle inlined two or three times;
* the oracle is chosen by model size: ``mbi``'s Hugin message passing for
  small junction trees, its implicit (factored) message passing for large
  ones, where it runs about twenty times faster per call;
* the junction tree's beliefs are calibrated once per fit in numpy
  (:func:`~synth_core.inference.calibrate`), outside the compiled program;
* scoring asks :class:`~synth_core.inference.ModelMarginals` (plain numpy on
  the calibrated beliefs) instead of compiling one program per candidate;
* memory stays bounded in a long-lived process: the JAX caches are cleared
  once the process holds too many memory maps, and after a fit that compiled
  (or a large one) the C heap hands freed memory back to the system
  (:func:`~synth_core.heap.return_freed_memory`; the first estimator a
  process builds also limits glibc's malloc arenas, :mod:`synth_core.heap`);
* every JAX computation here runs in float64, scoped by
  :func:`synth_core.runtime.estimation` (importing this module changes no
  JAX setting, see :mod:`synth_core.runtime`).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

from .heap import return_freed_memory
from .inference import ModelMarginals, calibrate
from .runtime import estimation, prepare_process

# mbi warns on import unless JAX is in float64 with no persistent compilation
# cache: imported in the scope it always runs in
with estimation():
    import mbi
    from mbi import junction_tree, marginal_oracles
    from mbi.clique_vector import CliqueVector
    from mbi.estimation import minimum_variance_unbiased_total
    from mbi.marginal_loss import LinearMeasurement, from_linear_measurements

Clique = tuple[str, ...]

#: Mirror-descent steps between two convergence checks.
STEPS_PER_BLOCK = 50
#: Clear JAX's caches once the process holds more memory maps than this
#: (the kernel limit is 65,530; each compiled fit holds about 500 maps and
#: some 25 MB that the process reuses after a clear).
MAX_MEMORY_MAPS = 12_000

_JAX_LOCK = threading.Lock()

#: The marginal oracles a fit may use (both ``mbi``'s, both exact):
#: ``hugin`` materialises every junction-tree clique (mbi's choice on CPU;
#: quick to compile), ``implicit`` keeps the potentials factored and
#: contracts them with dot products (slower to compile, much faster to run
#: on large models: 0.03 s against 0.7 s per call on a 46 MB Adult model).
ORACLES = {
    "hugin": marginal_oracles.message_passing_hugin,
    "implicit": marginal_oracles.message_passing_fast,
}
#: ``oracle="auto"`` uses ``implicit`` from this junction-tree size (MB) on.
IMPLICIT_FROM_MB = 8.0


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


#: the heap is trimmed after a fit that compiled, or of a junction tree from this size (MB)
TRIM_FROM_MB = 4.0


@dataclass(frozen=True)
class FitMeasurement:
    """A measurement as the estimator sees it: clique, values, and fitting std."""

    clique: Clique
    values: np.ndarray
    stddev: float = 1.0


def merge_repeated(measurements: Sequence[FitMeasurement]) -> list[FitMeasurement]:
    """One measurement per clique: repeated measurements of a clique merged.

    Measurements ``y_i`` of one clique with stddevs ``s_i`` become their
    inverse-variance weighted mean with stddev ``(sum 1/s_i^2)^(-1/2)``. The
    weighted L2 loss ``sum_i |M mu - y_i|^2 / (2 s_i^2)`` changes only by a
    constant, so its gradient and Lipschitz constant, and with them every
    mirror-descent iterate, stay the same (the convergence test, relative to
    the loss, sees the smaller loss and may stop a fit one block apart:
    Conditional vJAM-PGM at 75% public, epsilon 10 ended at 0.07460 against
    0.07461 before). What changes is the compiled fit's
    shape: a mechanism that measures a clique again (JAM-PGM, vJAM-PGM,
    MWEM+PGM, AIM) keeps its structure and reuses the compiled program
    instead of compiling one more. Order: first occurrence of each clique.
    """
    groups: dict[Clique, list[FitMeasurement]] = {}
    for m in measurements:
        groups.setdefault(tuple(m.clique), []).append(m)
    out = []
    for clique, ms in groups.items():
        if len(ms) == 1:
            out.append(ms[0])
            continue
        weights = np.array([1.0 / max(m.stddev, 1e-12) ** 2 for m in ms])
        values = sum(w * np.asarray(m.values, dtype=float) for w, m in zip(weights, ms))
        out.append(FitMeasurement(clique, values / weights.sum(), float(weights.sum() ** -0.5)))
    return out


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


class StepState(NamedTuple):
    """Mirror-descent state with one oracle call per step.

    ``potentials`` is the accepted point and ``mu`` its marginals; ``trial``
    is the point the next step evaluates (``potentials - alpha * grad``).
    Before the first step ``trial`` is the starting point and ``fresh`` is
    true: that step only evaluates it.
    """

    potentials: CliqueVector
    mu: CliqueVector
    alpha: jax.Array
    loss: jax.Array
    grad: CliqueVector
    trial: CliqueVector
    fresh: jax.Array


def start_state(potentials: CliqueVector, loss_fn, total) -> StepState:
    """The state before the first step: nothing evaluated yet, mbi's initial step size."""
    alpha = jnp.asarray(2.0 / (loss_fn.lipschitz * total), dtype=jnp.float64)
    zeros = potentials * 0.0
    return StepState(potentials, zeros, alpha, jnp.asarray(jnp.inf), zeros, potentials,
                     jnp.asarray(True))


def mirror_descent_step(oracle, state: StepState, loss_fn, total) -> StepState:
    """One step of ``mbi``'s mirror descent with Armijo line search, one oracle call.

    The accepted iterates are those of ``mbi.estimation.MirrorDescent._step``
    (gradient step on the potentials; accept if the loss decreases
    sufficiently, step size times 1.01; otherwise keep the potentials, step
    size halved), shifted by one: a step evaluates the trial point the
    previous step proposed, decides, and proposes the next. ``mbi`` calls the
    oracle twice per step (once on the current point, whose marginals are
    already known, once on the trial) and three times per compiled fit
    program; with a single call site the program compiles about three times
    faster and each step runs belief propagation once (a test compares the
    iterates with mbi's to 1e-9).
    """
    trial_mu = oracle(state.trial, total)
    trial_loss = loss_fn(trial_mu)
    decrease = state.loss - trial_loss >= 0.5 * state.alpha * state.grad.dot(state.mu - trial_mu)
    accept = jnp.logical_or(state.fresh, decrease)
    alpha = jax.lax.select(state.fresh, state.alpha,
                           jax.lax.select(accept, 1.01 * state.alpha, 0.5 * state.alpha))
    potentials, mu, loss = jax.lax.cond(accept, lambda: (state.trial, trial_mu, trial_loss),
                                        lambda: (state.potentials, state.mu, state.loss))
    grad = jax.grad(loss_fn)(mu)
    return StepState(potentials, mu, alpha, loss, grad, potentials - alpha * grad,
                     jnp.asarray(False))


@functools.partial(jax.jit, static_argnames=("oracle_name",))
def _fit_program(potentials, loss_fn, total, tol, max_blocks, oracle_name):
    """One compiled program: mirror descent until converged (a single oracle call site)."""
    oracle = ORACLES[oracle_name]

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

    init = (start_state(potentials, loss_fn, total), jnp.asarray(jnp.inf, dtype=jnp.float64),
            jnp.asarray(0), jnp.asarray(0))
    state, loss, _, blocks = jax.lax.while_loop(cond, body, init)
    return state.potentials, state.mu, loss, blocks


def _extend(potentials: CliqueVector, cliques: Sequence[Clique], domain) -> CliqueVector:
    """Warm start: the old potentials, and zero potentials on new cliques.

    The same distribution (what ``CliqueVector.expand`` gives when the clique
    set only grows), built without one eager JAX operation per clique.
    """
    old = set(potentials.cliques)
    if not old <= set(cliques):
        return potentials.expand(list(cliques))
    tables = {cl: potentials[cl] if cl in old else
              mbi.Factor(domain.project(cl), jnp.zeros(domain.project(cl).shape))
              for cl in cliques}
    return CliqueVector(domain, list(cliques), tables)


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

    def counts_many(self, cliques: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        """``counts`` of many cliques at once (a round's candidates), on two threads."""
        return self.marginals.many(cliques)

    def sample(self, rows: int, seed: int) -> pd.DataFrame:
        """Synthetic records (integer codes) drawn by ``mbi`` from the model."""
        columns = list(self.sizes)
        if self.mrf is None:  # uniform model: nothing measured
            rng = np.random.default_rng(seed)
            return pd.DataFrame({c: rng.integers(0, s, rows) for c, s in self.sizes.items()})
        with _JAX_LOCK, estimation():  # mbi samples with NumPy's global generator
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

    Building one applies the process-wide settings a run needs
    (:func:`synth_core.runtime.prepare_process`); every fit, total estimate
    and sample computes in float64 (:func:`synth_core.runtime.estimation`).

    Args:
        sizes: column sizes (the domain), in schema order.
        max_iters: upper bound on mirror-descent steps per fit.
        tol: relative loss improvement per block below which a fit stops
            (two blocks in a row).
        oracle: ``hugin``, ``implicit`` (see :data:`ORACLES`) or ``auto``
            (by junction-tree size, :data:`IMPLICIT_FROM_MB`).
    """

    def __init__(self, sizes: Mapping[str, int], *, max_iters: int = 1000, tol: float = 1e-6,
                 oracle: str = "auto"):
        if oracle not in ("auto", *ORACLES):
            raise ValueError(f"unknown oracle {oracle!r}; choose auto, {', '.join(ORACLES)}")
        prepare_process()
        self.sizes = dict(sizes)
        self.domain = make_domain(self.sizes)
        self.max_iters = int(max_iters)
        self.tol = float(tol)
        self.oracle = oracle
        self.last_oracle: str | None = None
        self.compiles = 0

    def uniform(self, total: float) -> FittedModel:
        return FittedModel(self.sizes, None, ModelMarginals.uniform(self.sizes, total), (), total, 0.0)

    def estimate_total(self, measurements: Sequence[FitMeasurement]) -> float:
        """Minimum-variance unbiased estimate of the number of records (unbounded DP)."""
        with estimation():
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
        with estimation():
            return self._fit(measurements, total, warm, max_iters, tol, start)

    def _fit(self, measurements, total, warm, max_iters, tol, start) -> FittedModel:
        linear = self._linear(merge_repeated(measurements))
        loss_fn = from_linear_measurements(linear, self.domain)
        cliques = tuple(tuple(cl) for cl in loss_fn.cliques)
        tree, _ = junction_tree.make_junction_tree(self.domain, cliques)
        tree_cliques = tuple(sorted(tuple(cl) for cl in tree.nodes))
        if warm is not None and warm.mrf is not None:
            potentials = _extend(warm.mrf.potentials, cliques, self.domain)
        else:
            potentials = CliqueVector.zeros(self.domain, list(cliques))
        iters = self.max_iters if max_iters is None else int(max_iters)
        max_blocks = max(1, -(-iters // STEPS_PER_BLOCK))
        size = float(sum(np.prod([self.sizes[c] for c in cl]) for cl in tree_cliques) * 8 / 2 ** 20)
        oracle = self.oracle
        if oracle == "auto":
            oracle = "implicit" if size >= IMPLICIT_FROM_MB else "hugin"
        tol = self.tol if tol is None else float(tol)
        with _JAX_LOCK:
            before = _fit_program._cache_size()
            fitted, marginals, loss, blocks = _fit_program(
                potentials, loss_fn, float(total), tol, max_blocks, oracle)
            if not np.isfinite(float(loss)) and oracle != "hugin":
                # the implicit oracle's exp-normalise trick can underflow on
                # extreme potentials: refit with the stable one
                oracle = "hugin"
                fitted, marginals, loss, blocks = _fit_program(
                    potentials, loss_fn, float(total), tol, max_blocks, oracle)
            compiled = _fit_program._cache_size() - before
            self.compiles += compiled
            bound_compiled_programs()
            if compiled or size >= TRIM_FROM_MB:
                # what a compile or a large fit freed; a small refit of a known
                # structure frees little (the cost of trimming was not measured)
                return_freed_memory()
        log_potentials = {cl: np.asarray(fitted[cl].datavector(flatten=False)) for cl in cliques}
        edges = [(tuple(a), tuple(b)) for a, b in tree.edges]
        beliefs = calibrate(self.sizes, log_potentials, tree_cliques, edges)
        mrf = mbi.MarkovRandomField(potentials=fitted, marginals=marginals, total=float(total))
        view = ModelMarginals(self.sizes, beliefs, edges, float(total))
        self.last_oracle = oracle
        return FittedModel(self.sizes, mrf, view, cliques, float(total), size,
                           iterations=int(blocks) * STEPS_PER_BLOCK,
                           seconds=time.perf_counter() - start)
