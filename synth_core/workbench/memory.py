"""A private table held in memory as a pandas DataFrame."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..budget import TABLE_CONTENT
from ..errors import DataError, SynthError
from ..schema import ColumnSpec, Schema, infer_schema
from ..schema_infer import Proposal, propose_schema
from ..tables import PublicRows, same_records, shared_records
from .budget import frame_fingerprint
from .command import arg
from .public import PublicRowsChoice
from .source import TableSource


@dataclass(eq=False)
class MemoryTable(TableSource):
    """A bundled sample, an uploaded table, or a file loaded whole."""

    frame: pd.DataFrame = field(repr=False)
    name: str
    sample: str | None = None
    path: Path | None = None
    out_of_core: bool = field(default=False, init=False)
    backend: str = field(default="memory", init=False)
    fingerprint_of: str = field(default=TABLE_CONTENT, init=False)
    #: the flag column a row filter added to ``frame``
    added_flag: str | None = field(default=None, init=False)
    _fingerprint: str | None = field(default=None, init=False, repr=False)

    @property
    def preview(self) -> pd.DataFrame:
        return self.frame

    @property
    def n_rows(self) -> int:
        return len(self.frame)

    @property
    def columns(self) -> list[str]:
        return [c for c in self.frame.columns if c != self.added_flag]

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = frame_fingerprint(self.frame[self.columns])
        return self._fingerprint

    def cli_data_args(self) -> list[str]:
        """A bundled sample by name, a file opened from disk by its resolved path,
        an upload by its file name."""
        if self.sample:
            return ["--sample", self.sample]
        if self.path is not None:
            return ["--data", str(self.path)]
        return arg("--data", self.name or "data.csv")

    def run_data(self) -> dict:
        return {"data": self.frame}

    def _without_flag(self, flag_column: str | None) -> pd.DataFrame:
        drop = [c for c in (flag_column, self.added_flag) if c and c in self.frame.columns]
        return self.frame.drop(columns=drop)

    def check_fits(self, schema: Schema, rows: PublicRowsChoice) -> None:
        schema.check_fits(self._without_flag(rows.flag_column), self.name or "data",
                          role="private table")
        rows.check_fits(schema)

    def domain_from_public(self, public: pd.DataFrame, schema: Schema | None,
                           rows: PublicRowsChoice, what: str) -> Schema:
        """The domain of the current schema's columns read off ``public``
        (numeric columns stay numeric), checked against the tables."""
        names = [c for c in schema.names if c in public.columns]
        numeric = [c.name for c in schema.columns if c.kind == "numeric" and c.name in names]
        new = infer_schema(public[names], source="public", numeric_columns=numeric)
        self.check_fits(new, rows)
        return new

    def holds_records(self, frame: pd.DataFrame) -> bool:
        return same_records(self.frame[self.columns], frame)

    def shared_records(self, frame: pd.DataFrame) -> int:
        return shared_records(self.frame[self.columns], frame)

    def public_rows(self, flag_column: str) -> pd.DataFrame:
        return PublicRows(flag_column=flag_column).split(self.frame)[1]

    def propose_schema(self, public: pd.DataFrame | None, flag_column: str | None,
                       **choices) -> Proposal:
        """A schema proposed for review (:func:`~synth_core.schema_infer.propose_schema`)
        off the private rows and ``public``; ``choices``: numeric, categorical, drop."""
        columns = [c for c in self.columns if c != flag_column]
        return propose_schema(self.private_rows(columns, flag_column), public, **choices)

    def count_flagged(self, flag_column: str) -> int:
        return len(self.public_rows(flag_column))

    def private_rows(self, columns: Sequence[str], flag_column: str | None) -> pd.DataFrame:
        if flag_column is not None:
            own = PublicRows(flag_column=flag_column).split(self.frame)[0]
        else:
            own = self._without_flag(None)
        return own[list(columns)].reset_index(drop=True)

    def flag_candidates(self) -> list[str]:
        out = []
        for c in self.columns:
            try:
                PublicRows(flag_column=c).split(self.frame[[c]])
            except SynthError:
                continue
            out.append(c)
        return out

    def check_flag(self, column: str) -> None:
        if column not in self.frame.columns:
            raise DataError(f"the flag column '{column}' is not in the table.", column=column)
        private, public = PublicRows(flag_column=column).split(self.frame)
        if len(public) == 0:
            raise DataError(f"flag column '{column}' marks no row as public.",
                            hint="Choose a column that is true for some rows.", column=column)
        if len(private) == 0:
            raise DataError(f"flag column '{column}' marks every row as public.",
                            hint="Keep at least one private row.", column=column)

    def flag_column_spec(self, column: str) -> ColumnSpec | None:
        try:
            return infer_schema(self.frame[[column]], source="private").columns[0]
        except SynthError:
            return None

    def filter_mask(self, column: str, values: Sequence) -> np.ndarray:
        if column not in self.columns:
            raise DataError(f"the filter column '{column}' is not in the table.", column=column)
        values = tuple(values)
        if not values:
            raise DataError(f"choose at least one value of '{column}' that marks a row public.",
                            column=column)
        mask = self.frame[column].astype(str).isin([str(v) for v in values]).to_numpy()
        if not mask.any():
            raise DataError(f"no row has {column} in {list(values)}.", column=column)
        if mask.all():
            raise DataError(f"every row has {column} in {list(values)}: nothing would stay private.",
                            hint="Choose fewer values.", column=column)
        return mask

    def add_flag(self, name: str, mask: np.ndarray) -> None:
        self.frame = self.frame.assign(**{name: mask})
        self.added_flag = name

    def drop_flag(self) -> None:
        if self.added_flag is not None and self.added_flag in self.frame.columns:
            self.frame = self.frame.drop(columns=[self.added_flag])
        self.added_flag = None
