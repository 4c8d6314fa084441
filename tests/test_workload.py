from __future__ import annotations

import pytest

from synth_core.errors import WorkloadError
from synth_core.workload import (all_k_way, around_targets, downward_closure, explicit,
                                 parse_workload)

COLS = ["a", "b", "c", "d"]


def test_all_k_way_counts():
    assert len(all_k_way(COLS, 1)) == 4
    assert len(all_k_way(COLS, 2)) == 6
    w3 = all_k_way(COLS, 3)
    assert len(w3) == 4 and ("a", "b", "c") in w3.cliques
    with pytest.raises(WorkloadError, match="Cannot build all 5-way marginals over 4") as err:
        all_k_way(COLS, 5)
    # the hint names the control of the front end in use
    assert err.value.text("cli").endswith("Choose marginals of 1 to 4 columns (--workload, "
                                          "e.g. all-2way).")
    assert "workload=" in err.value.text("api")


def test_downward_closure_and_weights():
    w = explicit(COLS, [["a", "b"], ["b", "c"]], [1.0, 2.0])
    closure = w.downward_closure()
    assert set(closure) == {("a",), ("b",), ("c",), ("a", "b"), ("b", "c")}
    assert [len(c) for c in closure] == sorted(len(c) for c in closure)
    weights = w.candidate_weights()
    # w_r = sum_s c_s |r ∩ s|
    assert weights[("b",)] == 1 * 1 + 2 * 1
    assert weights[("a", "b")] == 1 * 2 + 2 * 1
    assert weights[("c",)] == 2 * 1
    assert set(downward_closure([("a", "b", "c")])) == {
        ("a",), ("b",), ("c",), ("a", "b"), ("a", "c"), ("b", "c"), ("a", "b", "c")}


def test_around_targets():
    w = around_targets(COLS, ["d"], 2)
    assert set(w.cliques) == {("a", "d"), ("b", "d"), ("c", "d")}


def test_explicit_canonicalises_and_validates():
    w = explicit(COLS, [["c", "a"]])
    assert w.cliques == (("a", "c"),)
    with pytest.raises(WorkloadError, match="'zz'"):
        explicit(COLS, [["a", "zz"]])
    with pytest.raises(WorkloadError, match="twice"):
        explicit(COLS, [["a", "a"]])
    with pytest.raises(WorkloadError, match="twice"):
        explicit(COLS, [["a", "b"], ["b", "a"]])
    with pytest.raises(WorkloadError, match="positive"):
        explicit(COLS, [["a"]], [0.0])


def test_parse_workload():
    assert len(parse_workload("all-2way", COLS)) == 6
    t = parse_workload("target:a+b:2", COLS)
    assert all({"a", "b"} & set(cl) for cl in t.cliques) and len(t) == 5
    e = parse_workload("a,b; c,d*3", COLS)
    assert e.cliques == (("a", "b"), ("c", "d")) and e.weights == (1.0, 3.0)
    with pytest.raises(WorkloadError):
        parse_workload("all-xway", COLS)
    with pytest.raises(WorkloadError, match="number"):
        parse_workload("a,b*x", COLS)
    with pytest.raises(WorkloadError, match="empty"):
        parse_workload(";", COLS)


def test_an_infinite_weight_is_refused():
    """1e400 parses as inf: it passed 'positive' and made NaN selection scores."""
    with pytest.raises(WorkloadError, match="finite positive"):
        parse_workload("a,b*1e400", ["a", "b"])


def test_a_workload_marginal_too_large_to_count_is_refused_before_the_run(tmp_path):
    """id x city of 100,000 x 5,000 values would be counted in full for the report's
    bounds (40 GB): refused before any budget is spent, naming the marginal and
    the identifier to leave out."""
    import numpy as np
    import pandas as pd

    from synth_core import Synthesizer
    from synth_core.budget import BudgetAccount, table_fingerprint
    from synth_core.workload import MAX_MARGINAL_CELLS
    n = 100_000
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"id": np.arange(n).astype(str), "city": rng.integers(0, 5_000, n).astype(str),
                       "grp": rng.choice(["a", "b"], n)})
    acc = BudgetAccount.create(tmp_path / "a.json", label="t", fingerprint=table_fingerprint(df),
                               total_rho=1.0)
    synth = Synthesizer("aim", epsilon=1.0, workload="all-2way", seed=0)
    with pytest.raises(WorkloadError, match=r"id × city has 500,000,000 cells") as err:
        list(synth.run(df, categorical_columns=["id", "city", "grp"], budget=acc))
    assert "drop_columns=['id']" in str(err.value)
    assert acc.spent == 0 and 100_000 * 5_000 > MAX_MARGINAL_CELLS
