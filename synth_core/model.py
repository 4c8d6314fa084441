"""Private-PGM (``mbi``) wrapper: fit, exact marginals, sample.

A fit runs on one of two paths (docs/performance.md, "Fit paths"): numpy
below :data:`NUMPY_BELOW_MB`, and from it on whichever a cost model of the
fit (:func:`fit_costs`, planned work only, so the choice is deterministic)
says is cheaper:

* **numpy**: the same mirror descent, step rule and stopping
  test as the compiled program (:func:`numpy_mirror_descent`), on a junction
  tree built and propagated in numpy (:class:`~synth_core.inference.TreeOracle`,
  or :class:`~synth_core.inference.FactoredOracle` on large trees);
  the model samples in numpy too. Neither JAX nor ``mbi`` is imported: both
  load on first use of the compiled path (:func:`_mbi`).
* **jax**: one compiled JAX program per clique structure
  (docs/performance.md, "Where the time goes"):

* one compiled program per fit, with a single marginal-oracle call site:
  ``mbi``'s mirror descent with Armijo line search, shifted so that each step
  evaluates the trial point the previous step proposed
  (:func:`mirror_descent_step`), in a ``while_loop`` with a convergence test.
  ``mbi.Estimator.estimate`` compiles three or more programs per new
  structure, each with the oracle inlined two or three times;
* the oracle is chosen by model size: ``mbi``'s Hugin message passing for
  small junction trees, implicit (factored) message passing for large ones,
  where it runs about twenty times faster per call: ``mbi``'s
  ``message_passing_fast`` in value, on a plan that does not follow the hash
  seed (:mod:`synth_core.jax_oracle`);
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

import contextlib
import functools
import os
import threading
import time
from dataclasses import dataclass
from typing import Iterator, Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from .heap import return_freed_memory
from .inference import (FactoredOracle, ModelMarginals, TreeOracle, calibrate, cells,
                        elimination_cliques, maximal_cliques, sample_records, smallest_holder)
from .runtime import estimation, prepare_process

Clique = tuple[str, ...]

#: Every fit of a junction tree below this size (MB) runs in numpy on
#: :class:`~synth_core.inference.TreeOracle` (Hugin on materialised nodes);
#: from it on, a fit runs on the path its cost model (:func:`fit_costs`)
#: says is cheaper, the numpy one with
#: :class:`~synth_core.inference.FactoredOracle` (docs/performance.md, "Fit paths").
NUMPY_BELOW_MB = 8.0
#: The junction-tree size (MB) from which the numpy path propagates with
#: :class:`~synth_core.inference.FactoredOracle` (messages contracted from the
#: measured tables) instead of Hugin. On the junction trees of one Adult
#: JAM-PGM run the factored oracle cost 0.05 to 0.3 times Hugin's per call from
#: 8.8 to 45 MB and 1.07 times at 8.3 MB; below 8 MB it ranged from 0.3 to 1.35
#: times (and twice Hugin's below 0.3 MB).
FACTORED_FROM_MB = NUMPY_BELOW_MB
#: The compiled path's cost model, CPU seconds per oracle (fitted to the
#: captured fits of Adult runs of AIM, JAM-PGM and vJAM-PGM, ``benchmarks/fit_paths.py
#: --captured``): a structure this estimator has not compiled with that oracle
#: costs ``COMPILE_SECONDS`` (nearly all XLA's compile; implicit 8 to 20 s, median
#: 15, on 8 to 51 MB models, least squares 13.6; Hugin 7.5 s at 50.7 MB), and each
#: step ``COMPILED_STEP_SECONDS_PER_MB`` per junction-tree MB (implicit 0.2 to 0.8 ms,
#: median 0.38: ``fit_paths/compiled_replays.jsonl``; Hugin 220 ms a step at 50.7 MB).
COMPILE_SECONDS = {"implicit": 14.0, "hugin": 8.0}
COMPILED_STEP_SECONDS_PER_MB = {"implicit": 0.0004, "hugin": 0.0043}
#: A numpy step costs this many oracle calls (the loss, its gradient and the
#: line-search test on the measured tables add about a fifth).
NUMPY_STEP_CALLS = 1.2
#: Environment variable forcing the fit path of ``path="auto"`` estimators: ``numpy`` or ``jax``.
FIT_PATH_ENV = "SYNTH_FIT_PATH"
FIT_PATHS = ("numpy", "jax")


@functools.lru_cache(maxsize=1)
def _mbi():
    """``mbi`` and the parts of it the compiled path uses, imported on first use.

    ``mbi`` imports JAX (about a CPU second) and warns on import unless JAX is
    in float64 with no persistent compilation cache: imported in the scope it
    always runs in, and only when a fit, total or sample needs it.
    """
    import types

    with estimation():
        import mbi
        from mbi import junction_tree, marginal_oracles
        from mbi.clique_vector import CliqueVector
        from mbi.marginal_loss import LinearMeasurement, from_linear_measurements

        from .jax_oracle import factored_oracle
    return types.SimpleNamespace(
        mbi=mbi, junction_tree=junction_tree, marginal_oracles=marginal_oracles,
        CliqueVector=CliqueVector, LinearMeasurement=LinearMeasurement,
        from_linear_measurements=from_linear_measurements,
        ORACLES={"hugin": marginal_oracles.message_passing_hugin,
                 "implicit": factored_oracle})

#: Mirror-descent steps between two convergence checks.
STEPS_PER_BLOCK = 50
#: Clear JAX's caches once the process holds more memory maps than this
#: (the kernel limit is 65,530; each compiled fit holds about 500 maps and
#: some 25 MB that the process reuses after a clear).
MAX_MEMORY_MAPS = 12_000

_JAX_LOCK = threading.Lock()

#: The marginal oracles a fit may use (both exact): ``hugin`` (``mbi``'s)
#: materialises every junction-tree clique (mbi's choice on CPU; quick to
#: compile), ``implicit`` (:func:`synth_core.jax_oracle.factored_oracle`, the
#: numpy :class:`~synth_core.inference.FactoredOracle`'s plan compiled) keeps the
#: potentials factored and contracts them with dot products (slower to compile,
#: much faster to run on large models; ``COMPILED_STEP_SECONDS_PER_MB``).
ORACLE_NAMES = ("hugin", "implicit")
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
        import jax

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
    elimination order is simulated
    (:func:`~synth_core.inference.elimination_cliques`), and the maximal
    elimination cliques are the junction tree's cliques.
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
        total = sum(sizes[a] * sizes[b] for a in attrs for b in nbrs[a] if a < b)
        return total * 8 / 2 ** 20
    return sum(cells(sizes, c) for c in elimination_cliques(sizes, cliques)) * 8 / 2 ** 20


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
def _domain(items: tuple[tuple[str, int], ...]):
    names, shape = zip(*items)
    return _mbi().mbi.Domain(names, shape)


def make_domain(sizes: Mapping[str, int]):
    """The ``mbi.Domain`` of the column sizes (imports ``mbi``)."""
    return _domain(tuple((str(k), int(v)) for k, v in sizes.items()))


# -- the compiled path (JAX) -----------------------------------------------------

class StepState(NamedTuple):
    """Mirror-descent state with one oracle call per step.

    ``potentials`` is the accepted point and ``mu`` its marginals; ``trial``
    is the point the next step evaluates (``potentials - alpha * grad``).
    Before the first step ``trial`` is the starting point and ``fresh`` is
    true: that step only evaluates it. (Fields are ``mbi`` clique vectors and
    JAX scalars.)
    """

    potentials: object
    mu: object
    alpha: object
    loss: object
    grad: object
    trial: object
    fresh: object


def start_state(potentials, loss_fn, total) -> StepState:
    """The state before the first step: nothing evaluated yet, mbi's initial step size."""
    import jax.numpy as jnp

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
    import jax
    import jax.numpy as jnp

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


def _fit_body(potentials, loss_fn, total, tol, max_blocks, oracle_name):
    """Mirror descent until converged (a single oracle call site), to be compiled."""
    import jax
    import jax.numpy as jnp

    oracle = _mbi().ORACLES[oracle_name]

    def block(s):
        def step(carry, _):
            return mirror_descent_step(oracle, carry, loss_fn, total), None
        return jax.lax.scan(step, s, None, length=STEPS_PER_BLOCK)[0]

    def cond(carry):
        _, prev, stalls, k = carry
        # a NaN loss (an underflowed oracle) ends the fit at once: it is refitted
        return (k < max_blocks) & (stalls < 2) & ~jnp.isnan(prev)

    def body(carry):
        s, prev, stalls, k = carry
        s = block(s)
        converged = prev - s.loss <= tol * jnp.maximum(jnp.abs(s.loss), 1.0)
        return s, s.loss, jnp.where(converged, stalls + 1, 0), k + 1

    init = (start_state(potentials, loss_fn, total), jnp.asarray(jnp.inf, dtype=jnp.float64),
            jnp.asarray(0), jnp.asarray(0))
    state, loss, _, blocks = jax.lax.while_loop(cond, body, init)
    return state.potentials, state.mu, loss, blocks


#: XLA options of the compiled fit: one thread (XLA's Eigen thread pool off), whose
#: threads otherwise spin between the many small contractions and cost CPU seconds
#: (docs/performance.md, "Deterministic research runs"). The process's other core stays
#: free for scoring.
FIT_COMPILER_OPTIONS = {"xla_cpu_multi_thread_eigen": False}


@functools.lru_cache(maxsize=1)
def _fit_program():
    """The compiled fit program (one JAX ``jit`` of :func:`_fit_body`), built on first use."""
    import jax

    return jax.jit(_fit_body, static_argnames=("oracle_name",),
                   compiler_options=FIT_COMPILER_OPTIONS)


def fit_costs(size_mb: float, steps: int, oracle_seconds: float, compiled: bool,
              compiled_oracle: str = "implicit") -> dict[str, float]:
    """Estimated CPU seconds of a fit of at most ``steps`` steps on each path.

    numpy: ``steps * NUMPY_STEP_CALLS * oracle_seconds`` (the factored oracle's own
    estimate, :meth:`~synth_core.inference.FactoredOracle.estimated_call_seconds`);
    jax with ``compiled_oracle``: its ``COMPILE_SECONDS`` unless the structure was
    compiled with it before, plus ``steps * COMPILED_STEP_SECONDS_PER_MB * size_mb``.
    """
    return {"numpy": steps * NUMPY_STEP_CALLS * oracle_seconds,
            "jax": (0.0 if compiled else COMPILE_SECONDS[compiled_oracle]) +
            steps * COMPILED_STEP_SECONDS_PER_MB[compiled_oracle] * size_mb}


def expand_potentials(sizes: Mapping[str, int], potentials: Mapping[Clique, np.ndarray],
                      cliques: Sequence[Clique]) -> dict[Clique, np.ndarray]:
    """Warm start: the old log-potentials re-expressed on ``cliques`` (same distribution).

    Each old potential is added, broadcast, to the smallest new clique that
    contains it (``mbi``'s ``CliqueVector.expand``); new cliques no old one
    maps to start at zero.
    """
    out = {cl: np.zeros([sizes[c] for c in cl]) for cl in cliques}
    for old, theta in potentials.items():
        home = smallest_holder(sizes, old, list(cliques))
        if home is None:
            raise ValueError(f"warm start: no clique of the fit contains {old}")
        perm = [list(old).index(c) for c in home if c in old]
        shape = [sizes[c] if c in old else 1 for c in home]
        out[home] = out[home] + np.transpose(theta, perm).reshape(shape)
    return out


def _clique_vector(domain, tables: Mapping[Clique, np.ndarray]):
    """An ``mbi.CliqueVector`` of numpy tables (call inside :func:`estimation`)."""
    import jax.numpy as jnp

    m = _mbi()
    return m.CliqueVector(domain, list(tables), {
        cl: m.mbi.Factor(domain.project(cl), jnp.asarray(t, dtype=jnp.float64))
        for cl, t in tables.items()})


# -- the numpy path ----------------------------------------------------------------

class L2Loss:
    """``L(mu) = sum_i |P_{r_i} mu_{C_i} - y_i|^2 / (2 s_i^2)`` over identity measurements.

    The potentials live on the maximal measured cliques (``mbi``'s
    ``maximal_subset``, :func:`~synth_core.inference.maximal_cliques`); each
    measurement reads the smallest one ``C_i`` holding its clique ``r_i``
    (``mbi``'s routing), so the gradient
    ``dL/dmu_C = sum_{i: C_i = C} P_{r_i}^T (P_{r_i} mu_C - y_i) / s_i^2``
    sits where ``mbi``'s does. ``lipschitz`` is ``mbi``'s
    ``max_C sum_{i: C_i = C} |C| / (|r_i| s_i^2)`` (exact for identity queries).
    """

    def __init__(self, sizes: Mapping[str, int], measurements: Sequence[FitMeasurement]):
        self.sizes = dict(sizes)
        self.cliques = maximal_cliques([m.clique for m in measurements])
        self.terms = []
        blocks: dict[Clique, float] = {}
        for m in measurements:
            r = tuple(m.clique)
            home = smallest_holder(self.sizes, r, self.cliques)
            s = max(float(m.stddev), 1e-12)
            y = np.asarray(m.values, dtype=np.float64).reshape([self.sizes[c] for c in r])
            drop = tuple(i for i, c in enumerate(home) if c not in r)
            kept = [c for c in home if c in r]
            to_r = [kept.index(c) for c in r]
            back = [list(r).index(c) for c in kept]
            shape = [self.sizes[c] if c in r else 1 for c in home]
            self.terms.append((home, drop, to_r, back, shape, y, 1.0 / s))
            blocks[home] = blocks.get(home, 0.0) + cells(self.sizes, home) / cells(self.sizes, r) / s ** 2
        self.lipschitz = max(blocks.values()) if blocks else 1.0

    def _residuals(self, mu: Mapping[Clique, np.ndarray]):
        for home, drop, to_r, back, shape, y, inv_s in self.terms:
            table = mu[home]
            proj = np.transpose(table.sum(axis=drop) if drop else table, to_r)
            yield home, back, shape, (proj - y) * inv_s, inv_s

    def __call__(self, mu: Mapping[Clique, np.ndarray]) -> float:
        return float(sum(0.5 * np.sum(d * d) for _, _, _, d, _ in self._residuals(mu)))

    def grad(self, mu: Mapping[Clique, np.ndarray]) -> dict[Clique, np.ndarray]:
        g = {cl: np.zeros_like(mu[cl]) for cl in self.cliques}
        for home, back, shape, d, inv_s in self._residuals(mu):
            g[home] = g[home] + np.transpose(d * inv_s, back).reshape(shape)
        return g


def _dot(a: Mapping[Clique, np.ndarray], b: Mapping[Clique, np.ndarray]) -> float:
    """``<a, b>`` summed over cliques (elementwise, not BLAS: BLAS threads stall on a busy machine)."""
    return float(sum(np.sum(a[cl] * b[cl]) for cl in a))


def numpy_mirror_descent(oracle: TreeOracle, loss_fn: L2Loss, potentials: dict, total: float,
                         tol: float, max_blocks: int) -> tuple[dict, dict, float, int]:
    """The compiled program's mirror descent, step for step, in numpy.

    Start at ``alpha = 2 / (L * total)``. A step evaluates the trial point
    ``theta' = theta - alpha * grad L(mu)``: it is accepted if
    ``L(mu) - L(mu') >= alpha / 2 * <grad L(mu), mu - mu'>`` (Armijo), and
    alpha grows by 1.01; otherwise theta stays and alpha halves. Blocks of
    :data:`STEPS_PER_BLOCK` steps; the fit stops after ``max_blocks`` blocks
    or when two blocks in a row improve the loss by at most
    ``tol * max(|L|, 1)``. Returns (potentials, marginals, loss, blocks).
    """
    alpha = 2.0 / (loss_fn.lipschitz * total)
    theta, mu, loss, grad = potentials, None, np.inf, None
    trial = potentials
    prev, stalls, blocks = np.inf, 0, 0
    while blocks < max_blocks and stalls < 2:
        for _ in range(STEPS_PER_BLOCK):
            trial_mu = oracle(trial, total)
            trial_loss = loss_fn(trial_mu)
            if grad is None:
                accept = True
            else:
                diff = {cl: mu[cl] - trial_mu[cl] for cl in mu}
                accept = loss - trial_loss >= 0.5 * alpha * _dot(grad, diff)
                alpha = 1.01 * alpha if accept else 0.5 * alpha
            if accept:
                theta, mu, loss = trial, trial_mu, trial_loss
                grad = loss_fn.grad(mu)
            trial = {cl: theta[cl] - alpha * grad[cl] for cl in theta}
        converged = prev - loss <= tol * max(abs(loss), 1.0)
        stalls = stalls + 1 if converged else 0
        prev, blocks = loss, blocks + 1
    return theta, mu, loss, blocks


@functools.lru_cache(maxsize=1)
def _blas_threads_setter():
    """OpenBLAS's ``openblas_set_num_threads_local`` (this thread only; returns the previous
    count), from the OpenBLAS library numpy loaded, or ``None`` if there is none."""
    import ctypes

    try:
        with open("/proc/self/maps") as fh:
            path = next((line.split()[-1] for line in fh
                         if "openblas" in line.lower() and ".so" in line), None)
        setter = ctypes.CDLL(path).openblas_set_num_threads_local if path else None
    except (OSError, AttributeError):
        return None
    if setter is not None:
        setter.argtypes, setter.restype = [ctypes.c_int], ctypes.c_int
    return setter


@contextlib.contextmanager
def single_blas_thread() -> Iterator[None]:
    """OpenBLAS on one thread (this Python thread only) inside the block.

    The factored oracle's contractions are many small matrix products
    (``np.einsum`` along a planned path calls BLAS); OpenBLAS's worker
    threads spin between them. On an Adult 45 MB model one oracle call cost
    113 CPU ms with OpenBLAS's two threads and 16 with one (wall time fell
    too, on a machine with other work). The results are the same: each
    product's cells are computed by the same kernel either way.
    """
    setter = _blas_threads_setter()
    if setter is None:
        yield
        return
    previous = setter(1)
    try:
        yield
    finally:
        setter(previous)


# -- the fitted model ---------------------------------------------------------------

@dataclass
class FittedModel:
    """A Private-PGM model: its log-potentials and the numpy view of its marginals.

    ``potentials`` are the fit's log-potentials (numpy, on ``cliques``) and
    ``fitted_marginals`` the fit's marginal counts on them; ``path`` is the
    engine that fitted it (``numpy`` or ``jax``). ``mrf``, the ``mbi`` model,
    is built on first use (it imports JAX).
    """

    sizes: dict[str, int]
    marginals: ModelMarginals
    cliques: tuple[Clique, ...]
    total: float
    size_mb: float
    potentials: dict[Clique, np.ndarray] | None = None
    fitted_marginals: dict[Clique, np.ndarray] | None = None
    iterations: int = 0
    seconds: float = 0.0
    path: str = ""

    @functools.cached_property
    def mrf(self):
        """The ``mbi.MarkovRandomField`` of the potentials (``None`` for the uniform model)."""
        if self.potentials is None:
            return None
        domain = make_domain(self.sizes)
        with estimation():
            return _mbi().mbi.MarkovRandomField(
                potentials=_clique_vector(domain, self.potentials),
                marginals=_clique_vector(domain, self.fitted_marginals), total=float(self.total))

    def counts(self, clique: Sequence[str]) -> np.ndarray:
        return self.marginals.counts(clique)

    def counts_many(self, cliques: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        """``counts`` of many cliques at once (a round's candidates), on two threads."""
        return self.marginals.many(cliques)

    def sample(self, rows: int, seed: int) -> pd.DataFrame:
        """Synthetic records (integer codes) drawn from the model, a function of ``seed`` alone.

        Every fitted model, whichever path fitted it, samples in numpy from its
        calibrated junction tree (:func:`~synth_core.inference.sample_records`:
        each node's new columns drawn given its separator, stratified per
        separator value) with ``numpy.random.default_rng(seed)``. The draws
        depend on nothing else in the process: not on ``PYTHONHASHSEED``,
        NumPy's global generator, thread counts or earlier runs.
        """
        columns = list(self.sizes)
        rng = np.random.default_rng(seed)
        if self.potentials is None:  # uniform model: nothing measured
            return pd.DataFrame({c: rng.integers(0, s, rows) for c, s in self.sizes.items()})
        data = sample_records(self.marginals, int(rows), rng)
        return pd.DataFrame({c: data[c] for c in columns})


def minimum_variance_total(measurements: Sequence[FitMeasurement]) -> float:
    """``mbi``'s minimum-variance unbiased total, in numpy.

    Each measurement ``y`` (identity query over its clique) estimates the total
    by ``sum(y)`` with variance ``s^2 * len(y)``; the estimate is their
    inverse-variance weighted mean, at least 1 (1 with no measurement).
    """
    if not measurements:
        return 1.0
    estimates = np.array([np.sum(np.asarray(m.values, dtype=np.float64)) for m in measurements])
    variances = np.array([float(m.stddev) ** 2 * np.size(m.values) for m in measurements])
    return max(1.0, float(np.average(estimates, weights=1.0 / variances)))


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
        oracle: ``hugin``, ``implicit`` (see :data:`ORACLE_NAMES`) or ``auto``
            (by junction-tree size, :data:`IMPLICIT_FROM_MB`); compiled path only.
        path: ``numpy``, ``jax`` or ``auto`` (numpy below :data:`NUMPY_BELOW_MB`
            junction-tree MB, from there on the cheaper by :func:`fit_costs`);
            ``auto`` yields to the environment variable :data:`FIT_PATH_ENV`
            when it is set.
    """

    def __init__(self, sizes: Mapping[str, int], *, max_iters: int = 1000, tol: float = 1e-6,
                 oracle: str = "auto", path: str = "auto"):
        if oracle not in ("auto", *ORACLE_NAMES):
            raise ValueError(f"unknown oracle {oracle!r}; choose auto, {', '.join(ORACLE_NAMES)}")
        if path not in ("auto", *FIT_PATHS):
            raise ValueError(f"unknown fit path {path!r}; choose auto, {', '.join(FIT_PATHS)}")
        prepare_process()
        self.sizes = dict(sizes)
        self.max_iters = int(max_iters)
        self.tol = float(tol)
        self.oracle = oracle
        self.path = path
        self.last_oracle: str | None = None
        self.last_path: str | None = None
        self.compiles = 0
        #: the (clique structure, oracle) pairs this estimator fitted on the compiled path
        self._compiled: set[tuple[tuple[Clique, ...], str]] = set()

    @property
    def domain(self):
        return make_domain(self.sizes)

    def compiled_oracle(self, size_mb: float) -> str:
        """The oracle a compiled fit of a ``size_mb`` MB junction tree uses: the estimator's,
        or by size with ``auto`` (implicit from :data:`IMPLICIT_FROM_MB`)."""
        if self.oracle != "auto":
            return self.oracle
        return "implicit" if size_mb >= IMPLICIT_FROM_MB else "hugin"

    def choose_path(self, size_mb: float, steps: int | None = None,
                    oracle_seconds: float | None = None, compiled: bool = False) -> str:
        """The fit path of a junction tree of ``size_mb`` MB and a fit of at most ``steps``
        steps (default ``max_iters``): numpy below :data:`NUMPY_BELOW_MB`; from it on the
        cheaper path by :func:`fit_costs`, given the factored oracle's estimated seconds per
        call (``oracle_seconds``, numpy if not given), the compiled path's oracle and
        whether this estimator compiled the structure with it before. Deterministic: it
        reads no clock."""
        forced = self.path if self.path != "auto" else os.environ.get(FIT_PATH_ENV, "").strip()
        if forced in FIT_PATHS:
            return forced
        if size_mb < NUMPY_BELOW_MB or oracle_seconds is None:
            return "numpy"
        steps = self.max_iters if steps is None else int(steps)
        costs = fit_costs(size_mb, steps, oracle_seconds, compiled, self.compiled_oracle(size_mb))
        return "numpy" if costs["numpy"] <= costs["jax"] else "jax"

    def uniform(self, total: float) -> FittedModel:
        return FittedModel(self.sizes, ModelMarginals.uniform(self.sizes, total), (), total, 0.0)

    def estimate_total(self, measurements: Sequence[FitMeasurement]) -> float:
        """Minimum-variance unbiased estimate of the number of records (unbounded DP)."""
        return minimum_variance_total(measurements)

    def fit(self, measurements: Sequence[FitMeasurement], total: float,
            warm: FittedModel | None = None, max_iters: int | None = None,
            tol: float | None = None) -> FittedModel:
        """Fit a model to the measurements, warm-started from ``warm`` if given."""
        start = time.perf_counter()
        if not measurements:
            return self.uniform(total)
        merged = merge_repeated(measurements)
        loss_fn = L2Loss(self.sizes, merged)
        cliques = tuple(loss_fn.cliques)
        if warm is not None and warm.potentials is not None:
            potentials = expand_potentials(self.sizes, warm.potentials, cliques)
        else:
            potentials = {cl: np.zeros([self.sizes[c] for c in cl]) for cl in cliques}
        iters = self.max_iters if max_iters is None else int(max_iters)
        max_blocks = max(1, -(-iters // STEPS_PER_BLOCK))
        tol = self.tol if tol is None else float(tol)
        size = model_size_mb(self.sizes, cliques)
        oracle = tree = None
        if size >= FACTORED_FROM_MB:
            tree = junction_tree_of(self.sizes, cliques)
            oracle = FactoredOracle(self.sizes, cliques, tree)
        path = self.choose_path(size, max_blocks * STEPS_PER_BLOCK,
                                None if oracle is None else oracle.estimated_call_seconds(),
                                (cliques, self.compiled_oracle(size)) in self._compiled)
        if path == "numpy":
            tree = tree or junction_tree_of(self.sizes, cliques)
            oracle = oracle or TreeOracle(self.sizes, cliques, tree)
            self.last_oracle = "factored" if isinstance(oracle, FactoredOracle) else "tree"
            with single_blas_thread():
                fitted, mu, _, blocks = numpy_mirror_descent(
                    oracle, loss_fn, potentials, float(total), tol, max_blocks)
                beliefs, edges = oracle.beliefs(fitted), tree[1]
        else:
            with estimation():
                fitted, mu, blocks, beliefs, edges = self._fit_compiled(
                    merged, cliques, potentials, float(total), tol, max_blocks, size)
            self._compiled.add((cliques, self.compiled_oracle(size)))
        self.last_path = path
        view = ModelMarginals(self.sizes, beliefs, edges, float(total))
        return FittedModel(self.sizes, view, cliques, float(total), size, potentials=fitted,
                           fitted_marginals=mu, iterations=int(blocks) * STEPS_PER_BLOCK,
                           seconds=time.perf_counter() - start, path=path)

    def _fit_compiled(self, merged, cliques, potentials, total, tol, max_blocks, size):
        """The fit as one compiled JAX program (``mbi``'s loss, oracle and junction tree)."""
        import jax.numpy as jnp

        m = _mbi()
        domain = self.domain
        linear = [m.LinearMeasurement(jnp.asarray(x.values, dtype=jnp.float64), tuple(x.clique),
                                      stddev=float(x.stddev)) for x in merged]
        loss_fn = m.from_linear_measurements(linear, domain)
        assert tuple(tuple(cl) for cl in loss_fn.cliques) == cliques
        tree, _ = m.junction_tree.make_junction_tree(domain, cliques)
        tree_cliques = tuple(sorted(tuple(cl) for cl in tree.nodes))
        oracle = self.compiled_oracle(size)
        program = _fit_program()
        start = _clique_vector(domain, potentials)
        with _JAX_LOCK:
            before = program._cache_size()
            fitted, marginals, loss, blocks = program(start, loss_fn, total, tol, max_blocks, oracle)
            if not np.isfinite(float(loss)) and oracle != "hugin":
                # a message of the implicit oracle underflowed to all zeros
                # (extreme potentials): refit with Hugin, exact at any scale
                oracle = "hugin"
                fitted, marginals, loss, blocks = program(start, loss_fn, total, tol,
                                                          max_blocks, oracle)
            compiled = program._cache_size() - before
            self.compiles += compiled
            bound_compiled_programs()
            if compiled or size >= TRIM_FROM_MB:
                # what a compile or a large fit freed; a small refit of a known
                # structure frees little (the cost of trimming was not measured)
                return_freed_memory()
        self.last_oracle = oracle
        log_potentials = {cl: np.asarray(fitted[cl].datavector(flatten=False)) for cl in cliques}
        mu = {cl: np.asarray(marginals[cl].datavector(flatten=False)) for cl in cliques}
        edges = [(tuple(a), tuple(b)) for a, b in tree.edges]
        beliefs = calibrate(self.sizes, log_potentials, tree_cliques, edges)
        return log_potentials, mu, blocks, beliefs, edges


def junction_tree_of(sizes: Mapping[str, int], cliques: Sequence[Clique]):
    """The numpy junction tree (:func:`synth_core.inference.junction_tree`), cached per structure."""
    return _junction_tree_cached(tuple(sizes.items()), tuple(cliques))


@functools.lru_cache(maxsize=256)
def _junction_tree_cached(sizes: tuple, cliques: tuple):
    from .inference import junction_tree

    return junction_tree(dict(sizes), list(cliques))
