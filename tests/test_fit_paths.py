"""The two fit paths (numpy mirror descent, compiled JAX) fit the same model; which runs when."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from synth_core.model import (FACTORED_FROM_MB, FIT_PATH_ENV, NUMPY_BELOW_MB, FitMeasurement,
                              PGMEstimator, model_size_mb)

ROOT = Path(__file__).resolve().parents[1]


def random_model(seed: int):
    """A random small domain, random cliques (one repeated, one nested) and noisy counts."""
    rng = np.random.default_rng(seed)
    sizes = {f"c{i}": int(rng.integers(2, 6)) for i in range(int(rng.integers(4, 7)))}
    cols = list(sizes)
    cliques = [tuple(rng.choice(cols, size=int(rng.integers(1, 4)), replace=False))
               for _ in range(4)]
    cliques += [cliques[0], cliques[1][:1]]           # a repeat and a sub-clique
    joint = rng.dirichlet(np.ones(int(np.prod(list(sizes.values()))))).reshape(list(sizes.values()))
    n = 500.0

    def noisy(cl):
        axes = tuple(i for i, c in enumerate(cols) if c not in cl)
        kept = [c for c in cols if c in cl]
        m = np.transpose(joint.sum(axis=axes), [kept.index(c) for c in cl]).reshape(-1) * n
        return m + rng.normal(0, 3.0, m.size)

    meas = [FitMeasurement(cl, noisy(cl), float(rng.uniform(0.5, 4))) for cl in cliques]
    return sizes, meas, n


def _fit_both(sizes, meas, n, iters):
    """Cold fit on the first measurements, then a warm fit on all, on each path."""
    out = {}
    for path in ("numpy", "jax"):
        est = PGMEstimator(sizes, max_iters=iters, tol=0.0, path=path)
        cold = est.fit(meas[:3], n)
        warm = est.fit(meas, n, warm=cold)
        assert (cold.path, warm.path, est.last_path) == (path, path, path)
        out[path] = (cold, warm)
    return out


def _assert_agree(sizes, models, atol):
    for (a, b) in zip(models["numpy"], models["jax"]):
        assert a.cliques == b.cliques
        for cl in a.cliques:   # the fit's own marginals and potentials
            np.testing.assert_allclose(a.fitted_marginals[cl], b.fitted_marginals[cl], atol=atol)
        for q in itertools.combinations(sizes, 2):   # any marginal of the model
            np.testing.assert_allclose(a.counts(q), b.counts(q), atol=atol)


@pytest.mark.parametrize("seed", [0])
def test_paths_agree_on_a_random_model(seed):
    sizes, meas, n = random_model(seed)
    _assert_agree(sizes, _fit_both(sizes, meas, n, iters=150), atol=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_paths_agree_on_more_random_models(seed):
    sizes, meas, n = random_model(seed)
    _assert_agree(sizes, _fit_both(sizes, meas, n, iters=150), atol=1e-6)


def test_numpy_loss_and_total_match_mbi():
    """The numpy loss's cliques, Lipschitz constant and the total estimate are mbi's."""
    import jax.numpy as jnp
    from mbi.estimation import minimum_variance_unbiased_total

    from synth_core.model import L2Loss, _mbi, make_domain, merge_repeated
    from synth_core.runtime import estimation

    sizes, meas, n = random_model(7)
    merged = merge_repeated(meas)
    ours = L2Loss(sizes, merged)
    est = PGMEstimator(sizes)
    with estimation():
        m = _mbi()
        linear = [m.LinearMeasurement(jnp.asarray(x.values), tuple(x.clique), stddev=x.stddev)
                  for x in merged]
        theirs = m.from_linear_measurements(linear, make_domain(sizes))
        total = minimum_variance_unbiased_total(linear)
    assert ours.cliques == [tuple(c) for c in theirs.cliques]
    assert ours.lipschitz == pytest.approx(float(theirs.lipschitz), rel=1e-12)
    assert est.estimate_total(merged) == pytest.approx(total, rel=1e-12)


def test_path_choice_by_size_cost_and_forcing(monkeypatch):
    from synth_core.model import COMPILE_SECONDS, COMPILED_STEP_SECONDS_PER_MB, fit_costs

    monkeypatch.delenv(FIT_PATH_ENV, raising=False)
    est = PGMEstimator({"a": 2})
    # below the crossover always numpy, whatever the oracle's estimate
    assert est.choose_path(0.0) == "numpy"
    assert est.choose_path(NUMPY_BELOW_MB * 0.999, 1000, oracle_seconds=10.0) == "numpy"
    # from it on, the cheaper path by the cost model: compile + per-MB steps against
    # steps * oracle calls
    mb = NUMPY_BELOW_MB * 4   # compiled with the implicit oracle (auto, from IMPLICIT_FROM_MB)
    jax_cost = COMPILE_SECONDS["implicit"] + 1000 * COMPILED_STEP_SECONDS_PER_MB["implicit"] * mb
    assert fit_costs(mb, 1000, 0.01, False)["jax"] == pytest.approx(jax_cost)
    hugin = fit_costs(mb, 1000, 0.01, False, "hugin")["jax"]
    assert hugin == pytest.approx(COMPILE_SECONDS["hugin"] +
                                  1000 * COMPILED_STEP_SECONDS_PER_MB["hugin"] * mb)
    # Hugin's steps are dearer: an oracle estimate that loses to implicit beats Hugin
    assert PGMEstimator({"a": 2}, oracle="hugin").choose_path(
        mb, 1000, oracle_seconds=jax_cost / 1200 * 1.01) == "numpy"
    even = jax_cost / fit_costs(mb, 1000, 1.0, False)["numpy"]   # oracle seconds where they tie
    assert est.choose_path(mb, 1000, oracle_seconds=even * 0.99) == "numpy"
    assert est.choose_path(mb, 1000, oracle_seconds=even * 1.01) == "jax"
    # a structure this estimator compiled before costs no compile: the compiled path wins sooner
    reuse = fit_costs(mb, 1000, 1.0, True)
    assert reuse["jax"] == pytest.approx(jax_cost - COMPILE_SECONDS["implicit"])
    assert est.choose_path(mb, 1000, oracle_seconds=even * 0.99, compiled=True) == "jax"
    # shorter fits stay in numpy on slower oracles (the compile is paid once per fit)
    assert est.choose_path(mb, 100, oracle_seconds=even * 3) == "numpy"
    assert PGMEstimator({"a": 2}, path="jax").choose_path(0.0) == "jax"
    monkeypatch.setenv(FIT_PATH_ENV, "jax")
    assert est.choose_path(0.0) == "jax"
    monkeypatch.setenv(FIT_PATH_ENV, "numpy")
    assert est.choose_path(mb, 1000, oracle_seconds=100.0) == "numpy"
    assert PGMEstimator({"a": 2}, path="jax").choose_path(0.0) == "jax"  # explicit wins
    with pytest.raises(ValueError, match="unknown fit path"):
        PGMEstimator({"a": 2}, path="torch")


def test_fit_takes_the_path_its_costs_choose(monkeypatch):
    """A real fit below the crossover runs in numpy; above it the factored oracle's estimate
    decides, and a structure compiled once is refitted compiled."""
    from synth_core import model

    monkeypatch.delenv(FIT_PATH_ENV, raising=False)
    small = {"a": 3, "b": 4}
    assert model_size_mb(small, [("a", "b")]) < NUMPY_BELOW_MB
    fitted = PGMEstimator(small).fit([FitMeasurement(("a", "b"), np.arange(12.0))], 66.0)
    assert fitted.path == "numpy"
    big = {"a": 1100, "b": 1100}   # 9 MB
    assert model_size_mb(big, [("a", "b")]) >= max(NUMPY_BELOW_MB, FACTORED_FROM_MB)
    meas = [FitMeasurement(("a", "b"), np.ones(1_210_000))]
    est = PGMEstimator(big, max_iters=1000, tol=1.0)   # stops after three blocks
    assert est.fit(meas, 1_210_000.0).path == "numpy" and est.last_oracle == "factored"
    monkeypatch.setattr(model, "NUMPY_STEP_CALLS", 1e6)   # numpy steps priced out
    assert est.fit(meas, 1_210_000.0).path == "jax" and est.compiles == 1
    monkeypatch.setattr(model, "NUMPY_STEP_CALLS", 1.2)
    monkeypatch.setattr(model, "COMPILED_STEP_SECONDS_PER_MB", {"implicit": 0.0, "hugin": 0.0})
    assert est.fit(meas, 1_210_000.0).path == "jax" and est.compiles == 1   # compiled before
    assert PGMEstimator(big, max_iters=1000, tol=1.0).fit(meas, 1_210_000.0).path == "numpy"


def test_crossover_constant_is_where_the_docs_say():
    text = (ROOT / "docs" / "performance.md").read_text()
    section = text.split("## Fit paths", 1)[1]
    assert re.search(rf"NUMPY_BELOW_MB\D+{NUMPY_BELOW_MB:g} MB", section)
    assert FIT_PATH_ENV in section


def test_run_events_name_the_fit_path(small_private, small_public, small_schema):
    from synth_core.api import synthesize

    res = synthesize(small_private, small_public, mechanism="jam-pgm", epsilon=1.0, seed=3, rounds=2,
                     schema=small_schema)
    # round 0 measures before any fit ("" then); every later round follows a numpy fit
    assert {ev.fit_path for ev in res.events[1:]} == {"numpy"}
    assert res.model.path == "numpy"


def test_numpy_fit_never_imports_jax(tmp_path):
    """A fresh process fits a three-way model, and runs JAM-PGM on the Titanic sample end to
    end (fit, sample, release files), on the numpy path without importing JAX or mbi."""
    code = (
        "import sys, numpy as np\n"
        "from synth_core.model import FitMeasurement, PGMEstimator\n"
        "sizes = {'a': 3, 'b': 4, 'c': 5, 'd': 2}\n"
        "rng = np.random.default_rng(0)\n"
        "meas = [FitMeasurement(cl, rng.uniform(0, 9, int(np.prod([sizes[c] for c in cl]))))\n"
        "        for cl in [('a', 'b', 'c'), ('c', 'd'), ('a', 'd')]]\n"
        "est = PGMEstimator(sizes)\n"
        "m = est.fit(meas, est.estimate_total(meas))\n"
        "m = est.fit(meas, m.total, warm=m)\n"
        "from synth_core.cli import main\n"
        f"code = main(['run', '--sample', 'titanic', '--mechanism', 'jam-pgm', '--epsilon', '1',"
        f" '--rounds', '3', '--seed', '1', '--quiet', '--out', {str(tmp_path / 'out.csv')!r}])\n"
        "print(m.path, m.counts(('b', 'd')).sum() > 0, code, 'jax' in sys.modules, 'mbi' in sys.modules)\n")
    env = {k: v for k, v in os.environ.items() if k != FIT_PATH_ENV}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["numpy", "True", "0", "False", "False"]
    assert (tmp_path / "out.csv").stat().st_size > 0


def test_numpy_sampler_follows_the_model():
    """Records drawn in numpy reproduce the model's 2-way marginals (stratified draws:
    within sampling noise) and are reproducible from the seed."""
    sizes, meas, n = random_model(5)
    model = PGMEstimator(sizes, max_iters=200, path="numpy").fit(meas, n)
    rows = 20_000
    df = model.sample(rows, seed=4)
    assert list(df.columns) == list(sizes) and len(df) == rows
    assert df.equals(model.sample(rows, seed=4)) and not df.equals(model.sample(rows, seed=5))
    assert two_way_gap(df, model) < 0.03


def two_way_gap(df, model) -> float:
    """Largest L1 distance between a 2-way marginal of the records and the model's."""
    gaps = []
    for q in itertools.combinations(model.sizes, 2):
        shape = [model.sizes[c] for c in q]
        emp = np.bincount(np.ravel_multi_index([df[c].to_numpy() for c in q], shape),
                          minlength=int(np.prod(shape))) / len(df)
        gaps.append(np.abs(emp - model.counts(q) / model.total).sum())
    return max(gaps)


@pytest.mark.parametrize("seed", range(6))
def test_factored_oracle_equals_hugin(seed):
    """Factored message passing gives the Hugin oracle's marginals (random structures,
    disconnected parts, columns in no clique, wide potentials)."""
    from random_structures import random_structure
    from synth_core.inference import FactoredOracle, TreeOracle

    sizes, cliques, potentials = random_structure(seed, columns=(5, 9), clique_size=(1, 4),
                                                  n_cliques=(2, 7), scale=3.0)
    factored = FactoredOracle(sizes, cliques)(potentials, 250.0)
    hugin = TreeOracle(sizes, cliques)(potentials, 250.0)
    assert set(factored) == set(cliques)
    for cl in cliques:
        np.testing.assert_allclose(factored[cl], hugin[cl], rtol=1e-10, atol=1e-10)


def test_tree_oracle_rescales_products_before_they_underflow(monkeypatch):
    """A hub node receiving eight messages over one column, peaked in turn at its two
    values (e^-200 apart): each product lowers the table's max by up to e^-200, so
    without a rescale the whole table underflows after eight of them. The table is
    rescaled once its max falls below ``RESCALE_BELOW``, and the marginals are exact;
    with ``RESCALE_BELOW = 0`` (never) they are not."""
    import warnings

    from synth_core import inference
    from synth_core.inference import TreeOracle

    hub = ("a", "h")
    leaves = [("a", f"x{i}") for i in range(8)]
    sizes = {c: 2 for c in ("a", "h", *(leaf[1] for leaf in leaves))}
    cliques = [hub] + leaves
    potentials = {hub: np.array([[0.0, 0.3], [0.1, 0.0]])}
    for i, leaf in enumerate(leaves):   # leaf i peaks at a = i % 2
        theta = np.full((2, 2), -200.0)
        theta[i % 2] = [0.0, 0.2]
        potentials[leaf] = theta
    # exact marginals from the joint in log space (every clique lists its columns in
    # the order of ``names``, so a reshape lays it out over the joint)
    names = list(sizes)
    joint = np.zeros([2] * len(names))
    for cl, theta in potentials.items():
        joint = joint + theta.reshape([2 if c in cl else 1 for c in names])
    joint = np.exp(joint - joint.max())
    joint /= joint.sum()

    def exact(cl):
        return joint.sum(axis=tuple(i for i, c in enumerate(names) if c not in cl))

    tree = (cliques, [(hub, leaf) for leaf in leaves])
    ours = TreeOracle(sizes, cliques, tree)(potentials, 1.0)
    for cl in cliques:
        np.testing.assert_allclose(ours[cl], exact(cl), rtol=1e-9, atol=1e-12)
    monkeypatch.setattr(inference, "RESCALE_BELOW", 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)   # 0/0 in the underflowed table
        broken = TreeOracle(sizes, cliques, tree)(potentials, 1.0)
    assert not all(np.allclose(broken[cl], exact(cl), rtol=1e-6, atol=1e-12) for cl in cliques)


def test_factored_oracle_node_tables_equal_hugin():
    """A node home to many cliques is built once and summed down (the cost model picks it on
    this structure): the marginals are still Hugin's."""
    from itertools import combinations

    from synth_core.inference import FactoredOracle, TreeOracle

    rng = np.random.default_rng(3)
    sizes = {f"c{i}": int(rng.integers(3, 7)) for i in range(8)}
    inner = list(sizes)[:6]
    cliques = list(combinations(inner, 3)) + [("c5", "c6"), ("c6", "c7"), ("c0", "c7")]
    potentials = {cl: rng.normal(0, 2, [sizes[c] for c in cl]) for cl in cliques}
    oracle = FactoredOracle(sizes, cliques)
    assert oracle.node_tables, "no node table chosen on a node home to twenty cliques"
    assert oracle.estimated_call_seconds() > 0
    factored, hugin = oracle(potentials, 90.0), TreeOracle(sizes, cliques)(potentials, 90.0)
    for cl in cliques:
        np.testing.assert_allclose(factored[cl], hugin[cl], rtol=1e-10, atol=1e-10)


def test_factored_numpy_fit_agrees_with_compiled(monkeypatch):
    """With the factored oracle forced for every size, the numpy fit still matches the
    compiled one to 1e-6 (cold and warm fits)."""
    from synth_core import model

    monkeypatch.setattr(model, "FACTORED_FROM_MB", 0.0)
    sizes, meas, n = random_model(0)
    fits = _fit_both(sizes, meas, n, iters=150)
    est = PGMEstimator(sizes, max_iters=50, path="numpy")
    est.fit(meas, n)
    assert est.last_oracle == "factored"
    _assert_agree(sizes, fits, atol=1e-6)
