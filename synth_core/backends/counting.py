"""What the two engine backends (DuckDB, Spark) share.

:class:`CountingBackend` is the logic of an engine's counter: a cache of
counts, marginals of subsets derived from a counted superset without another
pass, batches of cliques per grouping-sets pass, and the checks of a
counting pass. :class:`EngineBackend` is the
:class:`~synth_core.backends.base.Backend` of an engine: the private file stays
where it is, is read without a schema by a reader and counted by a
:class:`CountingBackend`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataError
from ..marginals import Clique, ColumnSizes, CountStats, exact_counts
from ..schema import PRIVATE_VALUES_NOTE, Schema, _format_examples
from .base import FlagSummary
from .encoding import MISSING_NOT_ALLOWED, NOT_IN_SCHEMA


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
        """Counts of ``clique`` (read-only integers of
        :func:`~synth_core.marginals.count_dtype`, C order over the clique's columns)."""
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
                    self._cache[cl] = exact_counts(counted[cl], self.n)
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
                        hint="Fix the schema (categories, bounds, missing: true) or the data. "
                             + PRIVATE_VALUES_NOTE)

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
            out = exact_counts([self.n], self.n)
        else:
            source = self._superset(clique)
            sizes = self.size_of
            table = self._cache[source].reshape([sizes[c] for c in source])
            drop = tuple(i for i, c in enumerate(source) if c not in clique)
            kept = [c for c in source if c in clique]
            table = table.sum(axis=drop, dtype=table.dtype) if drop else table
            order = [kept.index(c) for c in clique]
            out = exact_counts(np.transpose(table, order).ravel(), self.n)
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


class EngineBackend:
    """:class:`Backend` of a counting engine: the private file stays where it is.

    Nothing is inferred from the private records (the domain comes from a
    declared schema or from the public rows); the file is read without a
    schema by a reader (``columns``, ``flag_summary``, ``rows``) and counted
    by a :class:`CountingBackend`. Subclasses name the engine (``backend``)
    and make the two.
    """

    backend: str = "engine"
    loads_public_rows = True

    def __init__(self, source, *, name: str | None = None, **options):
        if isinstance(source, pd.DataFrame):
            raise ConfigError(f"the {self.backend} backend counts a file, not a DataFrame.",
                              hint="Pass the path of a .parquet or .csv file, or use the memory "
                                   "backend.")
        if not isinstance(source, (str, Path)) and not self._accepts(source):
            raise DataError(f"the private table must be a path to a CSV/Parquet file"
                            f"{self._also_accepted()}, not {type(source).__name__}.")
        self.source = source
        self.name = name or (Path(source).name if isinstance(source, (str, Path))
                             else self._default_name())
        self.options = dict(options)
        self._reader = None

    # -- what a subclass provides ------------------------------------------------------

    def _accepts(self, source) -> bool:
        """Whether ``source`` (not a path) is a table the engine reads itself."""
        return False

    def _also_accepted(self) -> str:
        return ""

    def _default_name(self) -> str:
        return "data"

    def _open_reader(self):
        """The file read without a schema (columns, flag counts, rows)."""
        raise NotImplementedError

    def _table(self, schema: Schema, **options) -> CountingBackend:
        """The private records as this engine's counter."""
        raise NotImplementedError

    # -- the Backend contract ------------------------------------------------------------

    @classmethod
    def table(cls, source, schema: Schema, *, name: str, **options) -> CountingBackend:
        """The private data as this engine's counter, without the run's checks."""
        return cls(source, name=name, **options)._table(schema, **options)

    @property
    def reader(self):
        if self._reader is None:
            self._reader = self._open_reader()
        return self._reader

    @property
    def columns(self) -> list[str]:
        return list(self.reader.columns)

    def drop(self, columns: Sequence[str]) -> None:
        """Dropped columns are never read: the counter reads the schema's columns only."""

    def infer_domain(self, flag: str | None) -> Schema:
        raise ConfigError(
            f"the {self.backend} backend needs the domain from a declared schema (--schema) or "
            "from public rows (--public or --public-flag): inferring it from the private "
            "file would load the whole file (and the domain would not be "
            "privacy-protected).",
            hint="Declare a schema file, give public rows, or use --backend memory.")

    def flag_summary(self, flag: str) -> FlagSummary:
        return self.reader.flag_summary(flag)

    def flagged_rows(self, flag: str) -> pd.DataFrame:
        return self.reader.rows(flag=flag, flagged=True)

    def counter(self, schema: Schema, flag: str | None) -> CountingBackend:
        """The counter, after one pass that counts the rows and checks every value."""
        options = dict(self.options)
        if flag:
            options["public_flag"] = flag
        table = self._table(schema, **options)
        try:
            table.n
        except DataError:
            table.close()
            raise
        return table

    def public_values(self, columns: Sequence[str], flag: str | None) -> None:
        """Not loaded up front: :meth:`own_public_codes` loads them when needed."""
        return None

    def holds_records(self, frame: pd.DataFrame) -> None:
        """Not told: the file is not loaded (the input check compares two files' bytes)."""
        return None

    @staticmethod
    def own_public_codes(private: CountingBackend, schema: Schema,
                         columns: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Codes and raw values of ``columns`` for every private record, in file order:
        the raw values of these columns only (n x len(columns) values) are loaded."""
        values = private.record_values(columns)
        if len(values) != private.n:
            raise DataError(f"'{private.name}' changed while it was read: {len(values):,} "
                            f"records now, {private.n:,} counted.", hint="Run again on a file "
                            "that does not change during the run.")
        codes = schema.project(list(columns)).encode(values, table_name=private.name,
                                                     role="private table")
        return codes.reset_index(drop=True), values[list(columns)].reset_index(drop=True)
