"""A table on the server's disk: the workbench points at a file instead of uploading it.

``Workbench.load_disk(path, backend)`` opens a Parquet or CSV file under an
allowed folder:

* ``backend="duckdb"``: out of core. The file is never loaded into pandas:
  DuckDB reads its columns, counts its rows and reads a 100-row preview
  (``LIMIT 100``). ``Workbench.data`` then holds that preview only (use
  ``Workbench.n_rows`` for the size); runs pass the path with
  ``backend="duckdb"``, so every marginal, the public proxy error and the
  curator-only workload error are counted by DuckDB. The domain must come
  from a declared schema or from public rows (a public table, or the rows a
  true/false column of the file flags): inferring it from the private file
  would read all of it, and would not protect it. A row filter needs the
  table in memory.
* ``backend="memory"``: the file is loaded, as an upload would be.

Allowed folders: ``$SYNTH_WORKBENCH_DATA_ROOTS`` (``os.pathsep``-separated),
by default the working directory. A path is resolved (symbolic links,
``..``) before it is checked against them.

:class:`DiskTableMixin` holds the workbench's part of this, kept apart from
the rest of :class:`~synth_core.workbench.Workbench`: it overrides the
methods that would otherwise read the whole table (when the table is on
disk) and defers to them otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from .backends import CountingBackend, FlagSummary
from .backends.inputs import check_public_row_cap
from .errors import ConfigError, DataError, SchemaError
from .schema import Schema, infer_schema
from .tables import PublicRows, check_table_file, load_table

#: the environment variable with the folders the workbench may open files in
DATA_ROOTS_ENV = "SYNTH_WORKBENCH_DATA_ROOTS"
#: how the Data page may open a file on disk
DISK_BACKENDS = {"duckdb": "DuckDB: out of core, the file stays on disk",
                 "memory": "Memory: load the whole file"}
#: rows of the preview
PREVIEW_ROWS = 100


def data_roots() -> list[Path]:
    """The allowed folders (resolved), from ``$SYNTH_WORKBENCH_DATA_ROOTS`` or the
    working directory."""
    raw = os.environ.get(DATA_ROOTS_ENV, "")
    parts = [p.strip() for p in raw.split(os.pathsep) if p.strip()] or [os.getcwd()]
    return [Path(p).expanduser().resolve() for p in parts]


def resolve_data_path(text: str) -> Path:
    """The file ``text`` names, resolved, if it may be opened: under an allowed
    folder, a CSV/Parquet name, an existing readable file. DataError otherwise,
    saying which of these failed (in that order: nothing is said about files
    outside the allowed folders)."""
    raw = str(text or "").strip().strip('"').strip("'")
    if not raw:
        raise DataError("enter the path of a .parquet or .csv file on this machine.")
    roots = data_roots()
    shown = ", ".join(str(r) for r in roots)
    try:
        path = Path(raw).expanduser()
        if not path.is_absolute():
            path = Path.cwd() / path
        path = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:   # NUL bytes, symlink loops
        raise DataError(f"cannot use the path '{raw}': {exc}.") from None
    if not any(path == root or path.is_relative_to(root) for root in roots):
        raise DataError(f"'{raw}' is outside the folders this workbench may open.",
                        hint=f"Allowed: {shown}. Move the file there, or have the administrator "
                             f"add its folder to {DATA_ROOTS_ENV} (folders separated by "
                             f"'{os.pathsep}').")
    check_table_file(path, raw, missing_hint=f"Check the path (a relative path is read from "
                                             f"{Path.cwd()}).")
    if not os.access(path, os.R_OK):
        raise DataError(f"file '{raw}' cannot be read (permission denied).",
                        hint="Check the file's permissions.", path=str(path))
    return path


@dataclass
class DiskTable:
    """A file the workbench opened from disk, and what it learned about it."""

    path: Path
    backend: str
    rows: int
    columns: list[str]
    #: flag column -> its counts over the whole file
    flags: dict[str, FlagSummary] = field(default_factory=dict)
    flag_columns: list[str] | None = None
    _public_rows: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @property
    def out_of_core(self) -> bool:
        return self.backend == "duckdb"

    def checked_path(self) -> Path:
        """The path, checked again before the file is read again (a file
        replaced by a link out of the allowed folders is refused)."""
        path = resolve_data_path(str(self.path))
        if path != self.path:
            raise DataError(f"'{self.path}' now leads to another file ({path}).",
                            hint="Open the file again on the Data page.", path=str(self.path))
        return path

    def reader(self):
        from .backends.duckdb_backend import DuckDBFile
        return DuckDBFile(self.checked_path(), name=self.path.name)

    def flag_summary(self, column: str) -> FlagSummary:
        if column not in self.flags:
            self.flags[column] = self.reader().flag_summary(column)
        return self.flags[column]

    def flagged_rows(self, column: str) -> pd.DataFrame:
        """The rows ``column`` flags true (public, so they may be loaded; at most
        MAX_PUBLIC_ROWS)."""
        if column not in self._public_rows:
            check_public_row_cap(column, self.flag_summary(column).true, "the workbench",
                                 "upload that file as the public table")
            self._public_rows.clear()
            self._public_rows[column] = self.reader().rows(flag=column, flagged=True)
        return self._public_rows[column]


class DiskTableMixin:
    """The Workbench's part for a table opened from disk (see the module doc).

    Overrides act only while the table is out of core (``self.disk`` with the
    DuckDB backend) and call the Workbench's own methods otherwise.
    """

    disk: DiskTable | None = None

    # ---------------------------------------------------------------- state

    @property
    def out_of_core(self) -> bool:
        """The table stays on disk; ``data`` holds a preview only."""
        return self.disk is not None and self.disk.out_of_core

    @property
    def n_rows(self) -> int:
        """Rows of the loaded table (of the file, when it stays on disk)."""
        if self.out_of_core:
            return self.disk.rows
        return super().n_rows

    @property
    def needs_domain(self) -> bool:
        """A file on disk is open but its domain is not declared yet."""
        return self.out_of_core and self.data is not None and self.schema is None

    @staticmethod
    def data_roots() -> list[Path]:
        return data_roots()

    def load_disk(self, path_text: str, backend: str = "duckdb") -> None:
        """Open a CSV/Parquet file under an allowed folder (see the module doc).
        Checks everything before anything loaded is replaced."""
        if backend not in DISK_BACKENDS:
            raise ConfigError(f"unknown way to open a file: {backend!r}.",
                              hint=f"Choose one of: {', '.join(DISK_BACKENDS)}.")
        path = resolve_data_path(path_text)
        if backend == "memory":
            self._load_frame(load_table(path, name=path.name), path.name)
            self.disk = DiskTable(path, "memory", len(self.data), list(self.data.columns))
            return
        reader = self._open_reader(path)
        columns = list(reader.columns)
        rows = reader.count()
        if rows == 0:
            raise DataError(f"'{path.name}' has columns but no rows.",
                            hint="Add data rows to the file.", path=str(path))
        preview = reader.rows(limit=PREVIEW_ROWS)
        self._set_data(preview, path.name, sample=None)
        self.disk = DiskTable(path, "duckdb", rows, columns)
        self._use_own_table(None, inferred=False)

    @staticmethod
    def _open_reader(path: Path):
        from .backends.duckdb_backend import DuckDBFile
        reader = DuckDBFile(path, name=path.name)
        names = list(reader.columns)  # reads the header / footer: DataError if damaged
        if not names:
            raise DataError(f"'{path.name}' has no columns.", path=str(path))
        blank = [n for n in names if not n]
        if blank:
            raise DataError(f"'{path.name}' has blank column names.",
                            hint="Give every column a name in the header row.", path=str(path))
        return reader

    def _set_data(self, df, name, sample):
        super()._set_data(df, name, sample)
        self.disk = None

    def require_table(self) -> None:
        if self.data is None:
            raise DataError("No table is loaded yet.",
                            hint="Load a bundled sample, upload a table or open a file on the "
                                 "Data page.")

    # ---------------------------------------------------------------- the domain

    def load_schema_file(self, filename: str, content: bytes) -> None:
        if not self.out_of_core:
            return super().load_schema_file(filename, content)
        self.require_table()
        from .workbench import parse_schema_upload
        schema = parse_schema_upload(filename, content)
        flag = self.public_flag if self.public_mode == "flag" else None
        if flag and flag in schema.names:
            raise SchemaError(f"the schema declares '{flag}', the column that flags the public "
                              "rows.", hint="Remove it from the schema, or remove the public "
                                            "rows first.", column=flag)
        self._declare_schema(schema)

    def _check_schema_fits(self, schema: Schema, only: str | None = None) -> None:
        """Out of core: DuckDB checks every value of the file in one pass (of
        the columns checked), without loading it."""
        if not self.out_of_core:
            return super()._check_schema_fits(schema, only)
        target = schema.project([only]) if only else schema
        if self.public_mode == "table" and self.public_table is not None:
            target.check_fits(self.public_table, self.public_name or "public", role="public table")
        self._check_file_fits(target)

    def _check_file_fits(self, schema: Schema) -> None:
        from .backends.duckdb_backend import DuckDBTable
        with DuckDBTable(self.disk.checked_path(), schema, name=self.data_name,
                         materialize=False) as table:
            table.n

    def _disk_schema_from(self, public: pd.DataFrame, what: str) -> Schema:
        """A domain read off public rows, checked against the whole file."""
        names = [c for c in public.columns if c in self.disk.columns]
        if not names:
            raise DataError(f"{what} shares no column with '{self.data_name}'.",
                            hint=f"Its columns must be those of the file: "
                                 f"{', '.join(self.disk.columns)}.")
        schema = infer_schema(public[names], source="public")
        try:
            self._check_file_fits(schema)
        except DataError as exc:
            raise DataError(exc.message, column=exc.column, path=exc.path,
                            hint="The domain was read off the public rows, which do not cover "
                                 "every value of the file: declare a schema (JSON) instead."
                            ) from exc
        return schema

    def infer_schema_from_public(self) -> None:
        if not self.out_of_core:
            return super().infer_schema_from_public()
        self.require_table()
        pub = self.public_rows_frame()
        if pub is None:
            raise ConfigError("There are no public rows to read a domain from.",
                              hint="Add public rows first.")
        schema = self._disk_schema_from(pub, "the public rows")
        self.schema = schema
        self.schema_inferred = True
        self.schema_edited = False
        self.schema_errors = {}
        self._proxy_cache.clear()

    # ---------------------------------------------------------------- public rows

    def public_rows_frame(self):
        if self.out_of_core and self.public_mode == "flag":
            return self.disk.flagged_rows(self.public_flag)
        return super().public_rows_frame()

    def public_summary(self) -> str:
        if not (self.out_of_core and self.public_mode == "flag"):
            return super().public_summary()
        n = self.disk.flag_summary(self.public_flag).true
        cols = (", public columns: " + ", ".join(self.public_columns)) if self.public_columns else ""
        return f"{n:,} rows flagged by column '{self.public_flag}'" + cols

    def set_public_table(self, filename: str, content: bytes) -> None:
        """Out of core, without a domain yet: the domain is read off this table
        (and checked against the whole file)."""
        if not self.out_of_core:
            return super().set_public_table(filename, content)
        self.require_table()
        df = self._read_upload(filename, content)
        label = Path(filename).name
        if self.schema is None:
            schema = self._disk_schema_from(df, f"public table '{label}'")
        else:
            schema = None
            self.schema.check_fits(df, label, role="public table")
        self.public_mode, self.public_flag = "none", None
        self._proxy_cache.clear()
        if schema is not None:
            self.schema = schema
            self.schema_inferred = True
        self.public_mode = "table"
        self.public_table = df
        self.public_name = label

    def flag_candidates(self) -> list[str]:
        if not self.out_of_core:
            return super().flag_candidates()
        if self.disk.flag_columns is None:
            self.disk.flag_columns = self.disk.reader().flag_candidates()  # one pass
        return list(self.disk.flag_columns)

    def set_public_flag(self, column: str) -> None:
        """Out of core: DuckDB checks the flag over the whole file; the flagged
        rows are read (they are public) only to read a domain off them."""
        if not self.out_of_core:
            return super().set_public_flag(column)
        self.require_table()
        if column not in self.disk.columns:
            raise DataError(f"the flag column '{column}' is not in the table.", column=column)
        summary = self.disk.flag_summary(column)
        if summary.invalid:
            summary.check(self.data_name)
        if summary.true == 0:
            raise DataError(f"flag column '{column}' marks no row as public.",
                            hint="Choose a column that is true for some rows.", column=column)
        if summary.false == 0:
            raise DataError(f"flag column '{column}' marks every row as public.",
                            hint="Keep at least one private row.", column=column)
        schema = self.schema
        if schema is None:
            schema = self._disk_schema_from(self.disk.flagged_rows(column),
                                            f"the rows flagged by '{column}'")
            inferred = True
        else:
            inferred = self.schema_inferred
        schema = schema.without_flag(column)
        self.public_mode, self.public_table, self.public_name = "none", None, None
        self.schema = schema
        self.schema_inferred = inferred
        self.public_mode = "flag"
        self.public_flag = column
        self.public_columns = tuple(c for c in self.public_columns if c in schema.names)
        self._proxy_cache.clear()

    def _restore_flag_column(self) -> None:
        if not self.out_of_core:
            return super()._restore_flag_column()
        # the flag column's domain would have to be read off the private file: it stays out

    def set_public_filter(self, column, values) -> None:
        if not self.out_of_core:
            return super().set_public_filter(column, values)
        raise ConfigError(
            "a row filter needs the table in memory; this file stays on disk (DuckDB).",
            hint="Open the file with the Memory backend on the Data page, or add a true/false "
                 "column to the file and use it as the public-rows flag.")

    def private_column_values(self, columns) -> pd.DataFrame:
        """The private records' own values of ``columns`` (public columns: known
        for every record), in table order. Out of core, DuckDB reads these
        columns of the private rows only (n x len(columns) values)."""
        columns = list(columns)
        if not self.out_of_core:
            if self.public_mode in ("flag", "filter"):
                flag = self.public_flag if self.public_mode == "flag" else self.filter_flag
                own = PublicRows(flag_column=flag).split(self.data)[0]
            else:
                own = self._private_part()
            return own[columns].reset_index(drop=True)
        flag = self.public_flag if self.public_mode == "flag" else None
        return self.disk.reader().rows(columns, flag=flag,
                                       flagged=False if flag else None)

    # ---------------------------------------------------------------- runs

    def run_kwargs(self) -> dict:
        if not self.out_of_core:
            return super().run_kwargs()
        self.require_data()
        kwargs = dict(data=str(self.disk.checked_path()), schema=self.schema,
                      public_columns=self.public_columns, data_name=self.data_name,
                      backend="duckdb")
        if self.public_mode == "table":
            kwargs.update(public=self.public_table, public_name=self.public_name)
        elif self.public_mode == "flag":
            kwargs.update(public_flag=self.public_flag)
        return kwargs

    def compare_sweep(self, mechanisms, epsilons, seeds):
        """Out of core: the comparison runs count the file with DuckDB too."""
        sweep = super().compare_sweep(mechanisms, epsilons, seeds)
        if not self.out_of_core:
            return sweep
        return replace(sweep, datasets=tuple(replace(d, backend="duckdb")
                                             for d in sweep.datasets))

    def collect(self):
        """A finished run keeps its counts; its DuckDB connection and stored codes go."""
        run = super().collect()
        result = getattr(run, "result", None)
        if result is not None and isinstance(result.inputs.data.private, CountingBackend):
            result.inputs.data.private.close()
        return run

    def _reproduce_data_args(self) -> list[str]:
        """A file on disk is named by its resolved (absolute) path, with
        ``--backend duckdb`` when it is counted out of core."""
        if self.disk is None:
            return super()._reproduce_data_args()
        extra = ["--backend", "duckdb"] if self.out_of_core else []
        return ["--data", str(self.disk.path)] + extra
