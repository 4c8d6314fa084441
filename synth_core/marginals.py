"""Counting marginals of integer-coded tables (numpy backend).

A marginal ``M_r(X)`` is the vector of counts of every combination of the
values of clique ``r``, flattened in C order over the clique's columns (the
layout of Private-PGM's ``Factor.datavector()``). One pass per clique: the
codes of the clique's columns are combined into one mixed-radix index and
counted with ``np.bincount``.

Counts are exact integers: int32 while the table has fewer than 2**31 rows
(no count, and no difference of two counts, can then overflow), int64 beyond
(:func:`count_dtype`). The arrays handed out are read-only (a cached marginal
is shared by every caller); arithmetic with float arrays gives float64.

``CodedTable`` is what the default backend (:mod:`synth_core.backends.memory`)
counts with; the DuckDB and Spark backends implement the same interface
(:class:`~synth_core.backends.base.MarginalCounter`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from .errors import DataError

Clique = tuple[str, ...]

#: a table keeps a counted marginal when it has at most this many cells per row of the
#: table: a marginal with more has at most one non-zero cell in 16, and counting it again
#: (one pass over the rows) costs little beside filling its cells
CACHE_CELLS_PER_ROW = 16


def count_dtype(n: int) -> type:
    """The integer type of the counts of a table of ``n`` rows: int32 below 2**31 rows
    (every count, sum of counts over a marginal and difference of two counts fits),
    int64 from there."""
    return np.int32 if n < 2 ** 31 else np.int64


def exact_counts(counts: np.ndarray, n: int) -> np.ndarray:
    """``counts`` (whole numbers, any numeric type) as a read-only array of
    :func:`count_dtype` ``(n)``."""
    out = np.asarray(counts).astype(count_dtype(n))
    out.flags.writeable = False
    return out


def worth_caching(cells: int, n: int) -> bool:
    """Whether a marginal of ``cells`` cells of a table of ``n`` rows is kept once counted."""
    return cells <= CACHE_CELLS_PER_ROW * max(n, 1)


@dataclass
class CountStats:
    """What counting cost: passes over the data and bytes read.

    ``passes`` counts scans of the records (a file, a table of codes or the
    in-memory arrays); ``bytes_scanned`` the bytes those scans read (for
    files, the stored size of the columns read); ``queries`` the queries sent
    to an engine; ``cliques`` the marginals counted from records (marginals
    derived from a counted superset are not counted again).
    """

    passes: int = 0
    bytes_scanned: int = 0
    queries: int = 0
    cliques: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict:
        return {"passes": self.passes, "bytes_scanned": self.bytes_scanned,
                "queries": self.queries, "cliques": self.cliques,
                "seconds": round(self.seconds, 4)}


class ColumnSizes:
    """``columns`` with their numbers of codes ``sizes``: what every counter shares."""

    columns: tuple[str, ...]
    sizes: tuple[int, ...]

    @property
    def size_of(self) -> dict[str, int]:
        return dict(zip(self.columns, self.sizes))

    def cells(self, clique: Sequence[str]) -> int:
        sizes = self.size_of
        return math.prod(sizes[c] for c in clique)


@dataclass(frozen=True, eq=False)
class CodedTable(ColumnSizes):
    """A table of integer codes ``0 .. size-1`` per column."""

    columns: tuple[str, ...]
    sizes: tuple[int, ...]
    data: Mapping[str, np.ndarray]
    _cache: dict = field(default_factory=dict, repr=False)
    stats: CountStats = field(default_factory=CountStats, repr=False, compare=False)

    @staticmethod
    def from_frame(codes: pd.DataFrame, sizes: Mapping[str, int]) -> "CodedTable":
        cols = tuple(sizes)
        missing = [c for c in cols if c not in codes.columns]
        if missing:
            raise DataError(f"The coded table lacks column(s) {missing}.")
        data = {}
        for c in cols:
            arr = np.ascontiguousarray(codes[c].to_numpy(), dtype=np.int64)
            if arr.size and (arr.min() < 0 or arr.max() >= sizes[c]):
                raise DataError(
                    f"Column {c!r} holds codes outside 0..{sizes[c] - 1}.", column=c,
                    hint="Encode the table with its schema first.")
            data[c] = arr
        return CodedTable(cols, tuple(int(sizes[c]) for c in cols), data)

    @property
    def n(self) -> int:
        return int(len(next(iter(self.data.values())))) if self.data else 0

    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        """Counts of ``clique`` (read-only, :func:`count_dtype`, length = product of the
        column sizes). Kept for the next call when :func:`worth_caching`."""
        clique = tuple(clique)
        if clique in self._cache:
            return self._cache[clique]
        sizes = self.size_of
        index = np.zeros(self.n, dtype=np.int64)
        for c in clique:
            index *= sizes[c]
            index += self.data[c]
        cells = self.cells(clique)
        counts = exact_counts(np.bincount(index, minlength=cells), self.n)
        self.stats.passes += 1
        self.stats.cliques += 1
        self.stats.bytes_scanned += 8 * self.n * len(clique)
        if worth_caching(cells, self.n):
            self._cache[clique] = counts
        return counts

    def marginals(self, cliques: Iterable[Sequence[str]]) -> dict[Clique, np.ndarray]:
        return {tuple(cl): self.marginal(cl) for cl in cliques}

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({c: self.data[c] for c in self.columns})

    def take(self, rows: np.ndarray) -> "CodedTable":
        return CodedTable(self.columns, self.sizes, {c: v[rows] for c, v in self.data.items()})

    def select(self, columns: Sequence[str]) -> "CodedTable":
        sizes = self.size_of
        return CodedTable(tuple(columns), tuple(sizes[c] for c in columns),
                          {c: self.data[c] for c in columns})
