"""The wide-table benchmark's generator: deterministic, inside its declared
domain, with the requested high-cardinality columns and real dependence."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import wide_table  # noqa: E402

ROWS = 2000


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    return {seed: wide_table.generate(ROWS, seed, tmp_path_factory.mktemp(f"s{seed}"))
            for seed in (3, 4)}


def mutual_information(x: np.ndarray, y: np.ndarray) -> float:
    """Plug-in I(X; Y) in nats from the joint counts."""
    joint = pd.crosstab(x, y).to_numpy().astype(float)
    p = joint / joint.sum()
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log(p[nz] / (px @ py)[nz])).sum())


def test_same_seed_same_table_other_seed_other_table(tables, tmp_path):
    again = wide_table.generate(ROWS, 3, tmp_path)
    first = pd.read_parquet(tables[3]["private"])
    pd.testing.assert_frame_equal(pd.read_parquet(again["private"]), first)
    assert again["schema"].read_text() == tables[3]["schema"].read_text()
    assert not pd.read_parquet(tables[4]["private"]).equals(first)


def test_every_value_is_in_the_declared_schema(tables):
    from synth_core.schema import load_schema

    for seed, paths in tables.items():
        schema = load_schema(paths["schema"])
        for role in ("private", "public"):
            df = pd.read_parquet(paths[role])
            assert list(df.columns) == list(schema.names) and len(df.columns) == 22
            for spec in schema.columns:
                assert spec.kind == "categorical"
                assert set(df[spec.name]) <= set(spec.categories), (seed, role, spec.name)
        assert len(pd.read_parquet(paths["public"])) == round(ROWS * wide_table.PUBLIC_FRACTION)


def test_column_sizes(tables):
    from synth_core.schema import load_schema

    sizes = {c.name: len(c.categories) for c in load_schema(tables[3]["schema"]).columns}
    assert {n: sizes[n] for n in wide_table.HIGH_SIZES} == {"h0": 500, "h1": 300, "h2": 200}
    low = [k for n, k in sizes.items() if n not in wide_table.HIGH_SIZES]
    assert len(low) == 19 and all(2 <= k <= 20 for k in low)


def test_a_child_depends_on_its_parent():
    """A parent/child pair's mutual information is well above an independent pair's
    (the child's column against the same column drawn from another table)."""
    nodes = wide_table.network(5)
    codes = wide_table.draw_rows(nodes, 20_000, 5)
    other = wide_table.draw_rows(nodes, 20_000, 6)
    pairs = [(name, parents[0]) for name, parents, _ in nodes
             if len(parents) == 1 and codes[name].max() < 30 and codes[parents[0]].max() < 30]
    assert pairs
    for child, parent in pairs:
        dependent = mutual_information(codes[child], codes[parent])
        independent = mutual_information(codes[child], other[parent])
        assert dependent > 5 * independent + 0.02, (child, parent, dependent, independent)
