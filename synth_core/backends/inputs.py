"""A run's inputs when the private data stays in a file or a Spark DataFrame.

:func:`synth_core.api.prepare_inputs` hands over to :func:`prepare_backend_inputs`
for ``backend="duckdb"`` or ``"spark"``. The private table is never loaded
here: its domain must come from a declared schema or from the public rows
(which are small and loaded as usual), and it is counted by the backend.

* Public rows in their own table: loaded as usual.
* Public rows flagged by a column of the private file (``public_flag``): the
  engine reads the flag; the backend counts the rows where it reads false,
  and the flagged rows are read (one ``WHERE`` query) as the public table.
  They are public, so loading them is fine, up to :data:`MAX_PUBLIC_ROWS`.
* Public columns (a vertical split): vJAM-PGM needs only marginals, which the
  backend counts exactly. Conditional generation also needs every private
  record's own public values: :func:`own_public_codes` loads those columns,
  and only those, when the synthetic records are drawn (n x |public columns|
  values in memory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..engine import PreparedData
from ..errors import ConfigError, DataError, SchemaError
from ..marginals import CodedTable
from ..schema import declared_schema, infer_schema
from ..tables import (PublicInfo, PublicRows, check_drop_columns, check_no_column_lost,
                      check_unique_columns, load_table, without_dropped)
from . import BACKENDS, CountingBackend, make_backend, open_rows

#: the most flagged public rows an engine backend reads into memory
MAX_PUBLIC_ROWS = 5_000_000


def prepare_backend_inputs(data, public=None, *, schema=None, public_flag: str | None = None,
                           public_columns: Sequence[str] = (), data_name: str | None = None,
                           public_name: str | None = None, backend: str = "duckdb",
                           options: dict | None = None, drop_columns: Sequence[str] = ()):
    """(schema, PreparedData, PublicInfo, public label) with the private data
    as a counting backend. Raises ConfigError for what a backend cannot do.

    As with the memory backend, every data column of the private file must be
    in the domain or named in ``drop_columns`` (dropped columns are never read)."""
    if backend not in BACKENDS or backend == "memory":
        raise ConfigError(f"prepare_backend_inputs needs an engine backend, not {backend!r}.")
    if public is not None and public_flag:
        raise ConfigError("Give either a public table or a public flag column, not both.")
    if isinstance(data, pd.DataFrame):
        raise ConfigError(f"the {backend} backend counts a file, not a DataFrame.",
                          hint="Pass the path of a .parquet or .csv file, or use the memory backend.")
    if not isinstance(data, (str, Path)) and not (backend == "spark" and _is_spark_frame(data)):
        raise DataError(f"the private table must be a path to a CSV/Parquet file"
                        f"{' or a Spark DataFrame' if backend == 'spark' else ''}, "
                        f"not {type(data).__name__}.")
    pname = data_name or (Path(data).name if isinstance(data, (str, Path)) else "Spark DataFrame")
    options = dict(options or {})
    drop = tuple(drop_columns)
    file_columns = list(open_rows(backend, data, name=pname, **options).columns)
    label = f"the private table '{pname}'"
    if drop:
        check_drop_columns(file_columns, drop, table_label=label, flag_column=public_flag,
                           public_columns=tuple(public_columns))

    rows, public_df, public_label = None, None, None
    if public is not None:
        if isinstance(public, pd.DataFrame):
            check_unique_columns(public, "the public table")
            public_df, pub_label = public, "public data"
        else:
            public_df, pub_label = load_table(public), Path(public).name
        public_df = public_df.drop(columns=[c for c in drop if c in public_df.columns])
        pub_label = public_name or pub_label
        rows = PublicRows(table=public_df, source_name=pub_label)
        public_label = f"public table '{pub_label}', {len(public_df)} rows"
    elif public_flag:
        public_df = read_flagged_rows(backend, data, public_flag, name=pname, options=options)
        public_df = public_df.drop(columns=[c for c in drop if c in public_df.columns])
        rows = PublicRows(flag_column=public_flag)
        public_label = f"rows of '{pname}' flagged by column '{public_flag}'"
    info = PublicInfo(rows=rows, columns=tuple(public_columns))

    sch = declared_schema(schema)
    if sch is not None:
        sch = without_dropped(sch, drop)
    else:
        if public_df is None:
            raise ConfigError(
                f"the {backend} backend needs the domain from a declared schema (--schema) or "
                "from public rows (--public or --public-flag): inferring it from the private "
                "file would load the whole file (and the domain would not be "
                "privacy-protected).",
                hint="Declare a schema file, give public rows, or use --backend memory.")
        sch = infer_schema(public_df, source="public")
    if public_flag and public_flag in sch.names:
        raise SchemaError(f"the public-rows flag column '{public_flag}' is also a schema column.",
                          hint="Remove it from the schema.", column=public_flag)
    info.validate(sch, allow_all_public=True)
    check_no_column_lost(file_columns, sch, table_label=label, flag_column=public_flag, drop=drop)

    public_table = None
    if public_df is not None:
        if rows.table is not None:
            codes = sch.encode(public_df, table_name=rows.source_name, role="public table")
        else:
            codes = sch.encode(public_df, table_name=public_flag, role="public rows flagged by")
        public_table = CodedTable.from_frame(codes, sch.sizes)
    if public_flag:
        options["public_flag"] = public_flag
    private = make_backend(backend, data, sch, name=pname, **options)
    try:
        private.n  # one pass: count the rows and check that every value fits
    except DataError as exc:
        private.close()
        if sch.source == "public":
            raise DataError(exc.message, hint=(exc.hint or "") + " The domain was inferred from "
                            "the public rows; declare a schema (--schema) that covers every value.",
                            column=exc.column, path=exc.path) from exc
        raise
    return sch, PreparedData(private, public_table), info, public_label


def read_flagged_rows(backend: str, data, flag: str, *, name: str,
                      options: dict | None = None) -> pd.DataFrame:
    """The rows of the private file whose ``flag`` column reads true (without
    the flag column), after checking the flag over the whole file: every row
    true or false, some public rows, some private rows, at most
    :data:`MAX_PUBLIC_ROWS` public ones."""
    reader = open_rows(backend, data, name=name, **(options or {}))
    summary = reader.flag_summary(flag)
    summary.check(name)
    check_public_row_cap(flag, summary.true, f"the {backend} backend",
                         "give that file as the public table")
    return reader.rows(flag=flag, flagged=True)


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

    The memory backend holds them already. An engine backend loads the raw
    values of these columns only (n x len(columns) values), in the file's row
    order, encodes them with the schema, and keeps them as
    ``inputs.public_values`` (each synthetic record keeps its own values).
    """
    private = inputs.data.private
    if not isinstance(private, CountingBackend):
        return private.to_frame()
    values = private.record_values(columns)
    if len(values) != private.n:
        raise DataError(f"'{private.name}' changed while it was read: {len(values):,} records "
                        f"now, {private.n:,} counted.", hint="Run again on a file that does "
                        "not change during the run.")
    codes = inputs.schema.project(list(columns)).encode(values, table_name=private.name,
                                                        role="private table")
    inputs.public_values = values[list(columns)].reset_index(drop=True)
    return codes.reset_index(drop=True)


def _is_spark_frame(obj) -> bool:
    try:
        from pyspark.sql import DataFrame
    except ImportError:
        return False
    return isinstance(obj, DataFrame)
