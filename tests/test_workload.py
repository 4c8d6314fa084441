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
    with pytest.raises(WorkloadError, match="between 1"):
        all_k_way(COLS, 5)


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
