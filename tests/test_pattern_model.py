"""Pattern models (synth_core/pattern_model.py): the private columns given each public pattern.

The marginals are checked against brute-force enumeration of every pattern's
conditional distribution, the fit against the data it was given, and the
draws against the model's own marginals.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer, conditional, pattern_model
from synth_core.conditional import generate_conditionally
from synth_core.model import FitMeasurement, PGMEstimator
from synth_core.pattern_model import (PATTERN_PATH, PatternEstimator, PatternModel,
                                      PatternStructure, PublicPatterns)

SIZES = {"a": 3, "b": 2, "x": 3, "y": 2, "z": 2}
PUBLIC = ("a", "b")
CLIQUES = [("a", "x"), ("b", "x", "y"), ("y", "z"), ("z",)]


def _table(n: int = 300, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = rng.integers(0, 2, n)
    x = (a + rng.integers(0, 2, n)) % 3
    y = (x + b + (rng.random(n) < 0.2)) % 2
    z = (y + (rng.random(n) < 0.3)) % 2
    return {"a": a, "b": b, "x": x, "y": y, "z": z}


def _brute_force(theta, patterns: PublicPatterns, clique) -> np.ndarray:
    """``sum_k w_k p_k`` on ``clique``, enumerating every private configuration."""
    out = np.zeros([SIZES[c] for c in clique])
    private = [c for c in SIZES if c not in PUBLIC]
    for codes, w in zip(patterns.codes, patterns.weights):
        pub = dict(zip(PUBLIC, codes))
        configs = [dict(zip(private, v)) for v in itertools.product(
            *[range(SIZES[c]) for c in private])]
        logp = np.array([sum(theta[cl][tuple({**pub, **cfg}[c] for c in cl)] for cl in CLIQUES)
                         for cfg in configs])
        p = np.exp(logp - logp.max())
        p /= p.sum()
        for cfg, pr in zip(configs, p):
            full = {**pub, **cfg}
            out[tuple(full[c] for c in clique)] += w * pr
    return out


@pytest.fixture(scope="module")
def patterns():
    return PublicPatterns.of(_table(), PUBLIC)


def test_marginals_equal_brute_force_enumeration(patterns):
    rng = np.random.default_rng(1)
    theta = {cl: rng.normal(0, 1.5, [SIZES[c] for c in cl]) for cl in CLIQUES}
    structure = PatternStructure(SIZES, patterns, CLIQUES)
    assert structure.U == ("x", "y")  # the private parts of the cliques with public columns
    model = PatternModel(structure, theta, float(patterns.weights.sum()))
    for clique in [("a", "x"), ("b", "x", "y"), ("y", "z"), ("a", "z"), ("x", "z"),
                   ("a", "b", "z"), ("z", "b", "x"), ("b",)]:
        expected = _brute_force(theta, patterns, clique)
        np.testing.assert_allclose(model.counts(clique), expected.reshape(-1), atol=1e-9,
                                   err_msg=str(clique))


@pytest.fixture
def patterns_always(monkeypatch):
    """The pattern model whatever the joint model's size (these tables are tiny, so
    their joint junction trees are smaller than any pattern model)."""
    monkeypatch.setattr(pattern_model, "JOINT_CELLS_FACTOR", float("inf"))


def test_a_fit_to_exact_marginals_reproduces_them(patterns, patterns_always):
    """The conditional model with these cliques can match their data marginals (moment
    matching): a long fit to the exact counts gets every fitted marginal to them
    (the uniform start is tens of counts off: x takes 2 of its 3 values per a)."""
    data = _table()
    codes = pd.DataFrame(data)
    from synth_core.marginals import CodedTable

    table = CodedTable.from_frame(codes, SIZES)
    meas = [FitMeasurement(cl, table.marginal(cl).astype(float), 1.0) for cl in CLIQUES]
    meas.append(FitMeasurement(("a", "b"), table.marginal(("a", "b")).astype(float), 1.0))
    est = PatternEstimator.replacing(PGMEstimator(SIZES, max_iters=800, tol=1e-12), patterns)
    model = est.fit(meas, float(table.n))
    assert isinstance(model, PatternModel) and est.last_path == PATTERN_PATH
    for cl in CLIQUES:  # cells hold 10-60 records
        np.testing.assert_allclose(model.counts(cl), table.marginal(cl), atol=0.5,
                                   err_msg=str(cl))
    # warm start from it: already converged, the loss does not go up
    again = est.fit(meas, float(table.n), warm=model, max_iters=100)
    for cl in CLIQUES:
        np.testing.assert_allclose(again.counts(cl), table.marginal(cl), atol=0.5)


def test_too_large_a_pattern_model_falls_back_to_the_joint_fit(patterns):
    meas = [FitMeasurement(cl, np.full([SIZES[c] for c in cl], 10.0), 1.0) for cl in CLIQUES]
    est = PatternEstimator.replacing(PGMEstimator(SIZES, max_iters=100, path="numpy"), patterns,
                                     max_cells=len(patterns) * 6 - 1)  # |U| = 6
    model = est.fit(meas, 300.0)
    assert not isinstance(model, PatternModel) and model.path == "numpy"


def test_draws_keep_public_values_and_follow_the_model(patterns):
    rng = np.random.default_rng(2)
    theta = {cl: rng.normal(0, 1.0, [SIZES[c] for c in cl]) for cl in CLIQUES}
    reps = 40  # the table repeated: many records per pattern, small sampling error
    data = {c: np.tile(v, reps) for c, v in _table().items()}
    big = PublicPatterns.of(data, PUBLIC)
    model = PatternModel(PatternStructure(SIZES, big, CLIQUES), theta, float(len(data["a"])))
    codes = pd.DataFrame({c: data[c] for c in SIZES})
    for method in ("systematic", "iid"):
        out = generate_conditionally(model, codes, PUBLIC, np.random.default_rng(3), method)
        for c in PUBLIC:
            np.testing.assert_array_equal(out[c].to_numpy(), data[c])
        for clique in [("a", "x"), ("b", "x", "y"), ("y", "z"), ("a", "z")]:
            keys = [out[c].to_numpy() for c in clique]
            flat = np.ravel_multi_index(keys, [SIZES[c] for c in clique])
            got = np.bincount(flat, minlength=int(np.prod([SIZES[c] for c in clique])))
            expected = model.counts(clique)
            # a few standard deviations of the counts' sampling error
            assert np.all(np.abs(got - expected) <= 5 * np.sqrt(expected) + 5), (method, clique)


def test_the_smaller_of_pattern_and_joint_model_is_fitted(patterns, monkeypatch):
    """A pattern model of ``K x |U|`` cells is fitted only while it is at most
    JOINT_CELLS_FACTOR times the joint junction tree's cells."""
    from synth_core.model import model_size_mb
    U = PatternStructure(SIZES, patterns, CLIQUES).U
    pattern_cells = len(patterns) * int(np.prod([SIZES[c] for c in U]))
    joint_cells = model_size_mb(SIZES, CLIQUES) * 2 ** 20 / 8

    def fitted(factor: float | None = None) -> bool:
        if factor is not None:
            monkeypatch.setattr(pattern_model, "JOINT_CELLS_FACTOR", factor)
        est = PatternEstimator.replacing(PGMEstimator(SIZES, max_iters=10, path="numpy"),
                                         patterns)
        return est.structure(CLIQUES) is not None

    assert fitted() == (pattern_cells <= joint_cells)
    ratio = pattern_cells / joint_cells
    assert fitted(ratio * 1.01) and not fitted(ratio * 0.99)


def test_conditional_runs_fit_pattern_models(small_private, small_schema, monkeypatch,
                                             patterns_always):
    """A conditional run on the memory backend fits pattern models (every round's
    fit_path) and keeps every record's public values; with CONDITIONAL_MODEL
    "joint" it fits the joint Private-PGM model."""
    public = ["sex", "age", "edu"]
    runs = {}
    for model in ("patterns", "joint"):
        monkeypatch.setattr(conditional, "CONDITIONAL_MODEL", model)
        synth = Synthesizer("vjam-pgm", epsilon=1.0, seed=0, conditional=True, rounds=3,
                            final_fit_iters=100)
        runs[model] = synth.fit(small_private, schema=small_schema, public_columns=public)
    paths = {m: {e.fit_path for e in r.events[1:]} for m, r in runs.items()}
    assert paths["patterns"] == {PATTERN_PATH} and PATTERN_PATH not in paths["joint"]
    assert isinstance(runs["patterns"].model, PatternModel)
    for result in runs.values():
        for c in public:
            np.testing.assert_array_equal(np.sort(result.synthetic_codes[c].to_numpy()),
                                          np.sort(result.inputs.data.private.data[c]))


def test_evidence_on_two_parts_gives_the_same_fit_marginals(patterns):
    """Evidence on two disjoint private parts (x from (a, x), z from (b, z)) takes the
    oracle's factored path; it equals the general one (and brute force)."""
    cliques = [("a", "x"), ("b", "z"), ("x", "y", "z"), ("y",)]
    rng = np.random.default_rng(4)
    theta = {cl: rng.normal(0, 1.5, [SIZES[c] for c in cl]) for cl in cliques}
    structure = PatternStructure(SIZES, patterns, cliques)
    assert structure.two_parts and structure.U == ("x", "z")
    factored = structure(theta, 300.0)
    base = structure.base_model(theta)
    weights = structure.pattern_weights(theta, base)
    for cl in cliques:
        general = structure.counts(cl, weights, base, 300.0)
        np.testing.assert_allclose(factored[cl], general, atol=1e-9, err_msg=str(cl))
