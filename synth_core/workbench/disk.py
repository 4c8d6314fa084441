"""A private table that stays in a file on the server's disk, counted by DuckDB.

The file is never loaded into pandas: DuckDB reads its columns, counts its
rows and reads a preview (:data:`~synth_core.disk_table.PREVIEW_ROWS` rows);
runs pass the path with ``backend="duckdb"``, so every marginal, the public
proxy error and the curator-only workload error are counted by DuckDB. The
domain must come from a declared schema or from public rows (a public table,
or the rows a true/false column of the file flags): reading it off the
private file would read all of it, and would not protect it. A row filter
needs the table in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..budget import FILE_BYTES, table_fingerprint
from ..disk_table import DiskFile
from ..errors import ConfigError, DataError, SchemaError
from ..schema import ColumnSpec, Schema, infer_schema
from .public import PublicRowsChoice
from .source import TableSource


@dataclass(eq=False)
class DuckDBSource(TableSource):
    """A file under an allowed folder, counted where it lies."""

    file: DiskFile
    #: the file's first rows
    head: pd.DataFrame = field(repr=False)
    sample: str | None = field(default=None, init=False)
    out_of_core: bool = field(default=True, init=False)
    backend: str = field(default="duckdb", init=False)
    fingerprint_of: str = field(default=FILE_BYTES, init=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False)

    @classmethod
    def open(cls, path: Path) -> "DuckDBSource":
        return cls(*DiskFile.open(path))

    @property
    def preview(self) -> pd.DataFrame:
        return self.head

    @property
    def name(self) -> str:
        return self.file.path.name

    @property
    def path(self) -> Path:
        return self.file.path

    @property
    def n_rows(self) -> int:
        return self.file.rows

    @property
    def columns(self) -> list[str]:
        return list(self.head.columns)

    def fingerprint(self) -> str:
        """SHA-256 of the file's bytes."""
        if self._fingerprint is None:
            self._fingerprint = table_fingerprint(self.file.checked_path())
        return self._fingerprint

    def cli_data_args(self) -> list[str]:
        return ["--data", str(self.file.path), "--backend", "duckdb"]

    def run_data(self) -> dict:
        return {"data": str(self.file.checked_path()), "backend": "duckdb"}

    def _check_file_fits(self, schema: Schema) -> None:
        """DuckDB checks every value of the file in one pass (of the columns of
        ``schema``), without loading it."""
        from ..backends.duckdb_backend import DuckDBTable
        with DuckDBTable(self.file.checked_path(), schema, name=self.name,
                         materialize=False) as table:
            table.n

    def check_fits(self, schema: Schema, rows: PublicRowsChoice) -> None:
        """The public table first (in memory), then the file (one DuckDB pass).
        A domain may not declare the column that flags the public rows (the
        file holds it, so DuckDB alone would not notice)."""
        flag = rows.flag_column
        if flag and flag in schema.names:
            raise SchemaError(f"the schema declares '{flag}', the column that flags the public "
                              "rows.", hint="Remove it from the schema, or remove the public "
                                            "rows first.", column=flag)
        rows.check_fits(schema)
        self._check_file_fits(schema)

    def domain_from_public(self, public: pd.DataFrame, schema: Schema | None,
                           rows: PublicRowsChoice, what: str) -> Schema:
        """The domain of the file's columns read off ``public``, checked against
        the whole file (DataError saying to declare a schema when the public
        rows do not cover every value)."""
        names = [c for c in public.columns if c in self.file.columns]
        if not names:
            raise DataError(f"{what} shares no column with '{self.name}'.",
                            hint=f"Its columns must be those of the file: "
                                 f"{', '.join(self.file.columns)}.")
        new = infer_schema(public[names], source="public")
        try:
            self._check_file_fits(new)
        except DataError as exc:
            raise DataError(exc.message, column=exc.column, path=exc.path,
                            hint="The domain was read off the public rows, which do not cover "
                                 "every value of the file: declare a schema (JSON) instead."
                            ) from exc
        return new

    def holds_records(self, frame: pd.DataFrame) -> None:
        """Not told: the file stays on disk (loading it to compare is what this source
        avoids)."""
        return None

    def shared_records(self, frame: pd.DataFrame) -> None:
        """Not told, as :meth:`holds_records`."""
        return None

    def public_rows(self, flag_column: str) -> pd.DataFrame:
        return self.file.flagged_rows(flag_column)

    def count_flagged(self, flag_column: str) -> int:
        return self.file.flag_summary(flag_column).true

    def private_rows(self, columns: Sequence[str], flag_column: str | None) -> pd.DataFrame:
        """DuckDB reads these columns of the private rows only (n x len(columns) values)."""
        return self.file.reader().rows(list(columns), flag=flag_column,
                                       flagged=False if flag_column else None)

    def flag_candidates(self) -> list[str]:
        return self.file.flag_candidates()

    def check_flag(self, column: str) -> None:
        """DuckDB checks the flag over the whole file."""
        if column not in self.file.columns:
            raise DataError(f"the flag column '{column}' is not in the table.", column=column)
        summary = self.file.flag_summary(column)
        if summary.invalid:
            summary.check(self.name)
        if summary.true == 0:
            raise DataError(f"flag column '{column}' marks no row as public.",
                            hint="Choose a column that is true for some rows.", column=column)
        if summary.false == 0:
            raise DataError(f"flag column '{column}' marks every row as public.",
                            hint="Keep at least one private row.", column=column)

    def flag_column_spec(self, column: str) -> ColumnSpec | None:
        """None: the flag column's domain would have to be read off the private file."""
        return None

    def filter_mask(self, column: str, values: Sequence) -> np.ndarray:
        raise ConfigError(
            "a row filter needs the table in memory; this file stays on disk (DuckDB).",
            hint="Open the file with the Memory backend on the Data page, or add a true/false "
                 "column to the file and use it as the public-rows flag.")

    def add_flag(self, name: str, mask: np.ndarray) -> None:
        raise ConfigError("a row filter needs the table in memory.")

    def drop_flag(self) -> None:
        """Nothing to drop: no flag column is ever added to a file on disk."""
