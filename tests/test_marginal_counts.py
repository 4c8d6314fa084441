"""Marginal counts are exact integers (int32 below 2**31 rows), read-only, equal to a
direct count, and kept in a table's cache only while they have at most
CACHE_CELLS_PER_ROW cells per row; the DuckDB backend hands out the same counts."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from synth_core.marginals import (CACHE_CELLS_PER_ROW, CodedTable, count_dtype, exact_counts,
                                  worth_caching)

SIZES = {"a": 3, "b": 40, "c": 50, "d": 2}


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(5)
    return pd.DataFrame({c: rng.integers(0, k, 300) for c, k in SIZES.items()})


def direct_count(frame: pd.DataFrame, clique) -> np.ndarray:
    """Counts of every value combination of ``clique``, C order, by a dictionary."""
    out = np.zeros([SIZES[c] for c in clique], dtype=np.int64)
    for row in frame[list(clique)].itertuples(index=False):
        out[tuple(row)] += 1
    return out.ravel()


def test_counts_are_int32_read_only_and_exact(frame):
    table = CodedTable.from_frame(frame, SIZES)
    for k in (1, 2, 3):
        for clique in itertools.combinations(SIZES, k):
            counts = table.marginal(clique)
            assert counts.dtype == np.int32
            assert not counts.flags.writeable
            np.testing.assert_array_equal(counts, direct_count(frame, clique))
            assert counts.sum() == len(frame)
    with pytest.raises(ValueError):
        table.marginal(("a", "b"))[0] = 7


def test_arithmetic_with_floats_is_float64_and_differences_do_not_wrap(frame):
    table = CodedTable.from_frame(frame, SIZES)
    counts = table.marginal(("b", "c"))
    assert (counts + np.zeros(counts.size)).dtype == np.float64
    other = CodedTable.from_frame(frame.iloc[:10], SIZES).marginal(("b", "c"))
    assert (other - counts).min() < 0          # signed: a difference of counts stays exact
    np.testing.assert_array_equal(other - counts,
                                  direct_count(frame.iloc[:10], ("b", "c"))
                                  - direct_count(frame, ("b", "c")))


def test_only_marginals_with_few_cells_per_row_are_kept(frame):
    table = CodedTable.from_frame(frame, SIZES)
    small, large = ("a", "b"), ("a", "b", "c")        # 120 and 6,000 cells, 300 rows
    assert worth_caching(120, 300) and not worth_caching(6000, 300)
    assert 120 <= CACHE_CELLS_PER_ROW * 300 < 6000
    first = table.marginal(small)
    assert table.marginal(small) is first
    assert table.stats.passes == 1
    again = table.marginal(large)
    np.testing.assert_array_equal(table.marginal(large), again)
    assert table.stats.passes == 3                    # counted twice, never kept
    assert large not in table._cache and small in table._cache


def test_count_dtype_switches_at_two_to_the_31():
    assert count_dtype(2 ** 31 - 1) is np.int32
    assert count_dtype(2 ** 31) is np.int64
    big = exact_counts(np.array([2.0 ** 40, 3.0]), 2 ** 41)
    assert big.dtype == np.int64 and big[0] == 2 ** 40


def test_duckdb_hands_out_the_same_integer_counts(frame, tmp_path):
    pytest.importorskip("duckdb")
    from synth_core.backends import make_backend
    from synth_core.schema import ColumnSpec, Schema

    path = tmp_path / "codes.parquet"
    frame.to_parquet(path, index=False)
    schema = Schema(tuple(ColumnSpec(c, "categorical", categories=tuple(range(k)))
                     for c, k in SIZES.items()))
    memory = CodedTable.from_frame(frame, SIZES)
    with make_backend("duckdb", path, schema, batch_size=2) as db:
        db.marginals([("a", "b", "c"), ("b", "d")])   # counted; the subsets below are derived
        for clique in [("a", "b", "c"), ("c", "a"), ("b",), ("d", "b"), ()]:
            got = db.marginal(clique)
            assert got.dtype == np.int32 and not got.flags.writeable
            if clique:
                np.testing.assert_array_equal(got, memory.marginal(clique))
            else:
                assert got.tolist() == [len(frame)]
