"""Conditional models fitted over the public patterns (conditional generation).

With public columns ``P`` (every record's values known, equal on neighbouring
tables) and private columns ``Q``, conditional generation keeps each record's
public values and only needs ``p(x_Q | x_P)``. A *pattern model* keeps the
public columns' empirical distribution exactly and models the private
columns given them:

    ``p(x) = p_hat(x_P) p_theta(x_Q | x_P)``,
    ``p_theta(x_Q | x_P) ∝ exp(sum_C theta_C(x_C))``

over the fitted cliques ``C`` that hold a private column (a potential on
public columns only is a constant given ``x_P``). Each distinct public
pattern ``k`` (all public columns; weight ``w_k``, its number of records)
has its conditional distribution ``p_k``. No junction tree over the public
columns is built: they are never summed over.

**Evidence.** The cliques whose potentials read public columns (set ``D``)
reach the private columns through their private parts; ``U`` is the union
of those parts. The potentials on private columns only (set ``F``) form a
base model ``q(x_Q) ∝ exp(sum_{C in F} theta_C)`` (a junction tree over
``Q`` with ``U`` as one of its cliques). Then

    ``p_k(x_Q) = r_k(x_U) q(x_Q | x_U)``,
    ``r_k(x_U) ∝ q(x_U) exp(sum_{C in D} theta_C(e_C(k), x_{Q_C}))``,

with ``e_C(k)`` the pattern's codes on ``C``'s public columns: a pattern
costs ``|U|`` cells; the rest is computed once for all patterns. A marginal
on a clique ``r`` with public part ``E`` and private part ``R`` is

    ``M_r(e, x_R) = sum_{x_U} R_e(x_U) q(x_R | x_U)``,
    ``R_e(x_U) = sum_{k: e_E(k) = e} w_k r_k(x_U)``.

**Fit.** Private-PGM's mirror descent (:func:`synth_core.model.numpy_mirror_descent`:
``theta <- theta - alpha grad_mu L`` with Armijo search) with these marginals
as the oracle. The log-partition ``A(theta) = sum_k w_k log Z_k(theta)`` is
convex with gradient the marginals ``mu``, so each step is a descent step of
``L(mu(theta))`` as for a Markov random field. The exact public measurements
(the conditioning marginals) equal ``p_hat``'s marginals: their loss terms
are constants and are left out.

The model is used where it is the smaller of the two: ``K x |U|`` cells
(``K`` patterns) at most :data:`JOINT_CELLS_FACTOR` times the cells of the
joint model's junction tree (over
every measured clique, the conditioning marginals included) and at most
:data:`PATTERN_MAX_CELLS`; otherwise the fit is the joint Private-PGM model
(:class:`synth_core.model.PGMEstimator`), cold-started. With many public
columns (Adult, 75%: 34,222 patterns, ``|U|`` 2 to 64 cells against a joint
tree of 20 to 45 MB) the pattern model is the small one; with few (Adult
with ``sex`` and ``race`` public) the joint model is, and fitting the
pattern model there made Conditional AIM at epsilon 0.3 take 262 CPU s
instead of 10.4 (``benchmarks/runtime_model.py``).
Privacy: the model is a function of the noisy measurements and of the
public columns, which neighbouring tables share: post-processing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np

from .inference import ModelMarginals, TreeOracle, cells
from .model import (STEPS_PER_BLOCK, FitMeasurement, FittedModel, L2Loss, PGMEstimator,
                    expand_potentials, merge_repeated, model_size_mb, numpy_mirror_descent)

Clique = tuple[str, ...]

#: Largest ``patterns x |U|`` (cells of the per-pattern evidence tables) a
#: pattern model is fitted with; past it the joint model is fitted instead.
PATTERN_MAX_CELLS = 2 ** 22
#: A pattern model is fitted while its ``patterns x |U|`` cells are at most this
#: many times the cells of the joint model's junction tree (the smaller model wins).
JOINT_CELLS_FACTOR = 1.0
#: ``FittedModel.path`` / ``PGMEstimator.last_path`` of a pattern-model fit.
PATTERN_PATH = "patterns"
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def evidence_columns(sizes: Mapping[str, int], public: set, cliques: Sequence[Clique]
                     ) -> tuple[str, ...]:
    """``U``: the private columns that share a clique with a public column, in
    ``sizes`` order (the columns a pattern's evidence reaches)."""
    return tuple(c for c in sizes if c not in public
                 and any(c in cl and set(cl) & public for cl in cliques))


@dataclass(frozen=True)
class PublicPatterns:
    """The distinct rows of the public columns, with their numbers of records."""

    columns: tuple[str, ...]
    codes: np.ndarray        # (K, len(columns)) integer codes
    weights: np.ndarray      # (K,) records per pattern

    @staticmethod
    def of(codes: Mapping[str, np.ndarray], columns: Sequence[str]) -> "PublicPatterns":
        cols = tuple(columns)
        keys = np.stack([np.asarray(codes[c], dtype=np.int64) for c in cols], axis=1)
        patterns, counts = np.unique(keys, axis=0, return_counts=True)
        return PublicPatterns(cols, patterns, counts.astype(np.float64))

    def __len__(self) -> int:
        return len(self.weights)

    def index(self, columns: Sequence[str], sizes: Mapping[str, int]) -> np.ndarray:
        """Each pattern's row-major flat code on ``columns`` (0 for no column)."""
        idx = np.zeros(len(self), dtype=np.int64)
        for c in columns:
            idx = idx * sizes[c] + self.codes[:, self.columns.index(c)]
        return idx

    def of_records(self, codes: Mapping[str, np.ndarray]) -> np.ndarray:
        """The pattern index of every record of ``codes`` (each must be a pattern)."""
        keys = np.stack([np.asarray(codes[c], dtype=np.int64) for c in self.columns], axis=1)
        both = np.concatenate([self.codes, keys])
        _, inverse = np.unique(both, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        lookup = np.full(int(inverse.max()) + 1, -1, dtype=np.int64)
        lookup[inverse[:len(self)]] = np.arange(len(self))
        found = lookup[inverse[len(self):]]
        if np.any(found < 0):
            raise ValueError("a record's public values are not among the fitted patterns")
        return found


class PatternStructure:
    """The plan of a pattern model for one set of fitted cliques (see the module doc)."""

    def __init__(self, sizes: Mapping[str, int], patterns: PublicPatterns,
                 cliques: Sequence[Clique]):
        self.sizes = dict(sizes)
        self.patterns = patterns
        public = set(patterns.columns)
        self.private_sizes = {c: s for c, s in self.sizes.items() if c not in public}
        self.cliques = [tuple(cl) for cl in cliques]
        self.evidence = [cl for cl in self.cliques if set(cl) & public]
        self.free = [cl for cl in self.cliques if not set(cl) & public]
        self.U = evidence_columns(self.sizes, public, self.cliques)
        self.u_shape = tuple(self.sizes[c] for c in self.U)
        base = self.free + ([self.U] if self.U else [])
        base += [(c,) for c in self.private_sizes if not any(c in cl for cl in base)]
        self.oracle = TreeOracle(self.private_sizes, base)
        # per evidence clique: its pattern rows and its layout (E, Q in U's order);
        # the cliques are grouped by their private part Q
        self._groups: dict[Clique, list] = {}
        for cl in self.evidence:
            E = tuple(c for c in cl if c in public)
            Q = tuple(c for c in self.U if c in cl)
            self._groups.setdefault(Q, []).append(
                (cl, patterns.index(E, self.sizes), [cl.index(c) for c in E + Q],
                 cells(self.sizes, E)))
        self._index: dict[Clique, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    @property
    def evidence_cells(self) -> int:
        return len(self.patterns) * int(np.prod(self.u_shape, dtype=np.int64))

    def base_model(self, theta: Mapping[Clique, np.ndarray]) -> ModelMarginals:
        """``q``: the calibrated base model of the private-only potentials."""
        beliefs = self.oracle.beliefs({cl: theta[cl] for cl in self.free})
        return ModelMarginals(self.private_sizes, beliefs, self.oracle.edges, 1.0)

    def pattern_weights(self, theta: Mapping[Clique, np.ndarray], base: ModelMarginals
                        ) -> np.ndarray:
        """``w_k r_k(x_U)``, shape ``(K, |U|)`` (each row sums to its pattern's weight).

        Per private part ``Q`` the evidence ``exp(sum theta_C(e_C(k), x_Q))`` is formed
        on ``K x |Q|`` cells (scaled to max 1 per pattern), then multiplied into ``q(x_U)``.
        """
        K = len(self.patterns)
        p = np.broadcast_to(base.probability(self.U) if self.U else np.ones(()),
                            (K,) + self.u_shape).copy()
        for Q in self._groups:
            p *= self.evidence_table(theta, Q).reshape(
                (K,) + tuple(self.sizes[c] if c in Q else 1 for c in self.U))
        p = p.reshape(K, -1)
        mass = np.einsum("ku->k", p)  # a row sum (faster than ndarray.sum on short rows)
        p *= (self.patterns.weights / np.where(mass > 0, mass, 1.0))[:, None]
        return p

    def evidence_table(self, theta: Mapping[Clique, np.ndarray], Q: Clique) -> np.ndarray:
        """``exp(sum_{C in D, Q_C = Q} theta_C(e_C(k), x_Q))``, ``(K, |Q|)``, each row
        scaled to max 1."""
        log = np.zeros((len(self.patterns), cells(self.sizes, Q)))
        for cl, rows, perm, e_cells in self._groups[Q]:
            log += np.transpose(theta[cl], perm).reshape(e_cells, -1)[rows]
        log -= log.max(axis=1, keepdims=True)
        return np.exp(log, out=log)

    @property
    def two_parts(self) -> bool:
        """Whether the evidence falls on two disjoint private parts that make up ``U``
        (then the fit never forms ``K x |U|`` tables, see :meth:`_two_part_counts`)."""
        parts = list(self._groups)
        return len(parts) == 2 and not set(parts[0]) & set(parts[1])

    def _two_part_counts(self, theta: Mapping[Clique, np.ndarray], base: ModelMarginals,
                         total: float) -> dict[Clique, np.ndarray]:
        """The oracle with evidence ``a_k(x_G) b_k(x_H)`` on disjoint parts ``U = G + H``:
        ``r_k(g, h) = a_k(g) q(g, h) b_k(h) / Z_k``. Per pattern only the parts'
        marginals are formed, ``a_k (q b_k) / Z_k`` and ``b_k (q^T a_k) / Z_k``; the
        sum over patterns of ``w_k r_k`` is ``q * sum_k (w_k / Z_k) a_k b_k^T``."""
        G, H = self._groups
        a, b = self.evidence_table(theta, G), self.evidence_table(theta, H)
        q = base.probability(G + H).reshape(a.shape[1], b.shape[1])
        # two-operand einsums, not matmul: BLAS threads stall on a busy machine
        qb = np.einsum("kh,gh->kg", b, q)                 # sum_h q(g, h) b_k(h)
        scale = self.patterns.weights / np.maximum(np.einsum("kg,kg->k", a, qb), 1e-300)
        a_scaled = a * scale[:, None]
        parts = {G: a_scaled * qb, H: b * np.einsum("kg,gh->kh", a_scaled, q)}
        summed = q * np.einsum("kg,kh->gh", a_scaled, b)
        labels = G + H
        summed = np.transpose(summed.reshape([self.sizes[c] for c in labels]),
                              [labels.index(c) for c in self.U]).reshape(1, -1)
        public = set(self.patterns.columns)
        out, cache = {}, {("E", ()): summed}
        for cl in self.cliques:
            E = tuple(c for c in cl if c in public)
            keep = tuple(c for c in self.U if c in cl)
            if E and keep in parts:
                table, labels = self.by_public(E, parts[keep]), E + keep
                table = table.reshape([self.sizes[c] for c in labels])
                out[cl] = np.transpose(table, [labels.index(c) for c in cl]) * (
                    total / max(float(self.patterns.weights.sum()), 1e-300))
            elif not E:
                out[cl] = self.counts(cl, None, base, total, cache)
            else:
                return {}
        return out

    def grouping(self, E: Clique) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The patterns sorted by their code on ``E``, where each code's run starts, and the codes."""
        if E not in self._index:
            index = self.patterns.index(E, self.sizes)
            order = np.argsort(index, kind="stable")
            starts = np.flatnonzero(np.r_[True, np.diff(index[order]) != 0])
            self._index[E] = (order, starts, index[order][starts])
        return self._index[E]

    def by_public(self, E: Clique, values: np.ndarray) -> np.ndarray:
        """``out[e] = sum of values[k] over the patterns k with code e on E`` (rows)."""
        if not E:
            return np.einsum("ku->u", values.reshape(len(values), -1)).reshape(
                (1,) + values.shape[1:])
        order, starts, codes = self.grouping(E)
        out = np.zeros((cells(self.sizes, E),) + values.shape[1:])
        out[codes] = np.add.reduceat(values[order], starts, axis=0)
        return out

    def counts(self, clique: Sequence[str], weights: np.ndarray, base: ModelMarginals,
               total: float, cache: dict | None = None) -> np.ndarray:
        """``M_r`` shaped by ``clique``'s sizes, summing to ``total`` (``cache`` keeps
        ``R_E`` and the weights summed to parts of ``U`` across calls)."""
        clique = tuple(clique)
        cache = {} if cache is None else cache
        public = set(self.patterns.columns)
        E = tuple(c for c in clique if c in public)
        keep = tuple(c for c in self.U if c in clique)
        rest = tuple(c for c in clique if c not in public and c not in self.U)
        if rest:
            RE = self._cached(cache, ("E", E), lambda: self.by_public(E, weights))
            joint = base.probability(self.U + rest).reshape(RE.shape[1], -1)
            qU = joint.sum(axis=1, keepdims=True)
            cond = np.divide(joint, qU, out=np.zeros_like(joint), where=qU > 0)
            u_axes = _LETTERS[1:1 + len(self.U)]
            r_axes = _LETTERS[1 + len(self.U):1 + len(self.U) + len(rest)]
            out_axes = "a" + "".join(u_axes[self.U.index(c)] for c in keep) + r_axes
            table = np.einsum(f"a{u_axes},{u_axes}{r_axes}->{out_axes}",
                              RE.reshape((-1,) + self.u_shape),
                              cond.reshape(self.u_shape + tuple(self.sizes[c] for c in rest)))
        elif not E:
            summed = self._cached(cache, ("E", ()), lambda: self.by_public((), weights))
            table = self._summed_to(summed, keep)
        else:
            reduced = self._cached(cache, ("keep", keep), lambda: self._summed_to(weights, keep))
            table = self.by_public(E, reduced)
        labels = E + keep + rest
        table = table.reshape([self.sizes[c] for c in labels])
        scale = total / max(float(self.patterns.weights.sum()), 1e-300)
        return np.transpose(table, [labels.index(c) for c in clique]) * scale

    @staticmethod
    def _cached(cache: dict, key, compute):
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    def _summed_to(self, weights: np.ndarray, keep: Clique) -> np.ndarray:
        """The ``(K, |U|)`` weights summed over the columns of ``U`` not in ``keep``."""
        if keep == self.U:
            return weights
        axes = _LETTERS[1:1 + len(self.U)]
        kept = "".join(a for a, c in zip(axes, self.U) if c in keep)
        table = np.einsum(f"k{axes}->k{kept}", weights.reshape((-1,) + self.u_shape))
        return table.reshape(len(weights), -1)

    def __call__(self, theta: Mapping[Clique, np.ndarray], total: float
                 ) -> dict[Clique, np.ndarray]:
        """The fit's oracle: ``M_C`` of every fitted clique."""
        base = self.base_model(theta)
        if self.two_parts:
            out = self._two_part_counts(theta, base, total)
            if out:
                return out
        weights = self.pattern_weights(theta, base)
        cache: dict = {}
        return {cl: self.counts(cl, weights, base, total, cache) for cl in self.cliques}


@dataclass
class PatternModel:
    """A fitted pattern model: answers marginals and draws private values given public ones."""

    structure: PatternStructure
    potentials: dict[Clique, np.ndarray]
    total: float
    iterations: int = 0
    seconds: float = 0.0
    path: str = PATTERN_PATH
    base: ModelMarginals = field(init=False)
    weights: np.ndarray = field(init=False)

    def __post_init__(self):
        self.base = self.structure.base_model(self.potentials)
        self.weights = self.structure.pattern_weights(self.potentials, self.base)
        self._cache: dict = {}

    @property
    def sizes(self) -> dict[str, int]:
        return self.structure.sizes

    @property
    def cliques(self) -> tuple[Clique, ...]:
        return tuple(self.structure.cliques)

    @property
    def size_mb(self) -> float:
        return 8 * self.structure.evidence_cells / 2 ** 20

    def counts(self, clique: Sequence[str]) -> np.ndarray:
        """``M_r(p)``, flattened like a data marginal."""
        return self.structure.counts(clique, self.weights, self.base, self.total,
                                     self._cache).reshape(-1)

    def counts_many(self, cliques: Sequence[Sequence[str]]) -> dict[Clique, np.ndarray]:
        return {tuple(cl): self.counts(cl) for cl in dict.fromkeys(tuple(c) for c in cliques)}


class PatternEstimator(PGMEstimator):
    """A :class:`~synth_core.model.PGMEstimator` that fits pattern models where they
    are small (see the module doc), with the settings of the estimator it replaces."""

    @classmethod
    def replacing(cls, inner: PGMEstimator, patterns: PublicPatterns,
                  max_cells: int = PATTERN_MAX_CELLS) -> "PatternEstimator":
        est = cls.__new__(cls)
        est.__dict__.update(inner.__dict__)
        est.patterns = patterns
        est.max_cells = int(max_cells)
        est._structures = {}
        return est

    def structure(self, cliques: Sequence[Clique],
                  measured: Sequence[Clique] | None = None) -> PatternStructure | None:
        """The pattern model's plan for the private ``cliques``; ``None`` when its
        ``patterns x |U|`` cells pass :attr:`max_cells` or :data:`JOINT_CELLS_FACTOR`
        times the cells of the joint model's junction tree over ``measured``
        (every measured clique; default ``cliques``)."""
        measured = tuple(cliques) if measured is None else tuple(measured)
        key = (tuple(cliques), measured)
        if key not in self._structures:
            U = evidence_columns(self.sizes, set(self.patterns.columns), cliques)
            pattern_cells = len(self.patterns) * cells(self.sizes, U)
            joint_cells = model_size_mb(self.sizes, list(dict.fromkeys(measured))) * 2 ** 20 / 8
            small = pattern_cells <= min(self.max_cells, JOINT_CELLS_FACTOR * joint_cells)
            self._structures[key] = PatternStructure(self.sizes, self.patterns, tuple(cliques)) \
                if small else None
        return self._structures[key]

    def fit(self, measurements: Sequence[FitMeasurement], total: float,
            warm=None, max_iters: int | None = None, tol: float | None = None):
        start = time.perf_counter()
        public = set(self.patterns.columns)
        private = merge_repeated([m for m in measurements if not set(m.clique) <= public])
        loss_fn = L2Loss(self.sizes, private)
        structure = self.structure(tuple(loss_fn.cliques), [m.clique for m in measurements])
        if structure is None:
            joint_warm = warm if isinstance(warm, FittedModel) else None
            return super().fit(measurements, total, warm=joint_warm, max_iters=max_iters, tol=tol)
        cliques = structure.cliques
        if isinstance(warm, PatternModel):
            potentials = expand_potentials(self.sizes, warm.potentials, cliques)
        else:
            potentials = {cl: np.zeros([self.sizes[c] for c in cl]) for cl in cliques}
        iters = self.max_iters if max_iters is None else int(max_iters)
        blocks = 0
        if private:
            potentials, _, _, blocks = numpy_mirror_descent(
                structure, loss_fn, potentials, float(total), self.tol if tol is None else float(tol),
                max(1, -(-iters // STEPS_PER_BLOCK)))
        self.last_path = PATTERN_PATH
        return PatternModel(structure, potentials, float(total),
                            iterations=int(blocks) * STEPS_PER_BLOCK,
                            seconds=time.perf_counter() - start)
