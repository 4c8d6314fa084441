"""DuckDB backend: count marginals of a Parquet or CSV file out of core.

The file is never loaded into pandas. One pass reads it, encodes every
schema column with SQL generated from the schema
(:mod:`synth_core.backends.encoding`) and stores the codes (one or two bytes
a value) in a DuckDB temporary table, which DuckDB spills to disk beyond
``memory_limit``. A second, cheap pass over the codes counts the rows and
checks that every value fits. Each batch of cliques is then one
``GROUP BY GROUPING SETS`` pass over the codes.

With ``materialize=False`` nothing is stored: every batch reads the file
again (fewer bytes held, more bytes read).

With ``public_flag`` the file holds public rows too: only the rows whose flag
column reads false are counted (the public ones are read separately, with
:class:`DuckDBFile`, which reads what does not need the schema: the columns,
the number of rows, a preview, a flag column's counts, and the small subsets
of rows or columns a run may load).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataError
from ..schema import Schema
from ..tables import CSV_SUFFIXES, PARQUET_SUFFIXES, _clean_cells
from .base import FlagSummary
from .counting import CountingBackend, EngineBackend, grouping_id, parquet_column_bytes
from .encoding import (DUCKDB, FLAG_FALSE, FLAG_INVALID, FLAG_TRUE,
                       NOT_IN_SCHEMA, code_expression, code_type, flag_expression)

_TYPE_BYTES = {"TINYINT": 1, "SMALLINT": 2, "INTEGER": 4}


def duckdb_kind(type_name: str) -> str:
    """The encoding kind of a DuckDB column type."""
    t = type_name.upper()
    if t == "BOOLEAN":
        return "boolean"
    if t.endswith("INT") or t in ("HUGEINT", "UHUGEINT", "BIGINT", "INTEGER", "SMALLINT",
                                  "TINYINT", "UBIGINT", "UINTEGER", "USMALLINT", "UTINYINT"):
        return "integer"
    if t in ("DOUBLE", "FLOAT", "REAL") or t.startswith("DECIMAL"):
        return "float"
    return "string"


def source_sql(path: Path, name: str) -> tuple[str, dict[str, int] | int]:
    """(DuckDB table function reading ``path``, stored bytes: per column for
    Parquet, the file size for CSV). DataError if missing or not CSV/Parquet."""
    lower = path.name.lower()
    literal = "'" + str(path).replace("'", "''") + "'"
    is_glob = any(ch in str(path) for ch in "*?[")
    if not is_glob and not path.exists():
        raise DataError(f"file '{name}' not found.", path=str(path))
    if path.is_dir() or lower.endswith(PARQUET_SUFFIXES) or (is_glob and "parquet" in lower):
        files = sorted(path.rglob("*.parquet")) if path.is_dir() else \
            [path] if not is_glob else sorted(path.parent.glob(path.name))
        if path.is_dir():
            literal = "'" + str(path / "**" / "*.parquet").replace("'", "''") + "'"
        try:
            sizes = parquet_column_bytes(files)
        except Exception as exc:  # pyarrow: not a Parquet file, truncated, ...
            raise DataError(f"cannot read '{name}' as Parquet: "
                            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}",
                            hint="Check that the file is a complete Parquet file.",
                            path=str(path)) from None
        return f"read_parquet({literal})", sizes
    if lower.endswith(CSV_SUFFIXES):
        files = sorted(path.parent.glob(path.name)) if is_glob else [path]
        if not files:
            raise DataError(f"no file matches '{name}'.", hint="Check the pattern and its folder.",
                            path=str(path))
        return (f"read_csv({literal}, header = true, "
                "auto_type_candidates = ['BOOLEAN', 'BIGINT', 'DOUBLE', 'VARCHAR'])",
                sum(f.stat().st_size for f in files))
    raise DataError(f"cannot read '{name}' with DuckDB: unsupported file type.",
                    hint=f"Supported: {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}.",
                    path=str(path))


def _import_duckdb():
    try:
        import duckdb
    except ImportError:  # pragma: no cover - a dependency of the package
        raise ConfigError("the duckdb backend needs the 'duckdb' package.",
                          hint="pip install duckdb") from None
    return duckdb


class DuckDBTable(CountingBackend):
    """The private data as a Parquet/CSV file counted by DuckDB.

    Args:
        source: path to a .parquet/.pq (or a directory or glob of Parquet
            files) or a .csv/.csv.gz file.
        schema: the declared (or public) schema; its encoding is pushed into SQL.
        memory_limit: DuckDB's memory limit (beyond it, it spills to disk).
        threads: DuckDB threads (default: DuckDB's choice, all cores).
        temp_directory: where DuckDB spills (default: a fresh temp directory).
        materialize: store the codes once (default) or re-read the file per batch.
        batch_size: cliques per grouping-sets pass.
        public_flag: a column of the file whose true rows are public: only
            the rows where it reads false are counted (check the flag with
            :meth:`DuckDBFile.flag_summary` first: rows where it reads
            neither true nor false are counted by neither side).

    :meth:`close` drops the stored codes and the connection; the counts
    already made stay usable, and a later query opens a new connection (and
    stores the codes again).
    """

    batch_size = 16
    backend = "duckdb"

    def __init__(self, source, schema: Schema, *, name: str | None = None,
                 memory_limit: str = "1GB", threads: int | None = None,
                 temp_directory: str | None = None, materialize: bool = True,
                 batch_size: int | None = None, connection=None,
                 public_flag: str | None = None):
        path = Path(source)
        super().__init__(schema, name=name or path.name, batch_size=batch_size)
        _import_duckdb()
        self.path = path
        self.materialize = materialize
        self.public_flag = public_flag
        self._reader, self._file_bytes = self._source_sql(path)
        self._connection = connection
        self._own_connection = connection is None
        self._settings = (memory_limit, temp_directory, threads)
        self.con = None
        self._tmp = None
        self._codes = f"synth_codes_{id(self):x}"
        self._stored = False
        self._open()
        self._raw = self._raw_columns()
        self._flag_raw = None
        if public_flag is not None:
            self._filter_public_rows(public_flag)
        self._exprs = {
            c.name: code_expression(c, DUCKDB.ident(self._raw[c.name][0]),
                                    duckdb_kind(self._raw[c.name][1]), DUCKDB)
            for c in schema.columns}
        self._types = {c.name: code_type(c.size) for c in schema.columns}

    def _open(self) -> None:
        """Connect (again, after :meth:`close`)."""
        if self.con is not None:
            return
        if not self._own_connection:
            self.con = self._connection
            return
        duckdb = _import_duckdb()
        memory_limit, temp_directory, threads = self._settings
        self.con = duckdb.connect()
        if temp_directory is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="synth-duckdb-")
            temp_directory = self._tmp.name
        self.con.execute(f"SET memory_limit = '{memory_limit}'")
        self.con.execute(f"SET temp_directory = '{temp_directory}'")
        self.con.execute("SET preserve_insertion_order = false")
        if threads is not None:
            self.con.execute(f"SET threads = {int(threads)}")

    # -- the source ---------------------------------------------------------------

    def _source_sql(self, path: Path) -> tuple[str, dict[str, int] | int]:
        return source_sql(path, self.name)

    def _raw_columns(self) -> dict[str, tuple[str, str]]:
        """Schema column -> (the file's column name, its DuckDB type)."""
        try:
            rows = self.con.execute(f"DESCRIBE SELECT * FROM {self._reader}").fetchall()
        except Exception as exc:  # duckdb raises its own exception classes
            raise DataError(f"cannot read '{self.name}': {str(exc).splitlines()[0]}",
                            path=str(self.path)) from None
        by_name = {str(r[0]).strip(): (str(r[0]), str(r[1])) for r in rows}
        self._all_raw = by_name
        self._require_columns(by_name, path=str(self.path))
        return {n: by_name[n] for n in self.columns}

    def _filter_public_rows(self, flag: str) -> None:
        """Count only the rows whose ``flag`` column reads false."""
        if flag not in self._all_raw:
            raise DataError(f"the public-rows flag column '{flag}' is not in '{self.name}'.",
                            hint=f"Its columns are: {', '.join(repr(n) for n in self._all_raw)}.",
                            column=flag, path=str(self.path))
        if flag in self.columns:
            raise DataError(f"the public-rows flag column '{flag}' is also a schema column.",
                            hint="Remove it from the schema.", column=flag)
        raw, kind = self._all_raw[flag]
        self._flag_raw = raw
        test = flag_expression(DUCKDB.ident(raw), duckdb_kind(kind))
        self._reader = f"(SELECT * FROM {self._reader} WHERE {test} = {FLAG_FALSE})"

    def _file_scan_bytes(self, columns) -> int:
        if isinstance(self._file_bytes, int):
            return self._file_bytes  # CSV: every byte is read
        raw = [self._raw[c][0] for c in columns] + ([self._flag_raw] if self._flag_raw else [])
        return int(sum(self._file_bytes.get(r, 0) for r in raw))

    def _codes_bytes(self, columns) -> int:
        return self.n * sum(_TYPE_BYTES[self._types[c]] for c in columns)

    # -- encoding and validation --------------------------------------------------

    def _codes_relation(self) -> str:
        if self.materialize:
            self._store_codes()
            return self._codes
        select = ", ".join(f"{e} AS {DUCKDB.ident(c)}" for c, e in self._exprs.items())
        return f"(SELECT {select} FROM {self._reader})"

    def _store_codes(self) -> None:
        """One pass over the file: the codes into a temporary table (once per connection)."""
        if self._stored:
            return
        q = DUCKDB.ident
        select = ", ".join(f"CAST({e} AS {self._types[c]}) AS {q(c)}"
                           for c, e in self._exprs.items())
        self._execute(f"CREATE TEMP TABLE {self._codes} AS SELECT {select} FROM {self._reader}")
        self._stored = True
        self.stats.passes += 1
        self.stats.bytes_scanned += self._file_scan_bytes(self.columns)

    def _count_rows(self) -> int:
        row = self._execute(f"SELECT {self._check_count_sql(DUCKDB.ident)} "
                            f"FROM {self._codes_relation()}").fetchone()
        self.stats.passes += 1
        if self.materialize:
            self.stats.bytes_scanned += int(row[0]) * sum(_TYPE_BYTES[t] for t in self._types.values())
        else:
            self.stats.bytes_scanned += self._file_scan_bytes(self.columns)
        return self._rows_after_check(row, path=str(self.path))

    def _examples(self, column: str) -> list[tuple[object, int]]:
        raw = DUCKDB.ident(self._raw[column][0])
        rows = self._execute(
            f"SELECT {raw} AS v, count(*) AS k FROM {self._reader} "
            f"WHERE {self._exprs[column]} = {NOT_IN_SCHEMA} GROUP BY v ORDER BY k DESC LIMIT 6"
        ).fetchall()
        return [(v, int(k)) for v, k in rows]

    # -- counting ---------------------------------------------------------------------

    def _count(self, batch):
        q = DUCKDB.ident
        union = [c for c in self.columns if any(c in cl for cl in batch)]
        source = self._codes_relation()
        if len(batch) == 1:
            cols = ", ".join(q(c) for c in batch[0])
            res = self._execute(f"SELECT {cols}, count(*) AS k FROM {source} "
                                f"GROUP BY {cols}").fetchnumpy()
            out = {batch[0]: self._flat_counts(batch[0], [res[c] for c in batch[0]], res["k"])}
        else:
            sets = ", ".join("(" + ", ".join(q(c) for c in cl) + ")" for cl in batch)
            select = ", ".join(f"coalesce({q(c)}, 0) AS {q(c)}" for c in union)
            gid = ", ".join(q(c) for c in union)
            res = self._execute(f"SELECT {select}, GROUPING_ID({gid}) AS g, count(*) AS k "
                                f"FROM {source} GROUP BY GROUPING SETS ({sets})").fetchnumpy()
            g = np.asarray(res["g"])
            out = {}
            for cl in batch:
                rows = g == grouping_id(union, cl)
                out[cl] = self._flat_counts(cl, [np.asarray(res[c])[rows] for c in cl],
                                            np.asarray(res["k"])[rows])
        self.stats.passes += 1
        self.stats.bytes_scanned += (self._codes_bytes(union) if self.materialize
                                     else self._file_scan_bytes(union))
        return out

    def _execute(self, sql: str):
        self.stats.queries += 1
        self._open()
        try:
            return self.con.execute(sql)
        except Exception as exc:
            if type(exc).__module__.startswith(("duckdb", "_duckdb")):
                raise DataError(f"DuckDB could not read '{self.name}': "
                                f"{str(exc).splitlines()[0]}", path=str(self.path)) from exc
            raise

    # -- records (conditional generation) -------------------------------------------

    def record_values(self, columns: Sequence[str]) -> pd.DataFrame:
        """The raw values of ``columns`` of every counted record, in file order
        (the only step that loads records: n x len(columns) values)."""
        return DuckDBFile(self.path, name=self.name).rows(
            list(columns), flag=self.public_flag,
            flagged=False if self.public_flag else None)

    def close(self) -> None:
        con, self.con = getattr(self, "con", None), None
        if con is not None and self._own_connection:
            con.close()
        elif con is not None and self._stored:
            try:
                con.execute(f"DROP TABLE IF EXISTS {self._codes}")
            except Exception:  # noqa: BLE001 - a connection closed by its owner
                pass
        self._stored = False
        if getattr(self, "_tmp", None) is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class DuckDBFile:
    """A Parquet or CSV file read by DuckDB without a schema.

    Everything here is one query on a fresh connection (safe from any
    thread): the columns, the number of rows, a preview, a flag column's
    counts, and the subsets of rows or columns that are meant to be loaded
    (public rows, the values of public columns). Rows come back in file
    order, cleaned as :func:`synth_core.tables.load_table` cleans them.
    """

    def __init__(self, source, *, name: str | None = None, memory_limit: str = "1GB",
                 threads: int | None = None):
        _import_duckdb()
        self.path = Path(source)
        self.name = name or self.path.name
        self._reader, self._file_bytes = source_sql(self.path, self.name)
        self._memory_limit, self._threads = memory_limit, threads
        self._columns: dict[str, tuple[str, str]] | None = None

    def _run(self, sql: str, fetch):
        duckdb = _import_duckdb()
        with tempfile.TemporaryDirectory(prefix="synth-duckdb-") as tmp:
            con = duckdb.connect()
            try:
                con.execute(f"SET memory_limit = '{self._memory_limit}'")
                con.execute(f"SET temp_directory = '{tmp}'")
                if self._threads is not None:
                    con.execute(f"SET threads = {int(self._threads)}")
                return fetch(con, sql)
            except Exception as exc:
                if type(exc).__module__.startswith(("duckdb", "_duckdb")):
                    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    raise DataError(f"cannot read '{self.name}' with DuckDB: {first}",
                                    hint="Check that the file is complete and in the format "
                                         "its name says (CSV with a header row, or Parquet).",
                                    path=str(self.path)) from None
                raise
            finally:
                con.close()

    def _all(self, sql: str) -> list[tuple]:
        return self._run(sql, lambda con, q: con.execute(q).fetchall())

    @property
    def columns(self) -> dict[str, tuple[str, str]]:
        """Column name (spaces around it removed) -> (the file's name, DuckDB type)."""
        if self._columns is None:
            rows = self._all(f"DESCRIBE SELECT * FROM {self._reader}")
            self._columns = {str(r[0]).strip(): (str(r[0]), str(r[1])) for r in rows}
        return self._columns

    def kind(self, column: str) -> str:
        return duckdb_kind(self._column(column)[1])

    def _column(self, column: str) -> tuple[str, str]:
        if column not in self.columns:
            raise DataError(f"column '{column}' is not in '{self.name}'.",
                            hint=f"Its columns are: {', '.join(repr(n) for n in self.columns)}.",
                            column=column, path=str(self.path))
        return self.columns[column]

    def _flag_test(self, column: str) -> str:
        raw, kind = self._column(column)
        return flag_expression(DUCKDB.ident(raw), duckdb_kind(kind))

    def count(self) -> int:
        """Number of rows (Parquet: from the metadata; CSV: one pass)."""
        return int(self._all(f"SELECT count(*) FROM {self._reader}")[0][0])

    def flag_summary(self, column: str) -> FlagSummary:
        """How many rows the flag ``column`` marks true, false and neither (one pass)."""
        test = self._flag_test(column)
        true, false, bad = self._all(
            f"SELECT count_if({test} = {FLAG_TRUE}), count_if({test} = {FLAG_FALSE}), "
            f"count_if({test} = {FLAG_INVALID}) FROM {self._reader}")[0]
        examples = []
        if bad:
            raw = DUCKDB.ident(self._column(column)[0])
            examples = [(v, int(k)) for v, k in self._all(
                f"SELECT {raw} AS v, count(*) AS k FROM {self._reader} "
                f"WHERE {test} = {FLAG_INVALID} GROUP BY v ORDER BY k DESC LIMIT 6")]
        return FlagSummary(column, int(true), int(false), int(bad), examples)

    def flag_candidates(self) -> list[str]:
        """Columns that read as a true/false flag in every row (one pass)."""
        names = list(self.columns)
        if not names:
            return []
        checks = ", ".join(f"bool_and({self._flag_test(c)} <> {FLAG_INVALID})" for c in names)
        row = self._all(f"SELECT {checks} FROM {self._reader}")[0]
        return [c for c, ok in zip(names, row) if ok]

    def rows(self, columns: Sequence[str] | None = None, *, flag: str | None = None,
             flagged: bool | None = None, limit: int | None = None) -> pd.DataFrame:
        """Rows of the file in file order, as a cleaned DataFrame.

        ``columns``: the file's columns to read (default: all but ``flag``);
        ``flagged``: only the rows whose ``flag`` reads true (True) or false
        (False); ``limit``: at most this many rows.
        """
        if columns is None:
            columns = [c for c in self.columns if c != flag]
        select = ", ".join(f"{DUCKDB.ident(self._column(c)[0])} AS {DUCKDB.ident(c)}"
                           for c in columns) or "*"
        where = ""
        if flagged is not None:
            if flag is None:
                raise ConfigError("rows(flagged=...) needs the flag column.")
            where = f" WHERE {self._flag_test(flag)} = {FLAG_TRUE if flagged else FLAG_FALSE}"
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        table = self._run(f"SELECT {select} FROM {self._reader}{where}{tail}",
                          lambda con, q: con.sql(q).to_arrow_table())
        return _clean_cells(table.to_pandas()).reset_index(drop=True)


class DuckDBBackend(EngineBackend):
    """:class:`~synth_core.backends.base.Backend` of a Parquet or CSV file counted by DuckDB
    (``options``: :class:`DuckDBTable`'s; the reader takes ``memory_limit`` and ``threads``)."""

    backend = "duckdb"

    def _open_reader(self) -> DuckDBFile:
        keep = {k: self.options[k] for k in ("memory_limit", "threads") if k in self.options}
        return DuckDBFile(self.source, name=self.name, **keep)

    def _table(self, schema: Schema, **options) -> DuckDBTable:
        return DuckDBTable(self.source, schema, name=self.name, **options)
