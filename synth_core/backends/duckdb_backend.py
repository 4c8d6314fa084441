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
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from ..errors import ConfigError, DataError
from ..schema import Schema
from ..tables import CSV_SUFFIXES, PARQUET_SUFFIXES
from . import CountingBackend, grouping_id, parquet_column_bytes
from .encoding import DUCKDB, MISSING_NOT_ALLOWED, NOT_IN_SCHEMA, code_expression, code_type

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
    """

    batch_size = 16

    def __init__(self, source, schema: Schema, *, name: str | None = None,
                 memory_limit: str = "1GB", threads: int | None = None,
                 temp_directory: str | None = None, materialize: bool = True,
                 batch_size: int | None = None, connection=None):
        path = Path(source)
        super().__init__(schema, name=name or path.name, batch_size=batch_size)
        duckdb = _import_duckdb()
        self.path = path
        self.materialize = materialize
        self._reader, self._file_bytes = self._source_sql(path)
        self._own_connection = connection is None
        self.con = duckdb.connect() if connection is None else connection
        self._tmp = None
        if self._own_connection:
            if temp_directory is None:
                self._tmp = tempfile.TemporaryDirectory(prefix="synth-duckdb-")
                temp_directory = self._tmp.name
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
            self.con.execute(f"SET temp_directory = '{temp_directory}'")
            self.con.execute("SET preserve_insertion_order = false")
            if threads is not None:
                self.con.execute(f"SET threads = {int(threads)}")
        self._raw = self._raw_columns()
        self._exprs = {
            c.name: code_expression(c, DUCKDB.ident(self._raw[c.name][0]),
                                    duckdb_kind(self._raw[c.name][1]), DUCKDB)
            for c in schema.columns}
        self._types = {c.name: code_type(c.size) for c in schema.columns}
        self._codes = f"synth_codes_{id(self):x}"
        self._stored = False

    # -- the source ---------------------------------------------------------------

    def _source_sql(self, path: Path) -> tuple[str, dict[str, int] | int]:
        lower = path.name.lower()
        literal = "'" + str(path).replace("'", "''") + "'"
        is_glob = any(ch in str(path) for ch in "*?[")
        if not is_glob and not path.exists():
            raise DataError(f"file '{self.name}' not found.", path=str(path))
        if path.is_dir() or lower.endswith(PARQUET_SUFFIXES) or (is_glob and "parquet" in lower):
            files = sorted(path.rglob("*.parquet")) if path.is_dir() else \
                [path] if not is_glob else sorted(path.parent.glob(path.name))
            if path.is_dir():
                literal = "'" + str(path / "**" / "*.parquet").replace("'", "''") + "'"
            return f"read_parquet({literal})", parquet_column_bytes(files)
        if lower.endswith(CSV_SUFFIXES):
            return (f"read_csv({literal}, header = true, "
                    "auto_type_candidates = ['BOOLEAN', 'BIGINT', 'DOUBLE', 'VARCHAR'])",
                    path.stat().st_size)
        raise DataError(f"cannot read '{self.name}' with DuckDB: unsupported file type.",
                        hint=f"Supported: {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}.",
                        path=str(path))

    def _raw_columns(self) -> dict[str, tuple[str, str]]:
        """Schema column -> (the file's column name, its DuckDB type)."""
        try:
            rows = self.con.execute(f"DESCRIBE SELECT * FROM {self._reader}").fetchall()
        except Exception as exc:  # duckdb raises its own exception classes
            raise DataError(f"cannot read '{self.name}': {str(exc).splitlines()[0]}",
                            path=str(self.path)) from None
        by_name = {str(r[0]).strip(): (str(r[0]), str(r[1])) for r in rows}
        self._require_columns(by_name, path=str(self.path))
        return {n: by_name[n] for n in self.columns}

    def _file_scan_bytes(self, columns) -> int:
        if isinstance(self._file_bytes, int):
            return self._file_bytes  # CSV: every byte is read
        return int(sum(self._file_bytes.get(self._raw[c][0], 0) for c in columns))

    def _codes_bytes(self, columns) -> int:
        return self.n * sum(_TYPE_BYTES[self._types[c]] for c in columns)

    # -- encoding and validation --------------------------------------------------

    def _codes_relation(self) -> str:
        if self.materialize:
            return self._codes
        select = ", ".join(f"{e} AS {DUCKDB.ident(c)}" for c, e in self._exprs.items())
        return f"(SELECT {select} FROM {self._reader})"

    def _count_rows(self) -> int:
        q = DUCKDB.ident
        if self.materialize and not self._stored:
            select = ", ".join(f"CAST({e} AS {self._types[c]}) AS {q(c)}"
                               for c, e in self._exprs.items())
            self._execute(f"CREATE TEMP TABLE {self._codes} AS SELECT {select} FROM {self._reader}")
            self._stored = True
            self.stats.passes += 1
            self.stats.bytes_scanned += self._file_scan_bytes(self.columns)
        checks = ", ".join(
            f"count_if({q(c)} = {MISSING_NOT_ALLOWED}), count_if({q(c)} = {NOT_IN_SCHEMA})"
            for c in self.columns)
        row = self._execute(f"SELECT count(*), {checks} FROM {self._codes_relation()}").fetchone()
        n = int(row[0])
        self.stats.passes += 1
        if self.materialize:
            self.stats.bytes_scanned += n * sum(_TYPE_BYTES[t] for t in self._types.values())
        else:
            self.stats.bytes_scanned += self._file_scan_bytes(self.columns)
        if n == 0:
            raise DataError(f"the private table '{self.name}' has no rows.",
                            hint="Keep at least one private row.", path=str(self.path))
        problems = []
        for i, c in enumerate(self.columns):
            missing, unknown = int(row[1 + 2 * i]), int(row[2 + 2 * i])
            if missing or unknown:
                problems.append((c, missing, unknown, self._examples(c) if unknown else []))
        if problems:
            self.close()
            self._raise_problems(problems)
        return n

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
        try:
            return self.con.execute(sql)
        except Exception as exc:
            if type(exc).__module__.startswith(("duckdb", "_duckdb")):
                raise DataError(f"DuckDB could not read '{self.name}': "
                                f"{str(exc).splitlines()[0]}", path=str(self.path)) from exc
            raise

    def close(self) -> None:
        con, self.con = getattr(self, "con", None), None
        if con is not None and self._own_connection:
            con.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
