"""PMW-Pub's and GEM's counting-query answers, computed the scalable way, equal a
dense reference, and PMW-Pub's answer structure grows with support x marginals,
not with the domain."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer
from synth_core.mechanisms.query_release import CountingQueries, ScoreBuffer, SupportAnswers
from synth_core.workload import Workload

SIZES = {"a": 7, "b": 3, "c": 5, "d": 2}


def _workload(columns, ks=(2, 3)) -> Workload:
    cliques = tuple(cl for k in ks for cl in itertools.combinations(columns, k))
    return Workload(cliques, (1.0,) * len(cliques), "test")


def _support(rng, sizes, rows) -> np.ndarray:
    """Random codes, with repeated rows (vPMW's support has them)."""
    codes = np.column_stack([rng.integers(0, k, rows) for k in sizes.values()])
    return np.concatenate([codes, codes[: rows // 3]])


def _dense_reference(queries: CountingQueries, support, columns, weights) -> np.ndarray:
    """q(A) = sum of the weights of the rows in q's cell, marginal by marginal (float64)."""
    out = []
    for cl, shape in zip(queries.cliques, queries.shapes):
        m = np.zeros(shape)
        np.add.at(m, tuple(support[:, columns.index(c)] for c in cl), weights)
        out.append(m.ravel())
    return np.concatenate(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_support_answers_equal_a_dense_reference(seed):
    rng = np.random.default_rng(seed)
    columns = list(SIZES)
    queries = CountingQueries(_workload(columns), SIZES)
    support = _support(rng, SIZES, 40)
    weights = rng.dirichlet(np.ones(len(support)))
    answers = SupportAnswers(queries, support, columns)
    touched = answers.touched_answers(weights).copy()
    dense = answers.dense(weights)
    np.testing.assert_allclose(dense, _dense_reference(queries, support, columns, weights),
                               rtol=1e-12, atol=1e-15)
    # bit-identical to one bincount of the support per marginal (rows summed in order)
    per_marginal = []
    for i, cl in enumerate(queries.cliques):
        cells = np.zeros(len(support), dtype=np.int64)
        for c in cl:
            cells = cells * SIZES[c] + support[:, columns.index(c)]
        per_marginal.append(np.bincount(cells, weights=weights,
                                        minlength=int(np.prod(queries.shapes[i]))))
    assert np.array_equal(dense, np.concatenate(per_marginal))
    # untouched queries answer 0; single answers and the rows of a cell agree with the dense
    assert np.count_nonzero(dense) <= len(answers.touched) <= len(support) * len(queries.cliques)
    for q in rng.choice(queries.total, size=60, replace=False):
        assert answers.answer(touched, int(q)) == dense[q]
        i, cell = queries.locate(int(q))
        in_cell = np.all([support[:, columns.index(c)] == v
                          for c, v in zip(queries.cliques[i], cell)], axis=0)
        assert np.array_equal(answers.rows_in(int(q)), np.flatnonzero(in_cell))


@pytest.mark.parametrize("masked", [False, True])
def test_score_buffer_matches_dense_scores(masked):
    rng = np.random.default_rng(3)
    columns = list(SIZES)
    queries = CountingQueries(_workload(columns), SIZES)
    support = _support(rng, SIZES, 30)
    answers = SupportAnswers(queries, support, columns)
    true = rng.dirichlet(np.ones(queries.total)) * len(queries.cliques)
    true[rng.random(queries.total) < 0.3] = 0.0
    selectable = rng.random(queries.total) < 0.6 if masked else None
    buffer = ScoreBuffer(true, answers.touched, selectable)
    for _ in range(3):   # the buffer is rewritten in place round after round
        weights = rng.dirichlet(np.ones(len(support)))
        buffer.update(answers.touched_answers(weights))
        expected = np.abs(answers.dense(weights) - true)
        assert np.array_equal(buffer.scores, expected)
        if masked:
            assert np.array_equal(buffer.selection, np.where(selectable, expected, -np.inf))
        else:
            assert buffer.selection is buffer.scores


def test_support_answers_size_does_not_grow_with_the_domain():
    rng = np.random.default_rng(4)
    columns = list(SIZES)
    workload = _workload(columns)
    support = _support(rng, SIZES, 50)
    small = SupportAnswers(CountingQueries(workload, SIZES), support, columns)
    huge_sizes = {**SIZES, "a": 5000, "c": 4000}      # same support, far larger domain
    huge_queries = CountingQueries(workload, huge_sizes)
    huge = SupportAnswers(huge_queries, support, columns)
    rows, marginals = len(support), len(workload.cliques)
    assert huge.nbytes == small.nbytes
    # S C 32-bit positions; at most S C touched queries and answers
    assert huge.nbytes <= (4 + 8 + 8) * rows * marginals + 8 * (marginals + 1)
    assert huge_queries.total * 8 > 50 * huge.nbytes


def test_pmw_pub_run_keeps_answers_on_the_support():
    """A seeded PMW-Pub run on a column with a 3,000-value domain: the answer
    structure it used holds O(support x marginals) numbers, not O(queries)."""
    rng = np.random.default_rng(5)
    n = 400
    wide = 3000
    private = pd.DataFrame({"w": rng.integers(0, 40, n), "x": rng.integers(0, 4, n),
                            "y": rng.integers(0, 3, n)})
    public = private.sample(frac=0.25, random_state=1).reset_index(drop=True)
    schema = {"columns": [{"name": "w", "kind": "categorical", "categories": list(range(wide))},
                          {"name": "x", "kind": "categorical", "categories": list(range(4))},
                          {"name": "y", "kind": "categorical", "categories": list(range(3))}]}
    synth = Synthesizer("pmw-pub", epsilon=1.0, seed=0, workload="all-2way", rounds=3)
    synth.fit(private, public, schema=schema)
    mech = synth.engine.mechanism
    answers = mech.query_answers
    rows, marginals = len(mech.support), 3
    assert answers.rows == rows == len(public.drop_duplicates())
    assert answers.nbytes <= (4 + 8 + 8) * rows * marginals + 8 * (marginals + 1)
    assert answers.queries.total == wide * 4 + wide * 3 + 4 * 3
    assert answers.queries.total * 8 > 20 * answers.nbytes


def test_gem_blocked_marginals_equal_a_dense_reference(monkeypatch):
    torch = pytest.importorskip("torch")
    from synth_core.mechanisms import gem

    sizes = {"a": 9, "b": 4, "c": 6, "d": 3}
    queries = CountingQueries(_workload(list(sizes), ks=(1, 2, 3)), sizes)
    g = gem._Generator(sizes, queries, noise_dim=4, hidden=(8,), batch=16, seed=0)
    whole = g.all_answers()
    with torch.no_grad():
        x = g.probabilities().double().numpy()
    reference = []
    for cl in queries.cliques:
        parts = [x[:, g.slices[c]] for c in cl]
        letters = "abcd"[:len(cl)]
        reference.append(np.einsum(",".join(f"k{l}" for l in letters) + "->" + letters,
                                   *parts).ravel() / g.K)
    np.testing.assert_allclose(whole, np.concatenate(reference), rtol=1e-5, atol=1e-7)
    # blocks of one value of the first column at a time: the same answers
    monkeypatch.setattr(gem, "GEM_JOINT_BLOCK", 1)
    np.testing.assert_allclose(g.all_answers(), whole, rtol=1e-6, atol=1e-8)
    assert g.answers_float32().dtype == np.float32
