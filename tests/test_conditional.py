"""Conditional generation (public columns): exact conditional sampling, Conditional
AIM and Conditional vJAM-PGM (budget, kept public values, the conditioning bound,
reports), and the edge cases of the vertical split."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer
from synth_core import conditional
from synth_core.api import RunWarning
from synth_core.cli import main as cli_main
from synth_core.conditional import (conditional_workload, conditioning_marginals,
                                    sample_private_given_public)
from synth_core.engine import PRIVATE, PUBLIC
from synth_core.errors import ConfigError, SynthError
from synth_core.marginals import CodedTable
from synth_core.model import FitMeasurement, PGMEstimator, model_size_mb
from synth_core.privacy import rho_from_epsilon_delta
from synth_core.workload import parse_workload

PUBLIC_COLS = ["sex", "age", "edu"]
PRIVATE_COLS = ["income", "hours"]
FAST = dict(fit_iters=20, final_fit_iters=60, workload="all-3way")


# -- the sampler ----------------------------------------------------------------

@pytest.fixture(scope="module")
def small_model():
    """A fitted model over five columns whose junction tree has a cycle-free structure
    with public and private columns mixed inside cliques."""
    rng = np.random.default_rng(0)
    sizes = {"a": 3, "b": 2, "c": 4, "d": 3, "e": 2}
    n = 600
    data = {c: rng.integers(0, s, n) for c, s in sizes.items()}
    data["c"] = (data["a"] + data["b"] + rng.integers(0, 2, n)) % 4
    data["d"] = (data["c"] + rng.integers(0, 2, n)) % 3
    table = CodedTable.from_frame(pd.DataFrame(data), sizes)
    cliques = [("a", "b", "c"), ("c", "d"), ("d", "e"), ("a", "e")]
    measured = [FitMeasurement(cl, table.marginal(cl) + rng.normal(0, 3, table.cells(cl)), 1.0)
                for cl in cliques]
    return PGMEstimator(sizes, max_iters=300).fit(measured, n)


def test_conditional_sampling_is_exact_for_the_model(small_model):
    marg = small_model.marginals
    joint = marg.probability(("a", "b", "c", "d", "e"))
    n = 60_000
    rng = np.random.default_rng(1)
    evidence = {"a": rng.integers(0, 3, n), "d": rng.integers(0, 3, n)}
    # a small block forces many blocks of patterns and chunks of records
    drawn = sample_private_given_public(marg, evidence, np.random.default_rng(2), block_cells=64)
    assert set(drawn) == {"b", "c", "e"}
    for a, d in itertools.product(range(3), range(3)):
        rows = (evidence["a"] == a) & (evidence["d"] == d)
        exact = joint[a, :, :, d, :] / joint[a, :, :, d, :].sum()   # p(b, c, e | a, d)
        seen = np.zeros_like(exact)
        np.add.at(seen, (drawn["b"][rows], drawn["c"][rows], drawn["e"][rows]), 1)
        seen /= rows.sum()
        # ~6,700 draws over 16 cells: total variation of pure sampling noise is ~0.02
        assert 0.5 * np.abs(seen - exact).sum() < 0.04, (a, d)


def test_conditional_sampling_is_reproducible(small_model):
    evidence = {"a": np.arange(50) % 3, "d": np.arange(50) % 3}
    one = sample_private_given_public(small_model.marginals, evidence, np.random.default_rng(5))
    two = sample_private_given_public(small_model.marginals, evidence, np.random.default_rng(5))
    other = sample_private_given_public(small_model.marginals, evidence, np.random.default_rng(6))
    assert set(one) == set(two) == {"b", "c", "e"}
    assert all(np.array_equal(one[c], two[c]) for c in one)
    assert not all(np.array_equal(one[c], other[c]) for c in one)   # the draws use the generator


def test_a_draw_is_the_inverse_cdf_of_its_row():
    """Records sharing a row share its cumulative sums; each record still gets
    the first category whose cumulative weight exceeds its point times the
    row's total (zero weights are never drawn, boundaries go up)."""
    rng = np.random.default_rng(7)
    for width in (1, 2, 3, 7, 64, 1000):
        weights = rng.random((5, width)) * (rng.random((5, width)) < 0.6)
        weights[:, rng.integers(0, width)] += 0.5                    # no empty row
        rows = rng.integers(0, 5, 400)
        points = rng.random(400)
        cum = np.cumsum(weights, axis=1)
        points[:5] = cum[rows[:5], (np.arange(5) % width)] / cum[rows[:5], -1]  # exactly on a boundary
        points = np.minimum(points, np.nextafter(1.0, 0.0))
        expected = np.minimum((cum[rows] <= (points * cum[rows, -1])[:, None]).sum(axis=1),
                              width - 1)
        got = conditional._draw(weights, points, rows)
        assert np.array_equal(got, expected), width
        assert np.all(weights[rows, got] > 0)
        assert np.array_equal(conditional._draw(weights[rows], points, np.arange(400)), expected)
    with pytest.raises(ConfigError, match="probability zero"):
        conditional._draw(np.zeros((1, 3)), np.array([0.5]), np.array([0]))


def test_records_sharing_public_values_get_rounded_counts():
    """Systematic draws: the records with the same public value get the model's
    expected counts of each private value rounded up or down (iid draws miss them
    by about the binomial spread), and each record's point is uniform."""
    rng = np.random.default_rng(3)
    sizes = {"a": 3, "b": 4}
    data = pd.DataFrame({"a": rng.integers(0, 3, 500)})
    data["b"] = (data["a"] + rng.integers(0, 3, 500)) % 4
    table = CodedTable.from_frame(data, sizes)
    model = PGMEstimator(sizes, max_iters=200).fit(
        [FitMeasurement(("a", "b"), table.marginal(("a", "b")), 1.0)], 500)
    joint = model.marginals.probability(("a", "b"))
    evidence = {"a": np.repeat(np.arange(3), [997, 1000, 1503])}
    gaps = {}
    for method in ("systematic", "iid"):
        drawn = sample_private_given_public(model.marginals, evidence, np.random.default_rng(4),
                                            method=method)["b"]
        gaps[method] = max(
            np.abs(np.bincount(drawn[evidence["a"] == a], minlength=4)
                   - m * joint[a] / joint[a].sum()).max()
            for a, m in enumerate((997, 1000, 1503)))
    assert gaps["systematic"] < 1 < gaps["iid"]
    # the points: evenly spread within each group, uniform for every record
    groups = np.repeat([5, 2, 9], [4, 7, 1])
    points = conditional.systematic_points(groups, np.random.default_rng(0))
    for g, m in ((5, 4), (2, 7), (9, 1)):
        gaps_ = np.diff(np.sort(points[groups == g]))
        assert len(gaps_) == m - 1 and np.allclose(gaps_, 1 / m)
    many = np.array([conditional.systematic_points(groups, np.random.default_rng(i))[0]
                     for i in range(4000)])
    assert abs(many.mean() - 0.5) < 0.02 and abs((many < 0.25).mean() - 0.25) < 0.03
    with pytest.raises(ConfigError, match="Unknown sampling method"):
        sample_private_given_public(model.marginals, evidence, rng, method="round")


def test_conditioning_bound_keeps_oneways_and_reports_what_it_drops():
    cols = ["p1", "p2", "p3", "p4", "q"]
    sizes = {"p1": 30, "p2": 30, "p3": 30, "p4": 30, "q": 2}
    work = conditional_workload(parse_workload("all-3way", cols), cols[:4])
    assert all("q" in cl for cl in work.cliques)            # W': a private column in each
    kept, dropped = conditioning_marginals(work, cols[:4], sizes, max_mb=0.03)
    assert {cl for cl in kept if len(cl) == 1} == {(c,) for c in cols[:4]}
    assert dropped and all(len(cl) == 2 for cl in dropped)
    assert model_size_mb(sizes, kept) <= 0.03
    assert set(kept) | set(dropped) == {cl for cl in work.downward_closure() if "q" not in cl}
    everything, none = conditioning_marginals(work, cols[:4], sizes, max_mb=80)
    assert not none and len(everything) == 4 + 6


# -- Conditional AIM and Conditional vJAM-PGM ----------------------------------------

def run(private, schema, mechanism, *, epsilon=1.0, public_columns=PUBLIC_COLS, seed=0, **options):
    synth = Synthesizer(mechanism, epsilon=epsilon, seed=seed, **FAST, **options)
    events = list(synth.run(private, schema=schema, public_columns=public_columns))
    return synth.result, events


def public_rows(frame: pd.DataFrame) -> list[tuple]:
    """The records' public values, as a sorted list (a multiset, whatever the order)."""
    return sorted(frame[PUBLIC_COLS].itertuples(index=False, name=None))


@pytest.fixture(scope="module")
def cond_aim(small_private, small_schema):
    return run(small_private, small_schema, "aim", conditional=True, rounds=6)


@pytest.fixture(scope="module")
def cond_vjam(small_private, small_schema):
    return run(small_private, small_schema, "vjam-pgm", conditional=True, rounds=4)


@pytest.mark.parametrize("fixture", ["cond_aim", "cond_vjam"])
def test_output_keeps_every_records_public_values(request, fixture, small_private):
    result, _ = request.getfixturevalue(fixture)
    out = result.synthetic
    assert len(out) == len(small_private)
    # record by record (in a random order), so every public marginal is exact too
    assert public_rows(out) == public_rows(small_private)
    codes = result.synthetic_table
    private = result.inputs.data.private
    for cl in [("sex", "age"), ("age", "edu"), ("sex", "age", "edu")]:
        assert np.array_equal(codes.marginal(cl), private.marginal(cl))
    # the private columns are generated, not copied
    assert not all(out[c].tolist() == small_private[c].tolist() for c in PRIVATE_COLS)


@pytest.mark.parametrize("fixture", ["cond_aim", "cond_vjam"])
def test_public_columns_cost_nothing(request, fixture):
    result, events = request.getfixturevalue(fixture)
    rho = rho_from_epsilon_delta(1.0, 1e-9)
    public = set(PUBLIC_COLS)
    for m in result.measurements:
        if m.source == PUBLIC:
            assert set(m.clique) <= public and m.noise_std == 0
            assert np.array_equal(m.values, result.inputs.data.private.marginal(m.clique))
        else:
            assert set(m.clique) - public, m.clique   # every noisy one has a private column
            assert m.noise_std > 0
    # the ledger: a charge per private measurement and per selection, nothing else
    charged = [c for c in result.ledger.charges if c.step == "measure"]
    assert len(charged) == sum(m.source == PRIVATE for m in result.measurements)
    assert all(set(c.detail.split("×")) - public for c in charged)
    assert result.ledger.spent == pytest.approx(rho, rel=1e-9)   # no public pick: exactly rho
    assert all(ev.source == PRIVATE for ev in events if ev.round > 0)


@pytest.mark.parametrize("fixture", ["cond_aim", "cond_vjam"])
def test_report_records_the_conditioning(request, fixture):
    result, _ = request.getfixturevalue(fixture)
    cond = result.report["conditional_generation"]
    assert cond["conditioned_on"] == PUBLIC_COLS
    assert cond["sampling"] == "systematic"
    kept = [tuple(c) for c in cond["conditioning_marginals"]]
    measured_public = [m.clique for m in result.measurements if m.source == PUBLIC]
    assert measured_public == kept
    assert len(kept) == 3 + 3 and cond["conditioning_marginals_dropped"] == []
    assert result.report["public_information"]["private_columns"] == PRIVATE_COLS
    statement = result.report["privacy"]["statement"]
    assert "protects the private columns (income, hours)" in statement
    # the statement says the public values are real records' own (the test above checks it)
    assert ("Conditional generation: every synthetic record carries one real record's own "
            f"values of {', '.join(PUBLIC_COLS)}, copied as they are") in statement


def test_a_plain_public_columns_run_does_not_claim_to_copy_them(small_private, small_schema):
    result, _ = run(small_private, small_schema, "vjam-pgm", rounds=4)
    assert result.report.get("conditional_generation") is None
    statement = result.report["privacy"]["statement"]
    assert "protects the private columns" in statement and "Conditional" not in statement


def test_conditional_aim_fits_only_marginals_with_a_private_column(cond_aim):
    result, events = cond_aim
    for ev in events[1:]:
        assert set(ev.cliques[0]) & set(PRIVATE_COLS)
    for ev in events[1:]:   # and public cliques never enter the pool
        assert all(set(c.clique) & set(PRIVATE_COLS) for c in ev.curator.candidates)


def test_a_tight_bound_drops_public_marginals_and_says_so(small_private, small_schema):
    result, _ = run(small_private, small_schema, "aim", conditional=True, rounds=4,
                    condition_max_mb=0.0001)
    cond = result.report["conditional_generation"]
    assert cond["conditioning_marginals_dropped"]
    assert all(len(c) == 1 for c in cond["conditioning_marginals"])
    # the 1-ways are always kept; nothing larger fits under the bound
    sizes = result.inputs.schema.sizes
    assert cond["conditioning_model_mb"] == model_size_mb(sizes, [(c,) for c in PUBLIC_COLS])
    # the output still keeps the public values
    assert public_rows(result.synthetic) == public_rows(small_private)


def test_the_bound_follows_a_small_model_size(small_private, small_schema):
    """The 10 MB default bound is capped at the maximum model size: a model size
    below 10 MB needs no second setting (every Private-PGM mechanism,
    conditional or not, runs without an error about condition_max_mb)."""
    from synth_core.mechanisms import MECHANISMS

    for name in ("aim", "jam-pgm", "vjam-pgm"):
        MECHANISMS[name](max_model_size=5.0)      # builds; no error about the bound
    assert conditional.effective_condition_bound(10.0, 5.0) == 5.0
    assert conditional.effective_condition_bound(2.0, 5.0) == 2.0
    result, _ = run(small_private, small_schema, "aim", conditional=True, rounds=4,
                    max_model_size=0.001)
    cond = result.report["conditional_generation"]
    assert cond["condition_max_mb"] == 0.001
    assert 0 < cond["conditioning_model_mb"] <= 0.001


def test_without_public_columns_conditional_aim_is_plain_aim(small_private, small_schema):
    with pytest.warns(RunWarning, match="nothing to condition on"):
        cond, _ = run(small_private, small_schema, "aim", conditional=True, rounds=8,
                      public_columns=())
    plain, _ = run(small_private, small_schema, "aim", rounds=8, public_columns=())
    assert cond.synthetic.equals(plain.synthetic)
    assert cond.ledger.charges == plain.ledger.charges
    assert "conditional_generation" not in cond.report
    assert cond.report["warnings"] and not plain.report["warnings"]


def test_conditional_errors_are_specific(small_private, small_schema):
    every = list(small_private.columns)
    for mech in ("aim", "vjam-pgm"):
        with pytest.raises(ConfigError, match="Every column is marked public"):
            run(small_private, small_schema, mech, conditional=True, rounds=4, public_columns=every)
        with pytest.raises(SynthError, match="public columns not in the schema: 'nope'"):
            run(small_private, small_schema, mech, conditional=True, rounds=4,
                public_columns=["sex", "nope"])
    with pytest.raises(ConfigError, match="jam-pgm has no conditional generation"):
        Synthesizer("jam-pgm", epsilon=1.0, conditional=True).fit(
            small_private, small_private, schema=small_schema)
    with pytest.raises(ConfigError, match="--conditional"):
        run(small_private, small_schema, "aim", rounds=4)   # public columns, not conditional
    with pytest.raises(ConfigError, match="bounded DP"):
        run(small_private, small_schema, "aim", conditional=True, rounds=4, neighbours="unbounded")
    with pytest.raises(ConfigError, match="condition_max_mb must be a positive"):
        run(small_private, small_schema, "aim", conditional=True, rounds=4, condition_max_mb=0)


@pytest.mark.parametrize("mechanism", ["aim", "vjam-pgm"])
def test_the_release_order_does_not_follow_the_private_files(small_private, small_schema,
                                                            mechanism):
    """A private file sorted by its private columns: were the records released in the
    file's order, each public value's position would tell its record's income."""
    ordered = small_private.sort_values(PRIVATE_COLS, kind="stable").reset_index(drop=True)
    result, _ = run(ordered, small_schema, mechanism, conditional=True, rounds=3)
    out = result.synthetic
    assert public_rows(out) == public_rows(ordered)
    key = list(zip(*(ordered[c] for c in PUBLIC_COLS)))
    same_place = np.mean([a == b for a, b in zip(key, zip(*(out[c] for c in PUBLIC_COLS)))])
    # a random order puts the same public values in a record's place with probability
    # sum_k p_k^2 over the public patterns k (the file's order: 1)
    shares = pd.Series(key).value_counts(normalize=True).to_numpy()
    assert same_place < (shares ** 2).sum() + 0.05
    # the codes kept beside the values (evaluation, marginal bounds) are in the same order
    assert result.inputs.schema.encode(out).equals(result.synthetic_codes)


def test_conditional_runs_are_reproducible(small_private, small_schema, cond_vjam):
    again, _ = run(small_private, small_schema, "vjam-pgm", conditional=True, rounds=4)
    assert again.synthetic.equals(cond_vjam[0].synthetic)


@pytest.mark.slow
def test_cli_conditional_flag(tmp_path, small_private, small_schema):
    data = tmp_path / "private.csv"
    small_private.to_csv(data, index=False)
    schema = tmp_path / "schema.json"
    schema.write_text(__import__("json").dumps(small_schema.to_json()))
    out, report = tmp_path / "synth.csv", tmp_path / "report.json"
    code = cli_main(["run", "--data", str(data), "--schema", str(schema), "--mechanism", "aim",
                     "--conditional", "--public-columns", "sex,age,edu", "--epsilon", "1",
                     "--rounds", "4", "--workload", "all-2way", "--fit-iters", "20",
                     "--final-fit-iters", "40", "--out", str(out), "--report", str(report),
                     "--quiet"])
    assert code == 0
    synth = pd.read_csv(out)
    assert sorted(synth["edu"]) == sorted(small_private["edu"])
    rep = __import__("json").loads(report.read_text())
    assert rep["conditional_generation"]["conditioned_on"] == ["sex", "age", "edu"]
    assert rep["config"]["options"]["conditional"] is True


def test_many_conditioning_marginals_switch_the_fits_to_hugin(small_private, small_schema,
                                                              monkeypatch):
    """Many conditioning marginals make the implicit oracle's programs large (see
    ConditionalSetup.fit_oracle): above HUGIN_ABOVE_CONDITIONING of them the fits
    use Hugin; with few, the oracle is chosen by model size as for other runs
    (the oracle is the compiled path's: forced here, these models are small; on the
    joint model, which conditional runs fit where a pattern model is not used)."""
    monkeypatch.setenv("SYNTH_FIT_PATH", "jax")
    monkeypatch.setattr(conditional, "CONDITIONAL_MODEL", "joint")
    few = Synthesizer("aim", epsilon=1.0, seed=0, conditional=True, rounds=3, **FAST)
    list(few.run(small_private, schema=small_schema, public_columns=PUBLIC_COLS))
    kept = few.result.report["conditional_generation"]["conditioning_marginals"]
    assert 0 < len(kept) <= conditional.HUGIN_ABOVE_CONDITIONING
    assert few.engine.estimator.oracle == "auto"
    monkeypatch.setattr(conditional, "HUGIN_ABOVE_CONDITIONING", len(kept) - 1)
    many = Synthesizer("aim", epsilon=1.0, seed=0, conditional=True, rounds=3, **FAST)
    list(many.run(small_private, schema=small_schema, public_columns=PUBLIC_COLS))
    assert many.engine.estimator.oracle == "hugin"
    assert many.engine.estimator.last_oracle == "hugin"
    plain = Synthesizer("vjam-pgm", epsilon=1.0, seed=0, rounds=3, **FAST)
    list(plain.run(small_private, schema=small_schema, public_columns=PUBLIC_COLS))
    assert plain.engine.estimator.oracle == "auto"
