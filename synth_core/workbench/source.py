"""Where a session's private table lives: the contract of a table source.

Two implementations: :class:`~synth_core.workbench.memory.MemoryTable` (a
pandas DataFrame: a bundled sample, an upload, a file loaded whole) and
:class:`~synth_core.workbench.disk.DuckDBSource` (a file on the server's disk,
counted by DuckDB without being loaded). Everything the two do differently is
behind this interface; the session never asks which one it holds.

The public rows a source is asked about are given by their flag column (the
true/false column of the private table that marks them: a flag the curator
chose, or the one a row filter added).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence

import numpy as np
import pandas as pd

from ..schema import ColumnSpec, Schema
from .public import FlaggedRowsReader, PublicRowsChoice


class TableSource(FlaggedRowsReader, Protocol):
    """A loaded private table."""

    #: the name runs and reports use for the table (file name, ``sample:private``)
    name: str
    #: the bundled sample it is, if any
    sample: str | None
    #: the file it was read from, if any (named by the reproduce command)
    path: Path | None
    #: the table stays on disk: :attr:`preview` holds its first rows only
    out_of_core: bool
    #: where runs count its marginals (``synth_core.backends``: memory, duckdb)
    backend: str
    #: what :meth:`fingerprint` hashes (``synth_core.budget.fingerprint_source``):
    #: "table content" (a table in memory) or "file bytes" (a file on disk)
    fingerprint_of: str

    @property
    def preview(self) -> pd.DataFrame:
        """Rows the pages show: the whole table in memory, the first rows on disk
        (with a row filter's flag column, if one was added)."""

    @property
    def n_rows(self) -> int:
        """Rows of the whole table."""

    @property
    def columns(self) -> list[str]:
        """The table's own columns (not a flag column the source added)."""

    def fingerprint(self) -> str:
        """CURATOR-ONLY: SHA-256 of the table's content (computed once)."""

    def cli_data_args(self) -> list[str]:
        """The ``synth run`` arguments that name this table."""

    def run_data(self) -> dict:
        """The ``data`` (and ``backend``) arguments of ``Synthesizer.run``."""

    def check_fits(self, schema: Schema, rows: PublicRowsChoice) -> None:
        """DataError (naming the column) unless the private table (without the
        flag column of ``rows``) and the public table of ``rows`` fit ``schema``."""

    def domain_from_public(self, public: pd.DataFrame, schema: Schema | None,
                           rows: PublicRowsChoice, what: str) -> Schema:
        """A domain read off the public rows ``public`` (labelled ``what``),
        checked against the table; ``schema`` is the current domain, if any."""

    def holds_records(self, frame: pd.DataFrame) -> bool | None:
        """Whether the table holds exactly ``frame``'s records (a public table that is
        the private one); None when it cannot tell without loading the table."""

    def shared_records(self, frame: pd.DataFrame) -> int | None:
        """CURATOR-ONLY: how many of ``frame``'s rows are records of the table
        (:func:`~synth_core.tables.shared_records`); None when it cannot tell without
        loading the table."""

    def public_rows(self, flag_column: str) -> pd.DataFrame:
        """The rows ``flag_column`` marks true (public, so they may be loaded)."""

    def count_flagged(self, flag_column: str) -> int:
        """How many rows ``flag_column`` marks true."""

    def private_rows(self, columns: Sequence[str], flag_column: str | None) -> pd.DataFrame:
        """The values of ``columns`` of the rows that are not public, in table order."""

    def flag_candidates(self) -> list[str]:
        """The table's columns that hold only true/false values."""

    def check_flag(self, column: str) -> None:
        """DataError unless ``column`` marks some rows true and some false."""

    def flag_column_spec(self, column: str) -> ColumnSpec | None:
        """The domain of a former flag column read off the table, or None when it
        cannot be (it would read the private file, or has no readable domain)."""

    def filter_mask(self, column: str, values: Sequence) -> np.ndarray:
        """The rows whose ``column`` is in ``values`` (ConfigError where a row filter
        is not possible; DataError when it marks no row or every row)."""

    def add_flag(self, name: str, mask: np.ndarray) -> None:
        """Add a row filter's flag column ``name`` (true where ``mask`` is)."""

    def drop_flag(self) -> None:
        """Remove the flag column :meth:`add_flag` added, if any."""
