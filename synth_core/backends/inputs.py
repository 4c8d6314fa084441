"""A run's inputs when the private data stays in a file or a Spark DataFrame.

:func:`synth_core.api.prepare_inputs` hands over to :func:`prepare_backend_inputs`
for ``backend="duckdb"`` or ``"spark"``. The private table is never loaded
here: its domain must come from a declared schema or from the public table
(which is small and loaded as usual), and it is counted by the backend.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..engine import PreparedData
from ..errors import ConfigError, DataError
from ..marginals import CodedTable
from ..schema import declared_schema, infer_schema
from ..tables import PublicInfo, PublicRows, load_table
from . import BACKENDS, make_backend


def prepare_backend_inputs(data, public=None, *, schema=None, public_flag: str | None = None,
                           public_columns: Sequence[str] = (), data_name: str | None = None,
                           public_name: str | None = None, backend: str = "duckdb",
                           options: dict | None = None):
    """(schema, PreparedData, PublicInfo, public label) with the private data
    as a counting backend. Raises ConfigError for what a backend cannot do."""
    if backend not in BACKENDS or backend == "memory":
        raise ConfigError(f"prepare_backend_inputs needs an engine backend, not {backend!r}.")
    if public_flag:
        raise ConfigError(f"public rows flagged by a column (--public-flag) need the memory "
                          f"backend; the {backend} backend counts the private file as a whole.",
                          hint="Put the public rows in their own file (--public), or use "
                               "--backend memory.")
    if public_columns:
        raise ConfigError(f"public columns (a vertical split) need the memory backend, not "
                          f"{backend}.", hint="Use --backend memory for vjam-pgm and "
                                              "conditional generation.")
    if isinstance(data, pd.DataFrame):
        raise ConfigError(f"the {backend} backend counts a file, not a DataFrame.",
                          hint="Pass the path of a .parquet or .csv file, or use the memory backend.")
    if not isinstance(data, (str, Path)) and not (backend == "spark" and _is_spark_frame(data)):
        raise DataError(f"the private table must be a path to a CSV/Parquet file"
                        f"{' or a Spark DataFrame' if backend == 'spark' else ''}, "
                        f"not {type(data).__name__}.")
    pname = data_name or (Path(data).name if isinstance(data, (str, Path)) else "Spark DataFrame")

    rows, public_df, public_label = None, None, None
    if public is not None:
        if isinstance(public, pd.DataFrame):
            public_df, pub_label = public, "public data"
        else:
            public_df, pub_label = load_table(public), Path(public).name
        pub_label = public_name or pub_label
        rows = PublicRows(table=public_df, source_name=pub_label)
        public_label = f"public table '{pub_label}', {len(public_df)} rows"
    info = PublicInfo(rows=rows)

    sch = declared_schema(schema)
    if sch is None:
        if public_df is None:
            raise ConfigError(
                f"the {backend} backend needs the domain from a declared schema (--schema) or "
                "from public rows (--public): inferring it from the private file would load "
                "the whole file (and the domain would not be privacy-protected).",
                hint="Declare a schema file, give a public table, or use --backend memory.")
        sch = infer_schema(public_df, source="public")
    info.validate(sch)

    public_table = None
    if public_df is not None:
        codes = sch.encode(public_df, table_name=rows.source_name, role="public table")
        public_table = CodedTable.from_frame(codes, sch.sizes)
    private = make_backend(backend, data, sch, name=pname, **(options or {}))
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


def _is_spark_frame(obj) -> bool:
    try:
        from pyspark.sql import DataFrame
    except ImportError:
        return False
    return isinstance(obj, DataFrame)
