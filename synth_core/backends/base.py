"""The backend contract: what every counting backend implements and shares.

:class:`MarginalCounter` is what the engine and the evaluation read from the
private data (``n``, ``size_of``, ``cells``, ``marginal``, ``marginals``,
``stats``). :class:`Backend` is what a run's input preparation
(:mod:`synth_core.backends.inputs`) asks of the place the private table
lives: its columns, the public rows a flag column marks, the domain read off
the private records, the private records as a :class:`MarginalCounter`, and
the records' own values of the public columns. Three modules implement it:
:mod:`~synth_core.backends.memory` (pandas and numpy in this process),
:mod:`~synth_core.backends.duckdb_backend` and
:mod:`~synth_core.backends.spark_backend` (the last two on the shared engine
logic of :mod:`~synth_core.backends.counting`). :class:`FlagSummary` is how
every backend reports a flag column.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np
import pandas as pd

from ..errors import DataError
from ..marginals import Clique, CountStats
from ..schema import Schema, _format_examples


@dataclass(frozen=True)
class FlagSummary:
    """How a public-rows flag column reads over a file: rows true, false and
    neither (with up to six (value, rows) examples of the latter)."""

    column: str
    true: int
    false: int
    invalid: int
    examples: list = field(default_factory=list)

    def check(self, table: str) -> None:
        """DataError unless every row reads true or false and both occur
        (the messages of :mod:`synth_core.tables` for a loaded table)."""
        if self.invalid:
            raise DataError(
                f"flag column '{self.column}' has {self.invalid:,} rows that are not true or "
                f"false: {_format_examples(self.examples)}.",
                hint="Use true/false, yes/no or 1/0 in every row.", column=self.column)
        if self.true == 0:
            raise DataError(f"public rows (flag column '{self.column}') has no rows.",
                            hint="Flag some rows as public, or run without public rows.",
                            column=self.column)
        if self.false == 0:
            raise DataError(f"the private table '{table}' has no rows once the public rows "
                            "are split off.", hint="Keep at least one private row.",
                            column=self.column)


@runtime_checkable
class MarginalCounter(Protocol):
    """What the engine and the evaluation read from the private data."""

    columns: tuple[str, ...]
    stats: CountStats

    @property
    def n(self) -> int: ...

    @property
    def size_of(self) -> dict[str, int]: ...

    def cells(self, clique: Sequence[str]) -> int: ...

    def marginal(self, clique: Sequence[str]) -> np.ndarray: ...

    def marginals(self, cliques: Iterable[Sequence[str]]) -> dict[Clique, np.ndarray]: ...


@runtime_checkable
class Backend(Protocol):
    """A run's private table where one backend reads it (one object per run).

    The input preparation (:func:`synth_core.backends.inputs.prepare_inputs`)
    handles the public rows and columns once for every backend and asks the
    backend only for what depends on where the records live:

    * ``columns``: the table's column names (a flag column included); :meth:`drop`
      leaves columns out on request (they are never read);
    * domain discovery: :meth:`infer_domain` reads the domain off the private
      records (only a backend that holds them in memory; the engine backends
      refuse, the domain comes from a schema or from the public rows);
    * the public rows: :meth:`flag_summary` checks a flag column over the
      whole table and :meth:`flagged_rows` returns the rows it marks public
      (``loads_public_rows``: reading them loads them into memory, up to
      :data:`~synth_core.backends.inputs.MAX_PUBLIC_ROWS`);
    * counting marginals: :meth:`counter` is the private records (a flag
      column's false rows) as a :class:`MarginalCounter`, checked against the
      schema (DataError for a value that does not fit or an empty table);
    * a public table that is the private one: :meth:`holds_records` (True when
      the private table holds exactly the records of a frame, on the frame's
      columns; None when the backend cannot tell without loading the table);
    * own public-column values: :meth:`public_values` (the values of the
      public columns per private record when they are at hand, else None) and
      :meth:`own_public_codes` (codes and values of those columns, for
      conditional generation; an engine backend loads these columns only).
    """

    #: the backend's name ("memory", "duckdb", "spark")
    backend: str
    #: the private table's name in messages
    name: str
    #: whether :meth:`flagged_rows` loads rows that were not in memory
    loads_public_rows: bool

    @property
    def columns(self) -> list[str]: ...

    def drop(self, columns: Sequence[str]) -> None: ...

    def infer_domain(self, flag: str | None) -> Schema: ...

    def flag_summary(self, flag: str) -> FlagSummary: ...

    def flagged_rows(self, flag: str) -> pd.DataFrame: ...

    def counter(self, schema: Schema, flag: str | None) -> MarginalCounter: ...

    def public_values(self, columns: Sequence[str], flag: str | None) -> pd.DataFrame | None: ...

    def holds_records(self, frame: pd.DataFrame) -> bool | None: ...

    @staticmethod
    def own_public_codes(private: MarginalCounter, schema: Schema,
                         columns: Sequence[str]) -> tuple[pd.DataFrame, pd.DataFrame | None]: ...
