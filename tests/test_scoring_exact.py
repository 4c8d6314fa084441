"""Scoring stays exact: the model's answers (centre cliques with per-column messages, shared
subtree messages, contractions run pair by pair) equal marginals summed from the model's full
joint distribution."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from synth_core import inference
from synth_core.inference import ModelMarginals, TreeOracle, _einsum, junction_tree
from synth_core.model import FitMeasurement, PGMEstimator


def branching_model(seed: int):
    """A fitted numpy-path model whose junction tree branches (8 columns, 3-way cliques)."""
    rng = np.random.default_rng(seed)
    sizes = {f"c{i}": int(rng.integers(3, 7)) for i in range(8)}
    cliques = [("c0", "c1", "c2"), ("c2", "c3", "c4"), ("c2", "c5"), ("c5", "c6", "c7"), ("c1", "c3")]
    meas = [FitMeasurement(cl, rng.uniform(1, 50, int(np.prod([sizes[c] for c in cl]))), 2.0)
            for cl in cliques]
    model = PGMEstimator(sizes, max_iters=60, tol=0.0, path="numpy").fit(meas, 400.0)
    return sizes, model


def joint_of(sizes, model) -> np.ndarray:
    """The model's full joint (counts): its potentials propagated on a one-node tree."""
    everything = tuple(sizes)
    oracle = TreeOracle(sizes, list(model.potentials), ([everything], []))
    return oracle.beliefs(model.potentials)[everything] * model.total


def brute(joint: np.ndarray, sizes, query) -> np.ndarray:
    cols = list(sizes)
    summed = joint.sum(axis=tuple(i for i, c in enumerate(cols) if c not in query))
    kept = [c for c in cols if c in query]
    return np.transpose(summed, [kept.index(c) for c in query]).reshape(-1)


@pytest.mark.parametrize("seed", [0, 1])
def test_every_three_way_query_equals_the_joint(seed, monkeypatch):
    sizes, model = branching_model(seed)
    assert len(model.marginals.beliefs) > 3          # queries span several nodes
    monkeypatch.setattr(inference, "SMALL_CONTRACTION", 0)   # every contraction by path
    joint = joint_of(sizes, model)
    queries = [q for r in (1, 2, 3) for q in itertools.combinations(sizes, r)]
    fresh = ModelMarginals(sizes, model.marginals.beliefs, _edges(model.marginals), model.total)
    answers = fresh.many(queries[::-1], workers=2)    # shared messages, two threads
    assert fresh._column_messages                   # column messages were reused across queries
    for q in queries:
        np.testing.assert_allclose(answers[q], brute(joint, sizes, q), rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(fresh.counts(q), answers[q], rtol=1e-12, atol=1e-12)


def test_message_budget_zero_gives_the_same_answers(monkeypatch):
    sizes, model = branching_model(2)
    queries = list(itertools.combinations(sizes, 3))
    cached = ModelMarginals(sizes, model.marginals.beliefs, _edges(model.marginals), model.total)
    with_cache = cached.many(queries, workers=1)
    monkeypatch.setattr(inference, "MESSAGE_CACHE_CELLS", 0)
    uncached = ModelMarginals(sizes, model.marginals.beliefs, _edges(model.marginals), model.total)
    for q in queries:
        np.testing.assert_allclose(uncached.counts(q), with_cache[q], rtol=1e-12, atol=1e-12)
    assert not uncached._column_messages and cached._column_messages


def test_wider_queries_with_and_without_a_centre_equal_the_joint():
    """4- and 5-way queries: those with a centre clique (far columns behind distinct edges) and
    those without one (answered on a rooted subtree) both equal the joint's marginals."""
    sizes, model = branching_model(3)
    joint = joint_of(sizes, model)
    fresh = ModelMarginals(sizes, model.marginals.beliefs, _edges(model.marginals), model.total)
    queries = [q for r in (4, 5) for q in itertools.combinations(sizes, r)]
    centred = [q for q in queries if fresh._center_plan(q) is not None]
    assert 0 < len(centred) < len(queries)          # both ways are exercised
    for q in queries:
        np.testing.assert_allclose(fresh.counts(q), brute(joint, sizes, q), rtol=1e-10, atol=1e-9)


def test_every_query_of_at_most_three_columns_has_a_centre():
    """A centre exists for every 2- and 3-way query spanning cliques: its far columns lie
    behind distinct edges and its local columns are in it."""
    sizes, model = branching_model(1)
    marg = model.marginals
    for q in (q for r in (2, 3) for q in itertools.combinations(sizes, r)):
        if any(set(q) <= set(node) for node in marg.beliefs):
            continue
        centre, far, labels = marg._center_plan(q)
        assert set(q) - set(far) <= set(centre) and not set(far) & set(centre)
        assert len(set(far.values())) == len(far)
        assert all(a in marg.adjacent[centre] and c in marg._columns_behind(a, centre)
                   for c, a in far.items())


def test_pairwise_contraction_equals_one_einsum():
    """Multi-operand contractions (path planned, run pair by pair) equal numpy's one-shot einsum."""
    rng = np.random.default_rng(3)
    dims = {"a": 9, "b": 7, "c": 11, "d": 5, "e": 8, "f": 6}
    ops_labels = [("a", "b", "c"), ("b", "c", "d"), ("d", "e"), ("a", "e", "f"), ("c", "f")]
    operands = [(np.transpose(rng.random([dims[c] for c in lab[::-1]])), lab) for lab in ops_labels]
    index = {c: i for i, c in enumerate(dims)}
    for out in [("a", "f"), ("b",), ("e", "a", "d"), ()]:
        args = [x for a, lab in operands for x in (a, [index[c] for c in lab])]
        expected = np.einsum(*args, [index[c] for c in out])
        np.testing.assert_allclose(_einsum(operands, out), expected, rtol=1e-12)
        np.testing.assert_allclose(_einsum(operands[:2], out if set(out) <= {"a", "b", "c", "d"}
                                            else ("a", "d")),
                                   np.einsum(*args[:4], [index[c] for c in (
                                       out if set(out) <= {"a", "b", "c", "d"} else ("a", "d"))]),
                                   rtol=1e-12)


def _edges(marginals: ModelMarginals):
    return [(a, b) for a in marginals.adjacent for b in marginals.adjacent[a] if a < b]


def test_numpy_tree_matches_the_one_node_tree():
    """The in-place propagation on the junction tree gives the one-node tree's beliefs."""
    sizes, model = branching_model(4)
    tree = junction_tree(sizes, list(model.potentials))
    beliefs = TreeOracle(sizes, list(model.potentials), tree).beliefs(model.potentials)
    joint = joint_of(sizes, model) / model.total
    for node, b in beliefs.items():
        np.testing.assert_allclose(b.reshape(-1), brute(joint, sizes, node), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("la, lb, keep", [
    (("a", "b", "c"), ("b", "c", "d"), ("d", "a")),          # contracted b, c; no batch
    (("a", "b", "c"), ("c", "b", "d"), ("b", "d", "a")),      # batch b, contracted c
    (("a", "b"), ("b", "c"), ("a", "b", "c")),                # batch only: a broadcast product
    (("a", "b"), ("a", "b"), ()),                             # everything contracted: a scalar
    (("a", "e", "b"), ("b", "a"), ("e",)),                    # no right labels
    (("c",), ("a", "b", "c"), ("b", "c", "a")),               # no left labels, batch c
])
def test_batched_product_equals_one_einsum(la, lb, keep):
    """Each pairwise step (batch, left, right and contracted labels) equals numpy's einsum."""
    rng = np.random.default_rng(5)
    dims = {"a": 4, "b": 3, "c": 5, "d": 2, "e": 6}
    a = rng.random([dims[c] for c in la])
    b = np.transpose(rng.random([dims[c] for c in lb[::-1]]))   # a strided operand
    index = {c: i for i, c in enumerate(dims)}
    expected = np.einsum(a, [index[c] for c in la], b, [index[c] for c in lb], [index[c] for c in keep])
    got = inference._batched_product(a, la, b, lb, keep)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_scoring_constants_are_where_the_docs_say():
    """docs/performance.md's scoring part names the message budget, chunk and threads the code uses."""
    import math
    import re
    from pathlib import Path

    from synth_core.engine import SCORE_CHUNK

    text = (Path(__file__).resolve().parent.parent / "docs" / "performance.md").read_text()
    section = text.split("**Scoring**", 1)[1].split("**Memory.**", 1)[0]
    assert f"MESSAGE_CACHE_CELLS` = 2^{int(math.log2(inference.MESSAGE_CACHE_CELLS))} cells" in section
    assert re.search(rf"SCORE_CHUNK = {SCORE_CHUNK}\b", section)
    assert re.search(rf"SCORING_THREADS = {inference.SCORING_THREADS}\b", section)
