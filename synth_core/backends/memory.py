"""The in-memory backend: a :class:`~synth_core.marginals.CodedTable`.

The private table as a pandas DataFrame in this process, encoded to numpy
arrays of codes and counted with one ``np.bincount`` per clique. It is the
default and the reference the other backends are tested against.
:class:`MemoryBackend` implements :class:`~synth_core.backends.base.Backend`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import pandas as pd

from ..errors import DataError
from ..marginals import CodedTable
from ..schema import Schema, infer_schema
from ..tables import PublicRows, check_column_names, load_table, same_records
from .base import FlagSummary, MarginalCounter


def memory_table(source, schema: Schema, *, name: str = "data") -> CodedTable:
    """Load ``source`` (a path or a DataFrame), encode it with ``schema``."""
    if isinstance(source, (str, Path)):
        frame = load_table(source, name=name)
    elif isinstance(source, pd.DataFrame):
        frame = source
    else:
        raise DataError(f"the memory backend needs a DataFrame or a file path, "
                        f"not {type(source).__name__}.")
    codes = schema.encode(frame, table_name=name, role="private table")
    return CodedTable.from_frame(codes, schema.sizes)


class MemoryBackend:
    """The private table loaded into pandas (a DataFrame as given, or a file read whole).

    ``drop``: columns left out on request (checked by the caller first).
    ``options`` (the engine backends' settings) do not apply here.
    """

    backend = "memory"
    loads_public_rows = False   # the flagged rows are in memory already
    #: the private data as a counter, without the run's checks
    table = staticmethod(memory_table)

    def __init__(self, source, *, name: str | None = None, **options):
        if isinstance(source, pd.DataFrame):
            check_column_names(source, "the private table")
            self.frame, label = source, "unnamed DataFrame"   # data_name= names it
        elif isinstance(source, (str, Path)):
            self.frame, label = load_table(source), Path(source).name
        else:
            raise DataError(f"The private table must be a DataFrame or a path to a CSV/Parquet "
                            f"file, not {type(source).__name__}.")
        self.name = name or label
        self._split: tuple[str, pd.DataFrame, pd.DataFrame] | None = None

    @property
    def columns(self) -> list[str]:
        return list(self.frame.columns)

    def drop(self, columns: Sequence[str]) -> None:
        """Leave ``columns`` out of every later step."""
        if columns:
            self.frame = self.frame.drop(columns=list(columns))

    def _rows(self, flag: str | None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        """(private rows, public rows) split by ``flag`` (the whole table and None without)."""
        if flag is None:
            return self.frame, None
        if self._split is None or self._split[0] != flag:
            self._split = (flag, *PublicRows(flag_column=flag).split(self.frame))
        return self._split[1], self._split[2]

    def infer_domain(self, flag: str | None) -> Schema:
        """The domain read off the private records (not privacy-protected)."""
        return infer_schema(self._rows(flag)[0], source="private")

    def flag_summary(self, flag: str) -> FlagSummary:
        """Rows ``flag`` marks true and false (a value that is neither raises DataError)."""
        private, public = self._rows(flag)
        return FlagSummary(flag, len(public), len(private), 0)

    def flagged_rows(self, flag: str) -> pd.DataFrame:
        return self._rows(flag)[1]

    def counter(self, schema: Schema, flag: str | None) -> CodedTable:
        """The private records (``flag`` false) encoded with ``schema``."""
        private = self._rows(flag)[0]
        if len(private) == 0:
            raise DataError(f"the private table '{self.name}' has no rows"
                            + (" once the public rows are split off." if flag else "."),
                            hint="Keep at least one private row.")
        codes = schema.encode(private, table_name=self.name, role="private table")
        return CodedTable.from_frame(codes, schema.sizes)

    def holds_records(self, frame: pd.DataFrame) -> bool:
        """:func:`~synth_core.tables.same_records` of the table and ``frame``."""
        return same_records(self.frame, frame)

    def public_values(self, columns: Sequence[str], flag: str | None) -> pd.DataFrame | None:
        """Every private record's own values of ``columns`` (None without columns)."""
        if not columns:
            return None
        return self._rows(flag)[0][list(columns)].reset_index(drop=True)

    @staticmethod
    def own_public_codes(private: MarginalCounter, schema: Schema,
                         columns: Sequence[str]) -> tuple[pd.DataFrame, None]:
        """The codes held already (every column; the values were kept by :meth:`public_values`)."""
        return private.to_frame(), None

