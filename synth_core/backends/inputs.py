"""A run's inputs: the backend chosen by name, the public information handled once.

:func:`prepare_inputs` is the one input path of every backend ("memory",
"duckdb", "spark"). It imports the chosen backend's module by name (the memory
path never imports DuckDB or Spark), asks it for what depends on where the
private records live (the :class:`~synth_core.backends.base.Backend`
contract), and handles everything else the same way for all three:

* Columns left out on request (``drop_columns``) are checked against the
  private table's columns and never read.
* Public rows in their own table (a DataFrame or a file): loaded.
* Public rows flagged by a column of the private table (``public_flag``): the
  flag is checked over the whole table (every row true or false, some public
  rows, some private rows); the flagged rows are the public table, and only
  the rows where it reads false are counted. A backend that loads the flagged
  rows into memory (DuckDB, Spark) stops at :data:`MAX_PUBLIC_ROWS`.
* The domain: a declared schema, else read off the public rows, else read off
  the private records (memory only: an engine backend would load the file).
  Every data column of the private table must be in the domain or dropped.
* Public columns (a vertical split): checked against the schema; each private
  record's own values are kept where the backend holds them, and
  :func:`own_public_codes` loads those columns only where it does not.
"""

from __future__ import annotations

import filecmp
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import ConfigError, DataError, SchemaError
from ..marginals import CodedTable
from ..schema import Schema, declared_schema, infer_schema
from ..tables import (PublicInfo, PublicRows, check_drop_columns, check_no_column_lost,
                      check_column_names, load_table, private_as_public_error,
                      without_dropped)
from .base import Backend, MarginalCounter

#: backend name -> (module of synth_core.backends, its Backend class), imported on first use
REGISTRY = {
    "memory": ("memory", "MemoryBackend"),
    "duckdb": ("duckdb_backend", "DuckDBBackend"),
    "spark": ("spark_backend", "SparkBackend"),
}
BACKENDS = tuple(REGISTRY)

#: the most flagged public rows an engine backend reads into memory
MAX_PUBLIC_ROWS = 5_000_000


@dataclass
class PreparedInputs:
    """A run's tables after loading, splitting and encoding (see :func:`prepare_inputs`)."""

    schema: Schema
    #: the private records (flagged public rows excluded) as counts
    private: MarginalCounter
    #: the public rows' codes, or None
    public: CodedTable | None
    public_info: PublicInfo
    #: how the report names the public rows (None without public rows)
    public_label: str | None
    #: the private records' own values of the public columns, where the backend holds them
    public_values: pd.DataFrame | None
    dropped: tuple[str, ...]
    backend: str


def backend_module(backend: str):
    """The module of ``backend``, imported now (ConfigError for an unknown name)."""
    if backend not in REGISTRY:
        raise ConfigError(f"unknown counting backend {backend!r}.",
                          hint=f"Choose one of: {', '.join(BACKENDS)}.")
    return importlib.import_module(f"{__package__}.{REGISTRY[backend][0]}")


def backend_class(backend: str) -> type:
    """The :class:`~synth_core.backends.base.Backend` class of ``backend``."""
    return getattr(backend_module(backend), REGISTRY[backend][1])


def open_backend(backend: str, source, *, name: str | None = None, **options) -> Backend:
    """The private table ``source`` where ``backend`` reads it."""
    return backend_class(backend)(source, name=name, **options)


def prepare_inputs(data, public=None, *, schema=None, public_flag: str | None = None,
                   public_columns: Sequence[str] = (), data_name: str | None = None,
                   public_name: str | None = None, backend: str = "memory",
                   options: dict | None = None, drop: tuple[str, ...] = ()) -> PreparedInputs:
    """Load, split and encode a run's tables where ``backend`` reads them.

    ``drop``: column names left out on request. Raises ConfigError for what
    the backend cannot do, DataError and SchemaError for tables and schemas
    that do not fit (each naming the table and column at fault).
    """
    if public is not None and public_flag:
        raise ConfigError("Give either a public table or a public flag column, not both.")
    source = open_backend(backend, data, name=data_name, **(options or {}))
    columns = source.columns
    if drop:
        check_drop_columns(columns, drop, table_label=f"the private table '{source.name}'",
                           flag_column=public_flag, public_columns=tuple(public_columns))
        source.drop(drop)
    rows, public_df, public_label = _public_rows(source, public, public_flag, public_name, drop)
    if public is not None:
        if not set(public_df.columns) & set(columns):
            raise DataError(f"The public table ({public_label}) has no column in common with "
                            f"the private table '{source.name}'.",
                            hint="Public rows are records over the same columns; check that "
                                 "the two files are the tables you meant (and their header "
                                 "rows).")
        _refuse_the_private_table_as_public(data, public, source, public_df, public_label)
    info = PublicInfo(rows=rows, columns=tuple(public_columns))
    sch = _domain(schema, drop, public_df, source, public_flag)
    _check_columns(sch, info, columns, source.name, drop)
    public_table = _encode_public(sch, rows, public_df)
    private = _count_private(source, sch, public_flag)
    return PreparedInputs(sch, private, public_table, info, public_label,
                          source.public_values(tuple(public_columns), public_flag), drop, backend)


def _public_rows(source: Backend, public, flag: str | None, public_name: str | None,
                 drop: tuple[str, ...]
                 ) -> tuple[PublicRows | None, pd.DataFrame | None, str | None]:
    """(public rows, their table without the dropped columns, how the report names
    them): a separate table, the rows ``flag`` marks (checked over the whole
    private table), or none."""
    if public is not None:
        frame, label = _public_table(public)
        frame = _without(frame, drop)
        label = public_name or label
        named = f"public table '{label}'" if label else "an unnamed public table"
        return (PublicRows(table=frame, source_name=label), frame, f"{named}, {len(frame)} rows")
    if flag:
        summary = source.flag_summary(flag)
        summary.check(source.name)
        if source.loads_public_rows:
            check_public_row_cap(flag, summary.true, f"the {source.backend} backend",
                                 "give that file as the public table")
        return (PublicRows(flag_column=flag), _without(source.flagged_rows(flag), drop),
                # not the private file's name: it goes into the release, and names often say
                # whose records they are
                f"rows of the private table flagged by column '{flag}'")
    return None, None, None


def _refuse_the_private_table_as_public(data, public, source: Backend, public_df: pd.DataFrame,
                                        public_label: str) -> None:
    """ConfigError when the public table is the private one (the same file, a copy
    of its bytes, or the same records): public rows are used, and by the
    public-only baseline released, without protection."""
    same = source.holds_records(public_df)
    if same is None and isinstance(data, (str, Path)) and isinstance(public, (str, Path)):
        a, b = Path(data), Path(public)
        same = a.is_file() and b.is_file() and filecmp.cmp(a, b, shallow=False)  # in blocks
    if same:
        raise private_as_public_error(public_label, source.name)


def _without(frame: pd.DataFrame, drop: tuple[str, ...]) -> pd.DataFrame:
    """``frame`` without those of the dropped columns it has."""
    return frame.drop(columns=[c for c in drop if c in frame.columns])


def _public_table(public) -> tuple[pd.DataFrame, str | None]:
    """The public table (a DataFrame, or a file loaded whole) and its default name
    (a file's name; none for a DataFrame)."""
    if isinstance(public, pd.DataFrame):
        check_column_names(public, "the public table")
        return public, None
    if isinstance(public, (str, Path)):
        return load_table(public), Path(public).name
    raise DataError(f"The public table must be a DataFrame or a path to a CSV/Parquet file, "
                    f"not {type(public).__name__}.")


def _domain(schema, drop: tuple[str, ...], public_df: pd.DataFrame | None, source: Backend,
            flag: str | None) -> Schema:
    """The declared schema (without the dropped columns), else the domain read off
    the public rows (their columns that the private table has), else off the
    private records (where the backend allows it)."""
    sch = declared_schema(schema)
    if sch is not None:
        sch = without_dropped(sch, drop)
    elif public_df is not None:
        # a column of the public table only cannot be synthesised; ignored, as a
        # declared schema's encoding ignores it
        private = set(source.columns)
        sch = infer_schema(public_df[[c for c in public_df.columns if c in private]],
                           source="public")
    else:
        sch = source.infer_domain(flag)
    if flag and flag in sch.names:
        raise SchemaError(f"the public-rows flag column '{flag}' is also a schema column.",
                          hint="Remove it from the schema.", column=flag)
    return sch


def _check_columns(schema: Schema, info: PublicInfo, columns: Sequence[str], name: str,
                   drop: tuple[str, ...]) -> None:
    """The public columns are schema columns, and no data column of the private
    table is left out of the domain unless dropped on request."""
    info.validate(schema, allow_all_public=True)
    flag = info.rows.flag_column if info.rows is not None else None
    check_no_column_lost(columns, schema, table_label=f"the private table '{name}'",
                         flag_column=flag, drop=drop)


def _encode_public(schema: Schema, rows: PublicRows | None,
                   public_df: pd.DataFrame | None) -> CodedTable | None:
    """The public rows' codes (None without public rows)."""
    if public_df is None:
        return None
    if rows.table is not None:
        codes = schema.encode(public_df, table_name=rows.source_name, role="public table")
    else:
        codes = schema.encode(public_df, table_name=rows.flag_column, role="public rows flagged by")
    return CodedTable.from_frame(codes, schema.sizes)


def _count_private(source: Backend, schema: Schema, flag: str | None) -> MarginalCounter:
    """The private records as the backend's counter; a value outside a domain read
    off the public rows gets a hint to declare a schema."""
    try:
        return source.counter(schema, flag)
    except DataError as exc:
        if schema.source == "public":
            before = exc.hint_template + " " if exc.hint_template else ""
            raise DataError(exc.message, hint=before + "The domain was read off the "
                            "public rows, so it holds only the values they have (a column with "
                            "few distinct values there becomes a list of them); declare a "
                            "schema ({schema}) that covers every value. To propose one over "
                            "both tables: {infer}.",
                            column=exc.column, path=exc.path) from exc
        raise


def check_public_row_cap(flag: str, public_rows: int, loader: str, then: str) -> None:
    """ConfigError if ``flag`` marks more rows public than :data:`MAX_PUBLIC_ROWS`
    (``loader`` loads them into memory; ``then`` says what to do with a smaller file)."""
    if public_rows > MAX_PUBLIC_ROWS:
        raise ConfigError(
            f"flag column '{flag}' marks {public_rows:,} rows public; {loader} loads the "
            f"public rows into memory and stops at {MAX_PUBLIC_ROWS:,}.",
            hint=f"Write the public rows to their own (smaller) file or sample them, and {then}.",
            column=flag)


def own_public_codes(inputs, columns: Sequence[str]) -> pd.DataFrame:
    """Codes of ``columns`` for every private record (conditional generation).

    ``inputs``: a run's inputs (``schema``, ``data.private``, ``backend``,
    ``public_values``). The memory backend holds the codes already; an engine
    backend loads the raw values of these columns only (n x len(columns)
    values), in the file's row order, and keeps them as ``inputs.public_values``
    (each synthetic record keeps its own values).
    """
    codes, values = backend_class(inputs.backend).own_public_codes(
        inputs.data.private, inputs.schema, columns)
    if values is not None:
        inputs.public_values = values
    return codes


def make_backend(backend: str, source, schema: Schema, *, name: str | None = None, **options):
    """The private data as a counter of ``backend``, without the run's checks.

    ``source``: a path to a .parquet/.pq/.csv/.csv.gz file (any backend), a
    DataFrame (``memory``) or a Spark DataFrame (``spark``). ``options`` go to
    the engine backend's counter (e.g. ``public_flag``, ``memory_limit``, ``spark``).
    """
    label = name or (Path(source).name if isinstance(source, (str, Path)) else "data")
    return backend_class(backend).table(source, schema, name=label, **options)


def open_rows(backend: str, source, *, name: str | None = None, **options):
    """The file (or Spark DataFrame) read without a schema by an engine backend:
    :class:`~synth_core.backends.duckdb_backend.DuckDBFile` or
    :class:`~synth_core.backends.spark_backend.SparkFile` (columns, row count,
    flag counts, and the rows or columns that are meant to be loaded)."""
    if backend not in ("duckdb", "spark"):
        raise ConfigError(f"open_rows needs an engine backend (duckdb or spark), not {backend!r}.")
    return open_backend(backend, source, name=name, **options).reader
