"""The public information of a session, as a value.

A :class:`PublicChoice` says which rows are public (one of four kinds) and
which columns are public (known for every record). It is frozen: the session
replaces it whole when the curator changes it. Each kind of public rows knows
what a run, the release report's summary and the ``synth run`` command need
from it:

* :class:`NoPublicRows`: nothing public but the domain.
* :class:`PublicTable`: an uploaded table of public rows (``--public``).
* :class:`FlaggedRows`: the rows of the private table whose true/false
  ``column`` is true (``--public-flag``).
* :class:`FilteredRows`: the rows whose ``column`` value is one of ``values``;
  the table source adds a flag column (:attr:`FilteredRows.flag_column`) that
  marks them, which the CLI needs in the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import ClassVar, Protocol, Sequence, Union

import pandas as pd

from ..schema import Schema
from .command import arg, column_list_notes


class FlaggedRowsReader(Protocol):
    """What public rows marked by a flag column need from the private table
    (part of :class:`~synth_core.workbench.source.TableSource`)."""

    def public_rows(self, flag_column: str) -> pd.DataFrame:
        """The rows ``flag_column`` marks true."""

    def count_flagged(self, flag_column: str) -> int:
        """How many rows ``flag_column`` marks true."""

#: the prefix of the flag column the workbench adds for a row filter; the
#: column's full name says which rows are public ("public if sex in F")
FILTER_FLAG = "public if "
#: names the reproduce command gives the flag column a row filter needs in the file
CLI_FILTER_FLAGS = ("is_public", "is_public_row", "public_row_flag")


def filter_flag_name(column: str, values: Sequence) -> str:
    """The name of the flag column that marks the rows whose ``column`` is in ``values``:
    one name per value list (a long list is cut, with a digest of the whole list, so
    two lists that start alike get two names: the name says which records a run
    treats as public, and a table's budget account tells filters apart by it)."""
    shown = "|".join(map(str, values))
    if len(shown) > 60:
        digest = hashlib.sha256(shown.encode("utf-8")).hexdigest()[:8]
        shown = f"{shown[:48]}... #{digest}"
    return f"{FILTER_FLAG}{column} in {shown}"


def _no_public_args(sample_public: str | None) -> list[str]:
    """A bundled sample with a public table: the command must say it is not used."""
    return ["--no-public"] if sample_public else []


@dataclass(frozen=True)
class NoPublicRows:
    """No public rows."""

    kind: ClassVar[str] = "none"
    has_rows: ClassVar[bool] = False
    #: the column of the private table that marks public rows (none here)
    flag_column: ClassVar[str | None] = None

    def summary(self, source: FlaggedRowsReader) -> str:
        return "no public rows"

    def frame(self, source: FlaggedRowsReader) -> pd.DataFrame | None:
        """The public rows (None: there are none)."""
        return None

    def run_kwargs(self) -> dict:
        return {}

    def check_fits(self, schema: Schema) -> None:
        """Nothing to check: there are no public rows."""

    def cli(self, sample_public: str | None, columns: Sequence[str]) -> tuple[list, list]:
        return _no_public_args(sample_public), []


@dataclass(frozen=True, eq=False)
class PublicTable:
    """An uploaded table of public rows (its file name labels it)."""

    name: str
    table: pd.DataFrame = field(repr=False)
    kind: ClassVar[str] = "table"
    has_rows: ClassVar[bool] = True
    flag_column: ClassVar[str | None] = None

    def summary(self, source: FlaggedRowsReader) -> str:
        return f"public table '{self.name}' ({len(self.table):,} rows)"

    def frame(self, source: FlaggedRowsReader) -> pd.DataFrame:
        return self.table

    def run_kwargs(self) -> dict:
        return {"public": self.table, "public_name": self.name}

    def check_fits(self, schema: Schema) -> None:
        """DataError (naming the column) if the public table does not fit ``schema``."""
        schema.check_fits(self.table, self.name or "public", role="public table")

    def cli(self, sample_public: str | None, columns: Sequence[str]) -> tuple[list, list]:
        """``--public NAME``, unless it is the bundled sample's own public table."""
        if sample_public is not None and self.name == sample_public:
            return [], []
        return arg("--public", self.name or "public.csv"), []


@dataclass(frozen=True)
class FlaggedRows:
    """The rows of the private table whose true/false ``column`` is true."""

    column: str
    kind: ClassVar[str] = "flag"
    has_rows: ClassVar[bool] = True

    @property
    def flag_column(self) -> str:
        return self.column

    def summary(self, source: FlaggedRowsReader) -> str:
        return f"{source.count_flagged(self.column):,} rows flagged by column '{self.column}'"

    def frame(self, source: FlaggedRowsReader) -> pd.DataFrame:
        return source.public_rows(self.column)

    def run_kwargs(self) -> dict:
        return {"public_flag": self.column}

    def check_fits(self, schema: Schema) -> None:
        """The flagged rows are rows of the private table: checked with it."""

    def cli(self, sample_public: str | None, columns: Sequence[str]) -> tuple[list, list]:
        return _no_public_args(sample_public) + arg("--public-flag", self.column), []


@dataclass(frozen=True)
class FilteredRows:
    """The rows of the private table whose ``column`` value is one of ``values``."""

    column: str
    values: tuple
    kind: ClassVar[str] = "filter"
    has_rows: ClassVar[bool] = True

    @property
    def flag_column(self) -> str:
        """The flag column the table source adds to mark these rows."""
        return filter_flag_name(self.column, self.values)

    def summary(self, source: FlaggedRowsReader) -> str:
        n = source.count_flagged(self.flag_column)
        return f"{n:,} rows where {self.column} in {{{', '.join(map(str, self.values))}}}"

    def frame(self, source: FlaggedRowsReader) -> pd.DataFrame:
        return source.public_rows(self.flag_column)

    def run_kwargs(self) -> dict:
        return {"public_flag": self.flag_column}

    def check_fits(self, schema: Schema) -> None:
        """The filtered rows are rows of the private table: checked with it."""

    def caveat(self, schema: Schema) -> str | None:
        """What the split does to the filter column while it is still synthesised
        (None once it is left out): the public rows hold only ``values`` there and
        the private rows none of them, so the public rows say nothing about it."""
        if self.column not in schema.names:
            return None
        shown = ", ".join(map(str, self.values))
        return (f"Every public row has {self.column} in {{{shown}}} and, by this split, no "
                f"private row does: the public rows say nothing about how {self.column} is "
                f"spread among the private records, so every marginal with {self.column} "
                "is far off in the public rows (the public proxy error below shows how far) and "
                "rests on private measurements. If the column only marks which rows are "
                "public, leave it out of the schema on the Data page (its column editor: "
                f"'Leave '{self.column}' out of the schema').")

    def cli(self, sample_public: str | None, columns: Sequence[str]) -> tuple[list, list]:
        """``--public-flag`` with a flag name the table does not use yet, and a
        note saying which column to add to the file."""
        flag = next(f for f in CLI_FILTER_FLAGS if f not in columns)
        note = (f"add a column {flag} to the table: true where {self.column} is one of "
                f"{', '.join(map(str, self.values))}")
        return _no_public_args(sample_public) + ["--public-flag", flag], [note]


PublicRowsChoice = Union[NoPublicRows, PublicTable, FlaggedRows, FilteredRows]


@dataclass(frozen=True)
class PublicChoice:
    """Which rows and which columns of the session's data are public."""

    rows: PublicRowsChoice = NoPublicRows()
    #: columns known for every record (the guarantee protects the others)
    columns: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """``none``, ``table``, ``flag`` or ``filter`` (the kind of public rows)."""
        return self.rows.kind

    @property
    def has_rows(self) -> bool:
        return self.rows.has_rows

    @property
    def splits_private(self) -> bool:
        """The public rows are rows of the private table, marked by a flag column."""
        return self.rows.flag_column is not None

    def with_rows(self, rows: PublicRowsChoice, schema: Schema | None = None) -> "PublicChoice":
        """These public rows; the public columns kept are those of ``schema`` (all if None)."""
        keep = self.columns if schema is None else tuple(c for c in self.columns
                                                          if c in schema.names)
        return replace(self, rows=rows, columns=keep)

    def summary(self, source: "FlaggedRowsReader | None") -> str:
        """One line for the pages and the compare key (the table source counts
        the rows a flag column marks)."""
        cols = (", public columns: " + ", ".join(self.columns)) if self.columns else ""
        rows = self.rows.summary(source) if source is not None else "no public rows"
        return rows + cols

    def cli(self, sample_public: str | None, table_columns: Sequence[str]) -> tuple[list, list]:
        """The ``synth run`` arguments and notes for the public rows and columns."""
        args, notes = self.rows.cli(sample_public, table_columns)
        if self.columns:
            args = args + arg("--public-columns", ",".join(self.columns))
            notes = notes + column_list_notes(self.columns)
        return args, notes
