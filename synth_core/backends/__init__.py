"""Counting backends: where the marginals of the private data are counted.

Counting marginals is the only step of every mechanism that reads records.
The engine reads the private data through the small interface
:class:`MarginalCounter` (``n``, ``size_of``, ``cells``, ``marginal``,
``marginals``, ``stats``); three backends implement it and return identical
counts for the same data and schema:

* ``memory`` -- :class:`~synth_core.marginals.CodedTable`, numpy arrays of
  codes in this process (the default);
* ``duckdb`` -- :class:`~synth_core.backends.duckdb_backend.DuckDBTable`,
  a Parquet or CSV file counted by DuckDB without loading it into pandas;
* ``spark`` -- :class:`~synth_core.backends.spark_backend.SparkTable`, a
  file or a Spark DataFrame counted by Apache Spark (local or a cluster).

The engine backends encode raw values with SQL generated from the schema's
own column objects (:mod:`synth_core.backends.encoding`), and count a batch
of cliques per pass (``GROUP BY GROUPING SETS``). Marginals of subsets of a
counted clique are derived from it without another pass.

Public rows flagged by a column of the private file (``public_flag``) are
split off in the engine: the counter counts the rows whose flag reads false,
and :func:`open_rows` reads the (small) flagged rows as the public table.
Conditional generation needs the private records' own values of the public
columns: :meth:`CountingBackend.record_values` loads those columns only.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from ..errors import ConfigError, DataError
from ..marginals import Clique, ColumnSizes, CountStats
from ..schema import Schema, _format_examples
from .encoding import MISSING_NOT_ALLOWED, NOT_IN_SCHEMA

BACKENDS = ("memory", "duckdb", "spark")

__all__ = ["BACKENDS", "CountStats", "CountingBackend", "FlagSummary", "MarginalCounter",
           "make_backend", "open_rows", "prefetch"]


@dataclass(frozen=True)
class FlagSummary:
    """How a public-rows flag column reads over a file: rows true, false and
    neither (with up to six (value, rows) examples of the latter)."""

    column: str
    true: int
    false: int
    invalid: int
    examples: list = field(default_factory=list)

    def check(self, table: str) -> None:
        """DataError unless every row reads true or false and both occur
        (the messages of :mod:`synth_core.tables` for a loaded table)."""
        if self.invalid:
            raise DataError(
                f"flag column '{self.column}' has {self.invalid:,} rows that are not true or "
                f"false: {_format_examples(self.examples)}.",
                hint="Use true/false, yes/no or 1/0 in every row.", column=self.column)
        if self.true == 0:
            raise DataError(f"public rows (flag column '{self.column}') has no rows.",
                            hint="Flag some rows as public, or run without public rows.",
                            column=self.column)
        if self.false == 0:
            raise DataError(f"the private table '{table}' has no rows once the public rows "
                            "are split off.", hint="Keep at least one private row.",
                            column=self.column)


@runtime_checkable
class MarginalCounter(Protocol):
    """What the engine and the evaluation read from the private data."""

    columns: tuple[str, ...]
    stats: CountStats

    @property
    def n(self) -> int: ...

    @property
    def size_of(self) -> dict[str, int]: ...

    def cells(self, clique: Sequence[str]) -> int: ...

    def marginal(self, clique: Sequence[str]) -> np.ndarray: ...

    def marginals(self, cliques: Iterable[Sequence[str]]) -> dict[Clique, np.ndarray]: ...


class CountingBackend(ColumnSizes, ABC):
    """Shared logic of the engine backends: cache, derivation, batching.

    Subclasses implement :meth:`_count` (exact counts of a batch of cliques,
    each in schema column order) and :meth:`_count_rows`.
    """

    #: cliques per grouping-sets query (one pass over the codes per batch)
    batch_size: int = 16
    #: the backend's name in messages
    backend: str = "engine"

    def __init__(self, schema: Schema, *, name: str, batch_size: int | None = None):
        self.schema = schema
        self.name = name
        self.columns = tuple(schema.names)
        self.sizes = tuple(schema.sizes[c] for c in self.columns)
        self._position = {c: i for i, c in enumerate(self.columns)}
        self._cache: dict[Clique, np.ndarray] = {}
        self._n: int | None = None
        self.stats = CountStats()
        if batch_size is not None:
            if int(batch_size) < 1:
                raise ConfigError(f"batch_size must be at least 1, not {batch_size!r}.")
            self.batch_size = int(batch_size)

    def _require_columns(self, available, path: str | None = None) -> None:
        """DataError naming the schema columns the file lacks (``available``: its column names)."""
        available = list(available)
        absent = [c for c in self.columns if c not in available]
        if absent:
            raise DataError(
                f"private table '{self.name}' is missing schema column(s) "
                f"{', '.join(repr(a) for a in absent)}.",
                hint=f"Its columns are: {', '.join(repr(n) for n in available)}. Column names "
                     "are case-sensitive.", column=absent[0], path=path)

    # -- the interface -----------------------------------------------------------

    @property
    def n(self) -> int:
        if self._n is None:
            self._n = int(self._count_rows())
        return self._n

    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        """Counts of ``clique`` (float64, C order over the clique's columns)."""
        clique = tuple(clique)
        if clique in self._cache:
            return self._cache[clique]
        return self.marginals([clique])[clique]

    def marginals(self, cliques: Iterable[Sequence[str]]) -> dict[Clique, np.ndarray]:
        """Counts of every clique, counting only the maximal uncovered ones
        (in batches of ``batch_size`` per pass) and deriving the rest."""
        cliques = [tuple(cl) for cl in cliques]
        for cl in cliques:
            self._check_clique(cl)
        todo = [cl for cl in cliques if cl not in self._cache and self._superset(cl) is None]
        canon = list(dict.fromkeys(self._canonical(cl) for cl in todo if cl))
        sets = [frozenset(cl) for cl in canon]
        maximal = [cl for cl, s in zip(canon, sets) if not any(s < t for t in sets)]
        if maximal:
            # batches of cliques that share columns group by a smaller union
            maximal.sort(key=lambda cl: [self._position[c] for c in cl])
            self.n  # validates the table before any counting
            started = time.perf_counter()
            for i in range(0, len(maximal), self.batch_size):
                batch = maximal[i:i + self.batch_size]
                counted = self._count(batch)
                for cl in batch:
                    self._cache[cl] = np.asarray(counted[cl], dtype=np.float64)
                self.stats.cliques += len(batch)
            self.stats.seconds += time.perf_counter() - started
        return {cl: self._get(cl) for cl in cliques}

    def close(self) -> None:
        """Release the engine's resources (the cache of counts stays usable)."""

    def record_values(self, columns: Sequence[str]):
        """The raw values (a DataFrame) of ``columns`` of every counted record,
        in the file's row order: the one step that loads records."""
        raise NotImplementedError

    def to_frame(self):
        """Every record's codes: what the memory backend holds, and what an
        engine backend exists not to load."""
        raise ConfigError(
            f"this step reads every record of '{self.name}', which the {self.backend} backend "
            "does not load (it only counts marginals).",
            hint="Run it with the memory backend (--backend memory), or choose a mechanism "
                 "that only needs marginals.")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- subclasses --------------------------------------------------------------

    @abstractmethod
    def _count_rows(self) -> int:
        """Number of records; raises DataError if a value does not fit the schema."""

    @abstractmethod
    def _count(self, batch: list[Clique]) -> dict[Clique, np.ndarray]:
        """Exact counts of every clique of ``batch`` (columns in schema order)."""

    # -- helpers for subclasses ----------------------------------------------------

    def _flat_counts(self, clique: Clique, codes: Sequence[np.ndarray],
                     counts: np.ndarray) -> np.ndarray:
        """A dense count vector from (code columns, count) rows of a GROUP BY."""
        sizes = self.size_of
        index = np.zeros(len(counts), dtype=np.int64)
        for c, values in zip(clique, codes):
            index *= sizes[c]
            index += np.asarray(values, dtype=np.int64)
        return np.bincount(index, weights=np.asarray(counts, dtype=np.float64),
                           minlength=self.cells(clique))

    def _check_count_sql(self, ident) -> str:
        """The SELECT list of one pass that counts the rows and, per column, the values
        that may not be missing and the values outside the schema (quoted by ``ident``)."""
        checks = ", ".join(
            f"count_if({ident(c)} = {MISSING_NOT_ALLOWED}), count_if({ident(c)} = {NOT_IN_SCHEMA})"
            for c in self.columns)
        return f"count(*), {checks}"

    def _rows_after_check(self, row, path: str | None = None) -> int:
        """The row count from a :meth:`_check_count_sql` result; raises a DataError for an
        empty private table or for values that do not fit the schema (with examples from
        the subclass's ``_examples(column)``)."""
        n = int(row[0])
        if n == 0:
            once = " once the public rows are split off" if self.public_flag else ""
            raise DataError(f"the private table '{self.name}' has no rows{once}.",
                            hint="Keep at least one private row.", path=path)
        problems = []
        for i, c in enumerate(self.columns):
            missing, unknown = int(row[1 + 2 * i]), int(row[2 + 2 * i])
            if missing or unknown:
                problems.append((c, missing, unknown, self._examples(c) if unknown else []))
        if problems:
            self.close()
            self._raise_problems(problems)
        return n

    def _raise_problems(self, problems: list[tuple[str, int, int, list]]) -> None:
        """DataError naming every column with values that do not fit.

        ``problems``: (column, missing-but-not-allowed rows, not-in-schema rows,
        [(value, rows), ...] examples of the values that do not fit).
        """
        lines = []
        for column, missing, unknown, examples in problems:
            if missing:
                lines.append(f"column '{column}' has missing values (empty cells) in "
                             f"{missing:,} rows. Set missing: true for this column in the "
                             "schema, or fill or drop those rows.")
            if unknown:
                spec = self.schema.column(column)
                what = ("values outside the bounds or not numbers"
                        if spec.kind == "numeric" else "values not in the schema")
                lines.append(f"column '{column}' has {what} in {unknown:,} rows: "
                             f"{_format_examples(examples)}.")
        label = f"private table '{self.name}'"
        if len(lines) == 1:
            message = f"{label}: {lines[0]}"
        else:
            body = "\n".join(f"  - {line}" for line in lines)
            message = f"{label} does not fit the schema ({len(lines)} problems):\n{body}"
        raise DataError(message, column=problems[0][0],
                        hint="Fix the schema (categories, bounds, missing: true) or the data.")

    # -- internals -----------------------------------------------------------------

    def _check_clique(self, clique: Clique) -> None:
        unknown = [c for c in clique if c not in self._position]
        if unknown:
            raise DataError(f"unknown column(s) {unknown} in a marginal query.",
                            column=unknown[0])
        if len(set(clique)) != len(clique):
            raise DataError(f"a marginal query repeats a column: {clique}.")

    def _canonical(self, clique: Clique) -> Clique:
        return tuple(sorted(clique, key=self._position.__getitem__))

    def _superset(self, clique: Clique) -> Clique | None:
        """The cached clique with the fewest cells that covers ``clique``."""
        want = set(clique)
        best = None
        for cl in self._cache:
            if want <= set(cl) and (best is None or self.cells(cl) < self.cells(best)):
                best = cl
        return best

    def _get(self, clique: Clique) -> np.ndarray:
        if clique in self._cache:
            return self._cache[clique]
        if not clique:
            out = np.array([float(self.n)])
        else:
            source = self._superset(clique)
            sizes = self.size_of
            table = self._cache[source].reshape([sizes[c] for c in source])
            drop = tuple(i for i, c in enumerate(source) if c not in clique)
            kept = [c for c in source if c in clique]
            table = table.sum(axis=drop) if drop else table
            order = [kept.index(c) for c in clique]
            out = np.ascontiguousarray(np.transpose(table, order)).ravel()
        self._cache[clique] = out
        return out


def grouping_id(union: Sequence[str], clique: Sequence[str]) -> int:
    """``GROUPING_ID(union...)`` of the grouping set ``clique``: bit set for
    every column of ``union`` not grouped, the first column the highest bit."""
    k = len(union)
    return sum(1 << (k - 1 - i) for i, c in enumerate(union) if c not in clique)


def parquet_column_bytes(files) -> dict[str, int]:
    """Stored (compressed) bytes of every top-level column over ``files``."""
    import pyarrow.parquet as pq

    out: dict[str, int] = {}
    for f in files:
        meta = pq.ParquetFile(f).metadata
        for rg in range(meta.num_row_groups):
            group = meta.row_group(rg)
            for j in range(group.num_columns):
                chunk = group.column(j)
                top = chunk.path_in_schema.split(".")[0]
                out[top] = out.get(top, 0) + int(chunk.total_compressed_size)
    return out


def prefetch(counter, cliques: Iterable[Sequence[str]]) -> None:
    """Count ``cliques`` in batches up front if ``counter`` is an engine backend
    (the in-memory table counts on demand, as fast)."""
    if isinstance(counter, CountingBackend):
        counter.marginals(cliques)


def make_backend(backend: str, source, schema: Schema, *, name: str | None = None, **options):
    """The private data as a counting backend.

    ``source``: a path to a .parquet/.pq/.csv/.csv.gz file (any backend), a
    DataFrame (``memory``) or a Spark DataFrame (``spark``). ``options`` go to
    the engine backend (e.g. ``public_flag``, ``memory_limit``, ``spark``).
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown counting backend {backend!r}.",
                          hint=f"Choose one of: {', '.join(BACKENDS)}.")
    label = name or (Path(source).name if isinstance(source, (str, Path)) else "data")
    if backend == "memory":
        from .memory import memory_table
        return memory_table(source, schema, name=label)
    if backend == "duckdb":
        from .duckdb_backend import DuckDBTable
        return DuckDBTable(source, schema, name=label, **options)
    from .spark_backend import SparkTable
    return SparkTable(source, schema, name=label, **options)


def open_rows(backend: str, source, *, name: str | None = None, **options):
    """The file (or Spark DataFrame) read without a schema by an engine backend:
    :class:`~synth_core.backends.duckdb_backend.DuckDBFile` or
    :class:`~synth_core.backends.spark_backend.SparkFile` (columns, row count,
    flag counts, and the rows or columns that are meant to be loaded)."""
    if backend == "duckdb":
        from .duckdb_backend import DuckDBFile
        keep = {k: options[k] for k in ("memory_limit", "threads") if k in options}
        return DuckDBFile(source, name=name, **keep)
    if backend == "spark":
        from .spark_backend import SparkFile
        return SparkFile(source, name=name, spark=options.get("spark"))
    raise ConfigError(f"open_rows needs an engine backend (duckdb or spark), not {backend!r}.")
