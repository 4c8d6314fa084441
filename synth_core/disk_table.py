"""A table on the server's disk: the workbench points at a file instead of uploading it.

``Workbench.load_disk(path, backend)`` opens a Parquet or CSV file under an
allowed folder (this module finds and checks the file and reads what DuckDB
says about it; :class:`~synth_core.workbench.disk.DuckDBSource` is the
workbench's table source for it):

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

"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .backends import FlagSummary
from .backends.inputs import check_public_row_cap
from .errors import ConfigError, DataError
from .tables import check_table_file, load_table

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


def check_backend(backend: str) -> None:
    """ConfigError unless ``backend`` is one of :data:`DISK_BACKENDS`."""
    if backend not in DISK_BACKENDS:
        raise ConfigError(f"unknown way to open a file: {backend!r}.",
                          hint=f"Choose one of: {', '.join(DISK_BACKENDS)}.")


def load_file_frame(path: Path) -> pd.DataFrame:
    """The whole file loaded into pandas (the Memory backend)."""
    return load_table(path, name=path.name)


def open_reader(path: Path):
    """A DuckDB reader of the file, its header or footer read and checked
    (DataError if damaged, without columns or with blank column names)."""
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


@dataclass
class DiskFile:
    """A file the workbench opened from disk to count with DuckDB, and what it
    learned about it (counted over the whole file, read once)."""

    path: Path
    rows: int
    columns: list[str]
    #: flag column -> its counts over the whole file
    flags: dict[str, FlagSummary] = field(default_factory=dict)
    flag_columns: list[str] | None = None
    _public_rows: dict[str, pd.DataFrame] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, path: Path) -> tuple["DiskFile", pd.DataFrame]:
        """The file's facts (columns, row count) and its first
        :data:`PREVIEW_ROWS` rows; DataError if it has no rows."""
        reader = open_reader(path)
        columns = list(reader.columns)
        rows = reader.count()
        if rows == 0:
            raise DataError(f"'{path.name}' has columns but no rows.",
                            hint="Add data rows to the file.", path=str(path))
        return cls(path, rows, columns), reader.rows(limit=PREVIEW_ROWS)

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

    def flag_candidates(self) -> list[str]:
        """The file's true/false columns (one pass over the file, then remembered)."""
        if self.flag_columns is None:
            self.flag_columns = self.reader().flag_candidates()
        return list(self.flag_columns)

    def flagged_rows(self, column: str) -> pd.DataFrame:
        """The rows ``column`` flags true (public, so they may be loaded; at most
        MAX_PUBLIC_ROWS)."""
        if column not in self._public_rows:
            check_public_row_cap(column, self.flag_summary(column).true, "the workbench",
                                 "upload that file as the public table")
            self._public_rows.clear()
            self._public_rows[column] = self.reader().rows(flag=column, flagged=True)
        return self._public_rows[column]
