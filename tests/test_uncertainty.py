"""Error bounds on released marginals (AIM paper, section 5): synth_core.uncertainty."""

from __future__ import annotations

import gc
import inspect
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from conftest import all_keys, make_correlated
from synth_core import Synthesizer
from synth_core.errors import ConfigError
from synth_core.marginals import CodedTable
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core.uncertainty import (EXACT, PUBLIC_ONLY, SUPPORTED, UNSUPPORTED, bounds_frame,
                                    codes_of, combined_estimate, gaussian_l1_bound, marginal_bounds, project)

FAST = dict(fit_iters=30, final_fit_iters=60)


def fit(mechanism, private, public=None, *, schema, public_columns=(), **kw):
    synth = Synthesizer(mechanism, **{"workload": "all-2way", "seed": 0, **FAST, **kw})
    synth.fit(private, public, schema=schema, public_columns=public_columns)
    return synth


def true_errors(result) -> dict:
    """CURATOR-ONLY (test side): ||M_r(D) - M_r(S)||_1 of every workload marginal."""
    private, synthetic = result.inputs.data.private, result.synthetic_table
    return {cl: float(np.abs(private.marginal(cl) - synthetic.marginal(cl)).sum())
            for cl in result.workload.cliques}


@pytest.fixture(scope="module")
def aim_run(small_schema):
    return fit("aim", make_correlated(2000, seed=11), schema=small_schema, epsilon=1.0, rounds=8)


@pytest.fixture(scope="module")
def jam_run(small_private, small_public, small_schema):
    # small epsilon: public picks are attractive, so some marginals rest on public rows only
    return fit("jam-pgm", small_private, small_public, schema=small_schema, epsilon=0.3, rounds=6)


# (a) release objects only ---------------------------------------------------------------

def test_bounds_need_only_the_release(small_schema, aim_run):
    params = inspect.signature(marginal_bounds).parameters
    assert list(params) == ["report", "synthetic_codes", "level"]
    assert params["level"].kind is inspect.Parameter.KEYWORD_ONLY

    # a fresh run whose private table, result and engine are gone before the bounds are computed
    private = make_correlated(1500, seed=21)
    synth = fit("aim", private, schema=small_schema, epsilon=1.0, rounds=8)
    report_json = json.dumps(synth.result.report)
    codes_csv = synth.result.synthetic_codes.to_csv(index=False)
    released_csv = synth.result.synthetic.to_csv(index=False)     # the file a reader holds
    in_run = synth.result.report["marginal_bounds"]
    del private, synth
    gc.collect()
    report = json.loads(report_json)
    codes = pd.read_csv(io.StringIO(codes_csv))
    again = [b.to_json() for b in marginal_bounds(report, codes, level=in_run["level"])]
    assert again == in_run["bounds"]
    # from the released file, as docs/uncertainty.md shows it
    released = pd.read_csv(io.StringIO(released_csv))
    from_file = marginal_bounds(report, codes_of(report, released), level=in_run["level"])
    assert [b.to_json() for b in from_file] == in_run["bounds"]
    with pytest.raises(ConfigError, match="codes_of"):         # its text is not codes
        marginal_bounds(report, released)
    assert {b["kind"] for b in again} >= {SUPPORTED, UNSUPPORTED}
    # the new blocks are release fields: check_release accepts them, no curator key inside
    check_release(report)
    assert not set(all_keys(report["marginal_bounds"])) & CURATOR_ONLY_KEYS
    assert not set(all_keys(report["last_selection"])) & CURATOR_ONLY_KEYS
    frame = bounds_frame(report)
    assert len(frame) == len(report["workload"]["cliques"]) and "kind" in frame.columns


@pytest.mark.slow
def test_released_theorem4_inputs_match_the_mechanisms_scores(small_private, small_schema,
                                                              aim_run, jam_run):
    """The released weights, offsets and previous-model marginals reproduce the exact
    (curator-only) scores of the last selection: w_c (||M_c(D) - M_c(p_{t-1})||_1 - o_c)."""
    mwem = fit("mwem-pgm", small_private, schema=small_schema, epsilon=1.0, rounds=4)
    checked = 0
    for synth in (aim_run, jam_run, mwem):
        last, engine = synth.result.report["last_selection"], synth.engine
        event = engine.events[-1]
        assert event.round == last["round"] and event.epsilon == last["epsilon"]
        assert last["n_candidates"] == len(event.curator.candidates)
        exact = {(c.clique, c.source): s for c, s in zip(event.curator.candidates, event.curator.scores)}
        before = engine.last_selection[4]          # the model p_{t-1} (test-side only)
        assert np.allclose(last["chosen"]["previous_model"],
                           before.counts_many([tuple(last["chosen"]["clique"])])[
                               tuple(last["chosen"]["clique"])])
        synthetic = synth.result.synthetic_table
        private = synth.result.inputs.data.private
        for cand in [last["chosen"]] + last["candidates"]:
            cl = tuple(cand["clique"])
            previous = before.counts_many([cl])[cl]
            if cand is not last["chosen"]:
                assert cand["previous_model_to_synthetic_l1"] == pytest.approx(
                    np.abs(previous - synthetic.marginal(cl)).sum())
            err = np.abs(private.marginal(cl) - previous).sum()
            score = exact[(cl, cand["source"])]
            if cand["offset"] is None:   # JAM-PGM's public proxy: offset unknown but >= 0
                assert score <= cand["weight"] * err + 1e-6
            else:
                assert score == pytest.approx(cand["weight"] * (err - cand["offset"]), rel=1e-6, abs=1e-6)
            checked += 1
    assert checked >= 6


# (b) the estimator's algebra --------------------------------------------------------------

def test_supported_estimator_inverse_variance_on_a_hand_made_release():
    y_ab, y_a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [5.0, 16.0]
    report = {
        "config": {"mechanism": "aim"}, "schema": {"a": 2, "b": 3},
        "public_information": {"columns": []}, "data": {"n": 21},
        "workload": {"cliques": [["a"], ["b"], ["a", "b"]]},
        "measurements": [
            {"clique": ["a", "b"], "source": "private", "noise_std": 2.0, "noisy_answer": y_ab},
            {"clique": ["a"], "source": "private", "noise_std": 1.0, "noisy_answer": y_a},
        ],
    }
    codes = pd.DataFrame({"a": [0] * 6 + [1] * 15, "b": [0, 1, 2] * 7})
    synth_a, synth_b = np.array([6.0, 15.0]), np.array([7.0, 7.0, 7.0])
    synth_ab = CodedTable.from_frame(codes, {"a": 2, "b": 3}).marginal(("a", "b"))
    q = lambda cells: math.sqrt(2 / math.pi) * cells + math.sqrt(2 * cells * math.log(20))  # noqa: E731

    # a: projection of (a, b) sums 3 cells -> [6, 15], variance 2^2 * 6 / 2 = 12;
    # with y_a (variance 1): ybar = (P y_ab / 12 + y_a) / (1/12 + 1) = [66/13, 207/13]
    ybar, sd, used = combined_estimate(report, ("a",))
    np.testing.assert_allclose(ybar, [66 / 13, 207 / 13])
    assert sd == pytest.approx(math.sqrt(12 / 13)) and used == (("a", "b"), ("a",))
    # b: only (a, b), summed over a (2 cells): variance 2^2 * 6 / 3 = 8
    ybar_b, sd_b, _ = combined_estimate(report, ("b",))
    np.testing.assert_allclose(ybar_b, [5.0, 7.0, 9.0])
    assert sd_b == pytest.approx(math.sqrt(8))

    bounds = {b.clique: b for b in marginal_bounds(report, codes)}
    assert bounds[("a",)].kind == SUPPORTED
    assert bounds[("a",)].bound_l1 == pytest.approx(
        np.abs(np.array([66 / 13, 207 / 13]) - synth_a).sum() + math.sqrt(12 / 13) * q(2))
    assert bounds[("b",)].bound_l1 == pytest.approx(
        np.abs(np.array([5.0, 7.0, 9.0]) - synth_b).sum() + math.sqrt(8) * q(3))
    assert bounds[("a", "b")].bound_l1 == pytest.approx(np.abs(np.array(y_ab) - synth_ab).sum() + 2 * q(6))
    assert bounds[("a", "b")].bound_normalised == pytest.approx(bounds[("a", "b")].bound_l1 / 21)
    # the projection keeps the order asked for
    np.testing.assert_array_equal(project(y_ab, ("a", "b"), ("b", "a"), {"a": 2, "b": 3}),
                                  np.array(y_ab).reshape(2, 3).T.ravel())
    with pytest.raises(ConfigError, match="level"):
        marginal_bounds(report, codes, level=1.0)


def test_gaussian_l1_bound_is_a_tail_bound():
    rng = np.random.default_rng(0)
    for cells in (1, 4, 30, 200):
        for lam in (0.05, 0.2):
            z = rng.normal(0.0, 3.0, size=(20_000, cells))
            exceed = np.mean(np.abs(z).sum(axis=1) > gaussian_l1_bound(3.0, cells, lam))
            assert exceed <= lam


# (c) coverage ----------------------------------------------------------------------------

@pytest.mark.slow
def test_bounds_cover_the_true_error(small_schema):
    """Over repeated small AIM runs (fixed seeds), the 95% bounds cover the true error
    at least 95% of the time (pooled over marginals and runs); and the noisy
    estimate behind the supported bounds has the stated per-cell std.

    The 1-way marginals are bounded too (added to the report's workload): they
    rest on several measurements (the 1-way itself and projected 2-ways)."""
    covered, pairs, kinds, z = 0, 0, set(), []
    for seed in range(18):
        synth = fit("aim", make_correlated(1500, seed=100 + seed), schema=small_schema,
                    epsilon=(0.3, 1.0, 3.0)[seed % 3], rounds=8, seed=seed)
        res = synth.result
        private, synthetic = res.inputs.data.private, res.synthetic_table
        cliques = [[c] for c in private.columns] + res.report["workload"]["cliques"]
        report = {**res.report, "workload": {"cliques": cliques}}
        for b in marginal_bounds(report, res.synthetic_codes):
            if b.bound_l1 is None:
                continue
            pairs += 1
            kinds.add(b.kind)
            covered += np.abs(private.marginal(b.clique) - synthetic.marginal(b.clique)).sum() <= b.bound_l1
            if b.kind == SUPPORTED:
                ybar, sd, _ = combined_estimate(report, b.clique)
                z.append((ybar - private.marginal(b.clique)) / sd)
    assert kinds == {SUPPORTED, UNSUPPORTED} and pairs >= 250
    assert covered / pairs >= 0.95
    z = np.concatenate(z)
    assert z.size > 300 and 0.85 < z.std() < 1.15 and abs(z.mean()) < 0.15


# (d) public measurements ------------------------------------------------------------------

def test_jam_marginals_resting_on_public_rows_get_no_bound(jam_run):
    report = jam_run.result.report
    noisy = {tuple(m["clique"]) for m in report["measurements"] if m["noise_std"] > 0}
    proxy = {tuple(m["clique"]) for m in report["measurements"] if m["noise_std"] == 0}
    bounds = marginal_bounds(report, jam_run.result.synthetic_codes)
    public_only = [b for b in bounds if b.kind == PUBLIC_ONLY]
    assert public_only, "the run should rest some marginal on public rows only"
    for b in bounds:
        inside_noisy = any(set(b.clique) <= set(c) for c in noisy)
        inside_proxy = any(set(b.clique) <= set(c) for c in proxy)
        assert (b.kind == PUBLIC_ONLY) == (inside_proxy and not inside_noisy)
        if b.kind == PUBLIC_ONLY:
            assert b.bound_l1 is None and "public data" in b.note
        if b.kind == SUPPORTED:   # public-row answers never enter a bound
            assert set(b.supported_by) <= noisy


@pytest.mark.slow
def test_exact_public_column_answers_give_the_error_itself(small_private, small_schema):
    synth = fit("vjam-pgm", small_private, schema=small_schema, public_columns=("sex", "edu"),
                epsilon=1.0, rounds=4, workload="sex;edu;sex,age;edu,income;age,hours")
    res = synth.result
    errors = true_errors(res)
    bounds = {b.clique: b for b in marginal_bounds(res.report, res.synthetic_codes)}
    for cl in [("sex",), ("edu",)]:
        assert bounds[cl].kind == EXACT
        assert bounds[cl].bound_l1 == pytest.approx(errors[cl], abs=1e-9)
    assert all(b.kind != EXACT for cl, b in bounds.items() if len(cl) > 1)
    # conditional generation keeps each record's public values: no error inside them
    synth = fit("aim", small_private, schema=small_schema, public_columns=("sex", "edu"),
                conditional=True, epsilon=1.0, rounds=8)
    res = synth.result
    errors = true_errors(res)
    bounds = {b.clique: b for b in marginal_bounds(res.report, res.synthetic_codes)}
    assert bounds[("sex", "edu")].kind == EXACT and bounds[("sex", "edu")].bound_l1 == 0.0
    assert errors[("sex", "edu")] == 0.0


def test_counting_query_mechanisms_report_not_available(small_private, small_public, small_schema):
    synth = fit("pmw-pub", small_private, small_public, schema=small_schema, epsilon=1.0, rounds=10)
    block = synth.result.report["marginal_bounds"]
    assert block["available"] is False and "not available" in block["note"].lower()
    assert bounds_frame(synth.result.report).empty
    with pytest.raises(ConfigError, match="counting queries"):
        marginal_bounds(synth.result.report, synth.result.synthetic_codes)


# the Release page ------------------------------------------------------------------------

@pytest.mark.slow
def test_release_page_shows_the_bounds_table():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    def go(page):
        at.switch_page(page).run()
        assert not at.exception, at.exception

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"), default_timeout=60)
    at.run()
    at.button(key="sample_titanic").click().run()
    go("app_pages/workload.py")
    wb = at.session_state["wb"]
    wb.update_settings(rounds=3, fit_iters=20, final_fit_iters=50, seed=0)
    go("app_pages/run.py")
    at.button(key="start_run").click().run()
    assert wb.worker.wait(120), "the run did not finish in time"
    at.run()
    go("app_pages/release.py")
    assert any("Uncertainty of released marginals (95% bounds" in h.value for h in at.subheader)
    table = next(d.value for d in at.dataframe if "kind" in d.value.columns)
    report = wb.runs[0].result.report
    assert list(table["marginal"]) == [" × ".join(c) for c in report["workload"]["cliques"]]
    assert set(table["kind"]) <= {SUPPORTED, UNSUPPORTED, PUBLIC_ONLY, EXACT}


@pytest.mark.slow
def test_no_bound_exceeds_the_largest_possible_distance(aim_run, jam_run, small_schema):
    """Two tables of n records are at most 2n apart in L1 (bounded DP): larger bounds are capped."""
    # few records and a small budget: Theorem 4's bound exceeds 2n, so the cap must act
    tiny = fit("aim", make_correlated(300, seed=3), schema=small_schema, epsilon=0.05, rounds=8)
    capped = 0
    for synth in (aim_run, jam_run, tiny):
        report = synth.result.report
        n = report["data"]["n"]
        bounds = marginal_bounds(report, synth.result.synthetic_codes)
        assert all(b.bound_l1 <= 2 * n for b in bounds if b.bound_l1 is not None)
        for b in bounds:
            if b.bound_l1 is not None and b.bound_l1 == 2 * n:
                assert "capped at 2n" in b.note
                capped += synth is tiny
    assert capped > 0
