"""Conditional generation (Maddock, Gade, Cormode, Bullock 2025, section 3.3).

With public columns ``P`` (known for every record) and private columns ``Q``,
conditional generation keeps every record's real public values and draws only
its private values from the fitted model, conditioned on them:
``x_Q ~ p(x_Q | x_P = record's public values)``. The public marginals of the
output then equal the input's exactly.

**Exact sampling.** A Private-PGM model is a calibrated junction tree with
clique beliefs ``beta_C``; rooted anywhere,
``p(x) = beta_root * prod_{C != root} p(x_C | x_{S_C})`` with ``S_C`` the
separator to the parent. Fixing ``x_P`` turns every factor into a table over
its clique's private columns. For each record we pass messages from the
leaves to the root (each clique sums its private columns outside the
separator), draw the root's private columns from the normalised product,
then each child's remaining private columns given what its parent drew. This
is exact for the model: nothing is rejected or truncated. Records with the
same public values (restricted to a connected part of the tree) share their
messages, so the work grows with the number of distinct public patterns and
the size of the cliques' *private* parts, not with the public columns.

**Low-variance draws.** Records that share a table row (the same public
pattern and, further down the tree, the same values already drawn) are
drawn together by systematic sampling: for ``m`` such records the points
``(u + j) / m``, ``j = 0..m-1`` (one uniform ``u`` per group), are put through
the row's inverse CDF and handed to the records in a random order. Each
record's point is still uniform on ``[0, 1)``, so each record's values have
exactly the model's conditional distribution; but each group's counts are
the expected counts rounded up or down, instead of multinomial. It is the
conditional counterpart of ``mbi``'s own randomized rounding, which plain
(unconditional) sampling uses. :data:`CONDITIONAL_SAMPLING` chooses it;
``"iid"`` (independent draws per record) is kept for comparisons.

**Conditioning marginals.** Which public structure the model learns is
decided before fitting: :func:`conditioning_marginals` picks the exact public
marginals (free) that enter the fit, under a size bound, and reports the ones
it left out. (Measuring instead the maximal cliques of their junction tree,
which implies them all, made the first fit on Adult with 11 public columns
4.6 times faster and 0.8 GB leaner, but raised Conditional AIM's error on
25% public columns from 0.147 to 0.160 over seeds 0-1: the pairs stay.) The seed paper restricts the public marginals used for
conditioning in the same way because conditioning on many public columns
exhausts memory. The default bound, :data:`CONDITION_MAX_MB` = 5 MB, keeps
every conditioning marginal at 25% and 50% public columns of Adult; at 75%
(11 public columns) it keeps 51 of 66 with a 4.4 MB junction tree where a
10 MB bound keeps 51 with 9.4 MB (one pair of equal weight swapped for
another: education x occupation, which doubles the tree, for workclass x
native-country), and every fit of the run is that much smaller.

**The fitted model.** By default (:data:`CONDITIONAL_MODEL` ``"patterns"``)
a conditional run fits a *pattern model* (:mod:`synth_core.pattern_model`):
the public columns' empirical distribution, exact, and the private columns
given each distinct public pattern. Only the measurements with a private
column enter that fit (the conditioning marginals hold exactly under the
empirical distribution); its size grows with the patterns times the private
columns the public-reading cliques touch, not with the public columns'
junction tree, and nothing is compiled. The conditioning marginals are still
measured (free) and reported, and set the size limit's starting point. Where
a pattern model would be large (:data:`~synth_core.pattern_model.PATTERN_MAX_CELLS`)
or with ``"joint"``, the run fits the joint Private-PGM model of every column
with the conditioning marginals, as below.

**Fit oracle** (joint models). The rounds' fits of vJAM-PGM (100 iterations), and of
conditional runs with many conditioning marginals whose fits are short, use
Hugin message passing; fits of :data:`IMPLICIT_FROM_FIT_ITERS` iterations or
more (AIM's 1,000, every final fit) choose it by model size (see
:func:`short_fit_oracle`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .engine import PUBLIC, Candidate, RunState
from .errors import ConfigError
from .inference import ModelMarginals, sample_records
from .model import FittedModel, model_size_mb
from .pattern_model import PatternEstimator, PatternModel, PublicPatterns
from .workload import Workload

Clique = tuple[str, ...]

#: Cells of the per-pattern tables held at once while sampling (2^23 cells = 64 MB).
SAMPLING_BLOCK_CELLS = 2 ** 23
#: How conditional generation draws the records that share a table row:
#: ``"systematic"`` (counts rounded from the expected counts, see the module
#: doc) or ``"iid"`` (an independent draw per record).
CONDITIONAL_SAMPLING = "systematic"
SAMPLING_METHODS = ("systematic", "iid")
#: The model a conditional run fits: ``"patterns"`` (the private columns given
#: each public pattern, :mod:`synth_core.pattern_model`, where it is small) or
#: ``"joint"`` (a Private-PGM model of every column, with the conditioning marginals).
CONDITIONAL_MODEL = "patterns"
CONDITIONAL_MODELS = ("patterns", "joint")
#: Default bound (MB of junction tree) on the exact public marginals a
#: conditional model is fitted with.
CONDITION_MAX_MB = 5.0
#: With more conditioning marginals than this, fits of fewer than
#: :data:`IMPLICIT_FROM_FIT_ITERS` iterations use Hugin message passing instead
#: of choosing the oracle by model size (see :meth:`ConditionalSetup.fit_oracle`).
HUGIN_ABOVE_CONDITIONING = 20
#: Per-round fit iterations from which a conditional model keeps the oracle
#: chosen by size (implicit on large models) however many conditioning
#: marginals it has: its slower compile is repaid by faster iterations.
IMPLICIT_FROM_FIT_ITERS = 400


def effective_condition_bound(condition_max_mb: float, max_model_size: float) -> float:
    """The bound the conditioning marginals get: ``condition_max_mb`` capped at
    ``max_model_size`` (they are part of the model, so a larger bound could never
    be used). A model size below the default bound therefore needs no second
    setting; a bound that is not positive is an error."""
    if not condition_max_mb > 0:
        raise ConfigError(f"condition_max_mb must be a positive number of MB, got "
                          f"{condition_max_mb!r}.",
                          hint="It bounds the exact public marginals a conditional model is "
                               f"fitted with (default {CONDITION_MAX_MB:g} MB).")
    return float(min(condition_max_mb, max_model_size))


def short_fit_oracle(default: str, fit_iters: int) -> str:
    """Hugin for fits of fewer than :data:`IMPLICIT_FROM_FIT_ITERS` iterations, else ``default``.

    A fit of a new clique structure costs about ``compile + fit_iters x step``
    CPU seconds; on Adult's large models (20-34 MB) Hugin's compile is the
    cheaper (about 8-10 against 35 or more CPU s), the implicit oracle's step
    (0.014 against 0.079 s at 20.5 MB), so below about 400 iterations Hugin
    costs less (docs/performance.md, "Public columns on Adult")."""
    return "hugin" if fit_iters < IMPLICIT_FROM_FIT_ITERS else default


def conditional_workload(workload: Workload, public: Sequence[str]) -> Workload:
    """The workload of marginals with at least one private column (seed 002's ``W'``)."""
    pub = set(public)
    return workload.restrict(lambda cl: not set(cl) <= pub)


def conditioning_marginals(workload: Workload, public: Sequence[str], sizes: Mapping[str, int],
                           max_mb: float) -> tuple[list[Clique], list[Clique]]:
    """Exact public marginals to fit with, and those left out by the size bound.

    Candidates are the cliques of ``W+`` inside the public columns. Every
    public 1-way marginal is kept (they barely grow the model); larger ones
    are added by decreasing AIM weight (ties: fewer cells first) while the
    junction tree of the kept ones stays within ``max_mb``.
    """
    pub = set(public)
    weights = workload.candidate_weights()
    inside = [cl for cl in weights if set(cl) <= pub]
    kept = [cl for cl in inside if len(cl) == 1]
    dropped = []
    cells = {cl: int(np.prod([sizes[c] for c in cl], dtype=np.int64)) for cl in inside}
    for cl in sorted((cl for cl in inside if len(cl) > 1), key=lambda cl: (-weights[cl], cells[cl], cl)):
        covered = any(set(cl) <= set(k) for k in kept)
        if covered or model_size_mb(sizes, kept + [cl]) <= max_mb:
            if not covered:
                kept.append(cl)
        else:
            dropped.append(cl)
    return kept, dropped


def public_codes_of(private, columns: Sequence[str]) -> dict[str, np.ndarray] | None:
    """Every record's codes of the public ``columns``: held by the memory backend's
    table, loaded (these columns only) by an engine backend; ``None`` for a counter
    that offers neither."""
    data = getattr(private, "data", None)
    if isinstance(data, Mapping):
        return {c: data[c] for c in columns}
    schema = getattr(private, "schema", None)
    if not hasattr(private, "record_values") or schema is None:
        return None
    values = private.record_values(list(columns))
    codes = schema.project(list(columns)).encode(values, table_name=private.name,
                                                 role="private table")
    return {c: codes[c].to_numpy() for c in columns}


def check_conditional_split(columns: Sequence[str], public: Sequence[str], name: str) -> None:
    """Conditional generation needs at least one public and one private column."""
    if not public:
        raise ConfigError(f"Conditional {name} needs public columns to condition on.",
                          hint="Name them (--public-columns a,b), or turn off --conditional.")
    if set(columns) <= set(public):
        raise ConfigError(f"Every column is marked public: conditional {name} would have no "
                          "private column to generate.",
                          hint="Leave at least one column private, or release the table itself "
                               "(it is all public).")


def split_columns(value, what: str = "Public columns") -> tuple[str, ...]:
    """Columns given as a list or a comma-separated string, checked for repeats
    (``what`` names them in the error)."""
    if value is None:
        return ()
    if isinstance(value, str):
        value = [c.strip() for c in value.split(",") if c.strip()]
    cols = tuple(value)
    doubled = sorted({c for c in cols if cols.count(c) > 1}, key=str)
    if doubled:
        raise ConfigError(f"{what} listed twice: " + ", ".join(repr(c) for c in doubled) + ".")
    return cols


def check_known_columns(public: Sequence[str], sizes: Mapping[str, int]) -> None:
    unknown = [c for c in public if c not in sizes]
    if unknown:
        names = ", ".join(repr(c) for c in unknown)
        raise ConfigError(f"Unknown public column{'s' if len(unknown) > 1 else ''}: {names}.",
                          hint="Known columns: " + ", ".join(repr(c) for c in sizes) + ".",
                          column=unknown[0])


@dataclass
class ConditionalSetup:
    """The public-column side of a Private-PGM mechanism that can generate conditionally.

    Without ``conditional`` (or without public columns) it changes nothing:
    the mechanism runs on its workload, every clique private. With both, it
    restricts the workload to ``W'``, picks the exact conditioning marginals,
    answers them from the table's public columns, offsets the size limit by
    their model size and tells the API which columns to keep.
    """

    name: str
    public_columns: tuple[str, ...] = ()
    conditional: bool = False
    condition_max_mb: float = CONDITION_MAX_MB
    kept: list = field(default_factory=list)        # public cliques of W'+ measured exactly
    dropped: list = field(default_factory=list)     # ... left out by the bound
    base_mb: float = 0.0
    workload: Workload | None = None
    warnings: list = field(default_factory=list)
    model: str = field(default_factory=lambda: CONDITIONAL_MODEL)

    @staticmethod
    def create(name: str, public_columns, conditional: bool, condition_max_mb: float,
               max_model_size: float, public_without_conditional: bool = False) -> "ConditionalSetup":
        cols = split_columns(public_columns)
        if cols and not conditional and not public_without_conditional:
            raise ConfigError(f"{name} treats every column as private; it uses public columns "
                              "only to generate conditionally.",
                              hint="Turn on conditional generation (CLI --conditional, option "
                                   "conditional=True), choose vjam-pgm, or run without public "
                                   "columns.")
        return ConditionalSetup(name, cols, bool(conditional),
                                effective_condition_bound(condition_max_mb, max_model_size))

    @property
    def active(self) -> bool:
        return self.conditional and bool(self.public_columns)

    @property
    def conditional_on(self) -> tuple[str, ...]:
        return self.public_columns if self.active else ()

    def is_public(self, clique) -> bool:
        return bool(self.public_columns) and set(clique) <= set(self.public_columns)

    def prepare(self, state: RunState) -> Workload:
        """Check the split against the data; the workload the mechanism fits."""
        if self.conditional and not self.public_columns:
            self.warnings.append(f"Conditional {self.name} was asked for without public columns: "
                                 f"there is nothing to condition on, so this is plain {self.name}.")
        if not self.active:
            return state.workload
        sizes = state.data.sizes
        check_known_columns(self.public_columns, sizes)
        check_conditional_split(list(sizes), self.public_columns, self.name)
        if not state.neighbours.n_is_public:
            raise ConfigError(f"Conditional {self.name} is defined under bounded DP: every "
                              "record's public values, and so n, are public.",
                              hint="Use --neighbours bounded.")
        self.workload = conditional_workload(state.workload, self.public_columns)
        self.kept, self.dropped = conditioning_marginals(self.workload, self.public_columns,
                                                         sizes, self.condition_max_mb)
        self.base_mb = model_size_mb(sizes, self.kept)
        state.estimator.oracle = self.fit_oracle(state.estimator.oracle,
                                                 state.estimator.max_iters)
        self._use_patterns(state)
        return self.workload

    def _use_patterns(self, state: RunState) -> None:
        """Fit pattern models (:mod:`synth_core.pattern_model`) when ``model`` asks for
        them; only the public columns' codes are read (:func:`public_codes_of`)."""
        if self.model not in CONDITIONAL_MODELS:
            raise ConfigError(f"Unknown conditional model {self.model!r}.",
                              hint="Use one of: " + ", ".join(CONDITIONAL_MODELS) + ".")
        codes = public_codes_of(state.data.private, self.public_columns) \
            if self.model == "patterns" else None
        if codes is not None:
            patterns = PublicPatterns.of(codes, self.public_columns)
            state.estimator = PatternEstimator.replacing(state.estimator, patterns)

    def fit_oracle(self, default: str, fit_iters: int) -> str:
        """Hugin when many exact conditioning marginals enter short fits, else ``default``.

        The oracle's cost of a fit is about ``compile + fit_iters x step``.
        On Adult with 75% public columns (51 conditioning marginals, a 20.5 MB
        junction tree after 14 Conditional AIM rounds) Hugin compiles in about
        10 CPU s and steps in 0.079 s, the implicit oracle compiles in about 35
        CPU s and steps in 0.014 s: Hugin is cheaper below about 400 iterations
        (:data:`IMPLICIT_FROM_FIT_ITERS`; vJAM-PGM's 100), the implicit oracle
        above (AIM's 1,000). Hugin's programs are also the smaller ones for
        many conditioning marginals (1,391 against 1,981 MiB peak on a
        Conditional AIM run with a 9.4 MB conditioning model). With few
        conditioning marginals the size rule (implicit from 8 MB) stands:
        Hugin materialises every clique of a large model (Conditional AIM at
        25% public columns, 10 of them, epsilon 10 took 4,462 CPU s with it and
        1,539 CPU s with the size rule)."""
        many = len(self.kept) > HUGIN_ABOVE_CONDITIONING
        return short_fit_oracle(default, fit_iters) if many else default

    def initial_public(self) -> list[Candidate]:
        return [Candidate(cl, PUBLIC) for cl in self.kept]

    def public_answer(self, state: RunState, clique) -> np.ndarray:
        if not self.is_public(clique):  # never answer a private clique without noise
            raise ConfigError(f"Refusing an exact answer on {clique}: it has a private column.")
        return state.data.private.marginal(clique)

    def size_limit(self, max_size: float, fraction: float) -> float:
        """The adaptive model-size limit, grown from the conditioning marginals' size."""
        return self.base_mb + (max_size - self.base_mb) * fraction

    def to_report(self) -> dict | None:
        if not self.active:
            return None
        return {
            "conditioned_on": list(self.public_columns),
            "fitted_workload": "marginals with at least one private column "
                               f"({len(self.workload)} of the workload's cliques)",
            "condition_max_mb": self.condition_max_mb,
            "conditioning_marginals": [list(c) for c in self.kept],
            "conditioning_marginals_dropped": [list(c) for c in self.dropped],
            "conditioning_model_mb": self.base_mb,
            "sampling": CONDITIONAL_SAMPLING,
        }


def shuffled_records(rng: np.random.Generator,
                     *tables: pd.DataFrame) -> tuple[pd.DataFrame, ...]:
    """The tables' rows in one uniformly random order, the same for every table.

    Conditional generation produces its records in the private table's row order,
    record ``i`` with record ``i``'s public values. That order is private
    information whenever it depends on private values (a file sorted, grouped or
    appended by a private column): the position of a public value would then
    tell what the private column is there. A release therefore carries its
    records in a random order, drawn from the run's data-independent ``rng``.
    """
    order = rng.permutation(len(tables[0]))
    return tuple(t.iloc[order].reset_index(drop=True) for t in tables)


def generate_conditionally(model: FittedModel, codes: pd.DataFrame, public: Sequence[str],
                           rng: np.random.Generator,
                           method: str = CONDITIONAL_SAMPLING) -> pd.DataFrame:
    """Synthetic codes: each record's public codes kept, its private codes drawn from the
    model, in the records' order (a release shuffles them: :func:`shuffled_records`)."""
    public_codes = {c: codes[c].to_numpy() for c in public}
    if isinstance(model, PatternModel):
        drawn = generate_from_patterns(model, public_codes, rng, method)
    else:
        drawn = sample_private_given_public(model.marginals, public_codes, rng, method=method)
    return pd.DataFrame({c: np.asarray(drawn[c] if c in drawn else codes[c].to_numpy(),
                                       dtype=np.int64) for c in model.sizes})


def generate_from_patterns(model: PatternModel, public_codes: Mapping[str, np.ndarray],
                           rng: np.random.Generator,
                           method: str = CONDITIONAL_SAMPLING) -> dict[str, np.ndarray]:
    """Private codes of every record from a pattern model: the evidence columns ``U``
    from the record's pattern's ``r_k(x_U)`` (the records of a pattern drawn together
    by systematic sampling, or independently with ``"iid"``), then the other private
    columns from the base model ``q(. | x_U)`` (:func:`sample_private_given_public`
    with ``x_U`` as the evidence)."""
    structure = model.structure
    rows = structure.patterns.of_records(public_codes)
    U = structure.U
    if not U:
        drawn = sample_records(model.base, len(rows), rng)
    else:
        points = systematic_points(rows, rng) if method == "systematic" else rng.random(len(rows))
        flat = _draw(model.weights, points, rows)
        drawn = dict(zip(U, np.unravel_index(flat, structure.u_shape)))
        drawn.update(sample_private_given_public(model.base, drawn, rng, method=method))
    return {c: np.asarray(drawn[c], dtype=np.int64) for c in structure.private_sizes}


def _flat_index(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    index = np.zeros(len(codes[0]) if codes else 0, dtype=np.int64)
    for arr, s in zip(codes, sizes):
        index *= s
        index += arr
    return index


def systematic_points(groups: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One point in ``[0, 1)`` per entry of ``groups``: within each group of ``m``
    equal keys the points ``(u + j) / m`` for ``j = 0..m-1`` (one uniform ``u``
    per group) in a random order, so every point is uniform on ``[0, 1)`` and
    each group's points are evenly spread."""
    n = len(groups)
    order = np.lexsort((rng.random(n), groups))
    ordered = groups[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if n else np.zeros(0, int)
    counts = np.diff(np.r_[starts, n])
    rank = np.arange(n) - np.repeat(starts, counts)
    points = np.empty(n)
    points[order] = (np.repeat(rng.random(len(starts)), counts) + rank) / np.repeat(counts, counts)
    return points


def _draw(weights: np.ndarray, points: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """One category per record: the inverse CDF of its row of ``weights`` (rows
    of non-negative weights; record ``i`` uses row ``rows[i]``) at its point
    in ``[0, 1)``.

    Records that share a row share its cumulative sums (computed once per
    row), and each record's category is found by bisection on them: the first
    index whose cumulative weight exceeds the point times the row's total.
    """
    cum = np.cumsum(weights, axis=1)
    total = cum[:, -1]
    if not np.all(np.isfinite(total)) or np.any(total <= 0):
        raise ConfigError("The model gives probability zero to some record's public values; "
                          "it cannot be sampled conditionally.",
                          hint="Fit the model with the public 1-way marginals (conditional "
                               "mechanisms do this), or report this as a bug.")
    width = weights.shape[1]
    u = points * total[rows]
    flat = cum.reshape(-1)
    base = rows * width
    lo = np.zeros(len(points), dtype=np.int64)
    hi = np.full(len(points), width, dtype=np.int64)
    # invariant: cum[row, i] <= u for i < lo, and hi == width or cum[row, hi] > u
    for _ in range(int(width).bit_length()):
        mid = (lo + hi) // 2
        below = flat[base + np.minimum(mid, width - 1)] <= u
        lo = np.where(below & (mid < hi), mid + 1, lo)
        hi = np.where(below, hi, mid)
    return np.minimum(lo, width - 1)


class _Node:
    """A junction-tree clique with the evidence split of its conditional table."""

    def __init__(self, table: np.ndarray, labels: Clique, parent_labels: Clique,
                 public: set, sizes: Mapping[str, int]):
        self.ev = tuple(c for c in labels if c in public)
        self.q = tuple(c for c in labels if c not in public)
        self.up = tuple(c for c in self.q if c in parent_labels)        # private separator
        self.rest = tuple(c for c in self.q if c not in parent_labels)  # drawn here
        perm = [labels.index(c) for c in self.ev + self.up + self.rest]
        ev_cells = int(np.prod([sizes[c] for c in self.ev], dtype=np.int64))
        self.up_cells = int(np.prod([sizes[c] for c in self.up], dtype=np.int64))
        self.rest_cells = int(np.prod([sizes[c] for c in self.rest], dtype=np.int64))
        # rows: public values; columns: (separator's private values, own private values)
        self.table = np.transpose(table, perm).reshape(ev_cells, self.up_cells * self.rest_cells)


def sample_private_given_public(marginals: ModelMarginals, public_codes: Mapping[str, np.ndarray],
                                rng: np.random.Generator,
                                block_cells: int = SAMPLING_BLOCK_CELLS,
                                method: str = CONDITIONAL_SAMPLING) -> dict[str, np.ndarray]:
    """Draw each record's private columns from ``p(x_Q | x_P)`` (exactly, see the module doc).

    Args:
        marginals: the fitted model's calibrated junction tree.
        public_codes: the public columns' codes, one array per column, one entry per record.
        rng: the generator (the run's seed fixes the output).
        method: ``"systematic"`` (records sharing a table row drawn together, see
            the module doc) or ``"iid"``.

    Returns:
        the private columns' codes, one array per column (every column of the
        model not in ``public_codes``).
    """
    if method not in SAMPLING_METHODS:
        raise ConfigError(f"Unknown sampling method {method!r}.",
                          hint="Use one of: " + ", ".join(SAMPLING_METHODS) + ".")
    sizes = marginals.sizes
    public = set(public_codes)
    unknown = public - set(sizes)
    if unknown:
        raise ConfigError(f"Unknown public column(s): {', '.join(sorted(unknown))}.")
    n = len(next(iter(public_codes.values()))) if public_codes else 0
    out: dict[str, np.ndarray] = {}
    components: dict[int, list[Clique]] = {}
    for node, comp in marginals._component.items():
        components.setdefault(comp, []).append(node)
    for nodes in components.values():
        columns = set().union(*map(set, nodes))
        if columns <= public:
            continue
        root = max(sorted(nodes), key=lambda cl: len([c for c in cl if c not in public]))
        order, parents = marginals._rooted(set(nodes), root)
        children: dict[Clique, list[Clique]] = {nd: [] for nd in order}
        for child, par in parents.items():
            children[par].append(child)
        prepared = {}
        for nd in order:
            table, labels = marginals._conditional(nd, parents.get(nd), frozenset(nd))
            prepared[nd] = _Node(table, labels, parents.get(nd, ()), public, sizes)
        drawn = _sample_component(order, parents, children, prepared, public_codes, sizes, n,
                                  rng, block_cells, method == "systematic")
        out.update(drawn)
    for c in sizes:  # a private column in no clique: the model is uniform on it
        if c not in public and c not in out:
            out[c] = rng.integers(0, sizes[c], n)
    return {c: out[c] for c in sizes if c not in public}


def _sample_component(order, parents, children, prepared, public_codes, sizes, n, rng,
                      block_cells, systematic: bool) -> dict[str, np.ndarray]:
    ev_vars = sorted({c for nd in order for c in prepared[nd].ev})
    if ev_vars:
        keys = np.stack([public_codes[c] for c in ev_vars], axis=1)
        patterns, inverse = np.unique(keys, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
    else:
        patterns, inverse = np.zeros((1, 0), dtype=np.int64), np.zeros(n, dtype=np.int64)
    col_of = {c: i for i, c in enumerate(ev_vars)}
    per_pattern = sum(prepared[nd].table.shape[1] for nd in order)
    step = max(1, block_cells // max(1, per_pattern))
    drawn = {c: np.zeros(n, dtype=np.int64) for nd in order for c in prepared[nd].q}
    by_pattern = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[by_pattern], np.arange(0, len(patterns) + step, step))
    for b, start in enumerate(range(0, len(patterns), step)):
        block = patterns[start:start + step]
        # upward: each node's table times its children's messages, per pattern
        local: dict = {}
        messages: dict = {}
        for nd in reversed(order):
            node = prepared[nd]
            rows = _flat_index([block[:, col_of[c]] for c in node.ev], [sizes[c] for c in node.ev]) \
                if node.ev else np.zeros(len(block), dtype=np.int64)
            t = node.table[rows].reshape((len(block),) + tuple(sizes[c] for c in node.up + node.rest))
            labels = node.up + node.rest
            for ch in children[nd]:
                msg, mlabels = messages.pop(ch)
                shape = [len(block)] + [sizes[c] if c in mlabels else 1 for c in labels]
                order_m = [mlabels.index(c) for c in labels if c in mlabels]
                t = t * np.transpose(msg, [0] + [i + 1 for i in order_m]).reshape(shape)
            local[nd] = t.reshape(len(block), node.up_cells, node.rest_cells)
            msg = local[nd].sum(axis=2)
            scale = msg.max(axis=1, keepdims=True)
            msg = msg / np.where(scale > 0, scale, 1.0)  # a per-pattern constant: harmless
            messages[nd] = (msg.reshape((len(block),) + tuple(sizes[c] for c in node.up)), node.up)
        # downward: the records of this block of patterns, in chunks
        recs = by_pattern[bounds[b]:bounds[b + 1]]
        biggest = max(prepared[nd].rest_cells for nd in order)
        chunk = max(1, block_cells // max(1, biggest))
        for s in range(0, len(recs), chunk):
            r = recs[s:s + chunk]
            pat = inverse[r] - start
            for nd in order:
                node = prepared[nd]
                if not node.rest:
                    continue
                up_idx = _flat_index([drawn[c][r] for c in node.up], [sizes[c] for c in node.up]) \
                    if node.up else np.zeros(len(r), dtype=np.int64)
                key = pat * node.up_cells + up_idx  # the table row each record draws from
                points = systematic_points(key, rng) if systematic else rng.random(len(r))
                used, row = np.unique(key, return_inverse=True)
                k = _draw(local[nd].reshape(-1, node.rest_cells)[used], points, row.reshape(-1))
                for c, v in zip(node.rest, np.unravel_index(k, [sizes[c] for c in node.rest])):
                    drawn[c][r] = v
    return drawn
