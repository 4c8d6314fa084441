"""Mechanisms on small data: budget arithmetic, public picks, error against epsilon."""

from __future__ import annotations

import math

import pytest

from conftest import replay_jam_schedule
from synth_core import Synthesizer
from synth_core.errors import ConfigError
from synth_core.mechanisms.aim import AIM_MEASURE_SHARE
from synth_core.mechanisms.jam_pgm import JAM_MEASURE_SHARE
from synth_core.privacy import rho_from_epsilon_delta

WORKLOAD = "all-2way"


def run(mech, private, public, schema, **kw):
    synth = Synthesizer(mech, workload=kw.pop("workload", WORKLOAD), fit_iters=100,
                        final_fit_iters=300, **kw)
    events = list(synth.run(private, public, schema=schema))
    return synth, events


def test_jam_public_picks_spend_only_selection_and_budget_is_exact(small_private, small_schema):
    # public rows drawn from the same distribution: public picks are attractive
    public = small_private.sample(600, random_state=0)
    T, eps = 6, 0.5
    synth, events = run("jam-pgm", small_private, public, small_schema, epsilon=eps, rounds=T, seed=3)
    ledger = synth.result.ledger
    rho = rho_from_epsilon_delta(eps, 1e-9)
    assert ledger.total == pytest.approx(rho)
    assert "public" in [e.source for e in events]
    replay, _ = replay_jam_schedule(ledger, events, rho, 0.0, T, JAM_MEASURE_SHARE)
    for event, rho_t, used in replay:
        assert event.epsilon == pytest.approx(math.sqrt(8 * (1 - JAM_MEASURE_SHARE) * rho_t))
        assert event.rho_spent == pytest.approx(used, rel=1e-9)
        if event.source == "public":
            assert event.rho_measure == 0


def test_jam_total_spent_equals_rho_when_public_data_is_useless(small_private, small_schema):
    # a public table of one repeated row: its marginals are far off, so the last
    # pick is private and the whole budget is spent
    public = small_private.iloc[[0] * 50].reset_index(drop=True)
    synth, events = run("jam-pgm", small_private, public, small_schema, epsilon=2.0, rounds=4, seed=0)
    assert all(e.source == "private" for e in events)
    assert synth.result.ledger.spent == pytest.approx(synth.result.ledger.total, rel=1e-12)


@pytest.mark.slow
def test_aim_spends_exactly_rho_with_paper_constants(small_private, small_schema):
    eps, T = 1.0, 8
    synth, events = run("aim", small_private, None, small_schema, epsilon=eps, rounds=T, seed=1,
                        neighbours="unbounded")
    ledger = synth.result.ledger
    rho = ledger.total
    assert ledger.spent == pytest.approx(rho, rel=1e-12)
    assert events[0].round == 0 and len(events[0].cliques) == 5  # all 1-way marginals
    sigma0 = math.sqrt(T / (2 * AIM_MEASURE_SHARE * rho))
    init = [c for c in ledger.charges if c.round == 0]
    assert len(init) == 5
    for c in init:
        assert c.rho == pytest.approx(0.5 / sigma0 ** 2)
    eps0 = math.sqrt(8 * (1 - AIM_MEASURE_SHARE) * rho / T)
    selects = [c.rho for c in ledger.charges if c.step == "select"]
    # every selection costs eps^2/8 for eps = eps0 * 2^k (annealing), except the final round
    for s in selects[:-1]:
        k = math.log2(math.sqrt(8 * s) / eps0)
        assert k == pytest.approx(round(k), abs=1e-9)
    assert events[1].sigma == pytest.approx(sigma0)  # unbounded: std = sigma


def test_aim_bounded_noise_is_sqrt2_sigma(small_private, small_schema):
    synth, events = run("aim", small_private, None, small_schema, epsilon=1.0, rounds=6, seed=2,
                        neighbours="bounded")
    rho = synth.result.ledger.total
    sigma0 = math.sqrt(6 / (2 * AIM_MEASURE_SHARE * rho))
    assert events[0].sigma == pytest.approx(math.sqrt(2) * sigma0)
    # same rho per 1-way as unbounded: (sqrt 2)^2 / (2 (sqrt 2 sigma)^2)
    assert synth.result.ledger.charges[0].rho == pytest.approx(0.5 / sigma0 ** 2)
    assert synth.result.ledger.spent == pytest.approx(rho, rel=1e-12)


@pytest.mark.slow
def test_error_falls_as_epsilon_grows(small_private, small_public, small_schema):
    errors = {}
    for eps in (0.1, 10.0):
        synth, _ = run("jam-pgm", small_private, small_public, small_schema, epsilon=eps,
                       rounds=5, seed=0)
        errors[eps] = synth.result.curator_diagnostics().workload_error
    assert errors[10.0] < errors[0.1]


def test_public_only_baseline(small_private, small_public, small_schema):
    synth, events = run("public-only", small_private, small_public, small_schema, epsilon=1.0, seed=0)
    res = synth.result
    assert events == [] and res.ledger.spent == 0
    assert len(res.synthetic) == len(small_private)
    proxy = res.public_proxy_error()
    assert res.curator_diagnostics().workload_error == pytest.approx(proxy, abs=0.02)
    # unbounded DP: n is not public and nothing private is measured, so the release has
    # the public rows' own count (it had one row: the total of a model with no measurement)
    synth, _ = run("public-only", small_private, small_public, small_schema, epsilon=1.0,
                   seed=0, neighbours="unbounded")
    assert len(synth.result.synthetic) == len(small_public) != len(small_private)


@pytest.mark.slow
def test_runs_are_reproducible_from_a_seed(small_private, small_public, small_schema):
    a, ea = run("jam-pgm", small_private, small_public, small_schema, epsilon=1.0, rounds=3, seed=11)
    b, eb = run("jam-pgm", small_private, small_public, small_schema, epsilon=1.0, rounds=3, seed=11)
    assert [e.cliques for e in ea] == [e.cliques for e in eb]
    assert a.result.synthetic.equals(b.result.synthetic)


def test_events_keep_curator_scores_out_of_the_release(small_private, small_public, small_schema):
    synth, events = run("jam-pgm", small_private, small_public, small_schema, epsilon=1.0, rounds=2, seed=0)
    ev = events[0]
    assert ev.curator is not None and len(ev.curator.scores) == ev.n_candidates
    chosen = ev.curator.candidates[ev.curator.chosen]
    assert chosen.clique == ev.clique and chosen.source == ev.source
    assert "curator" not in ev.to_release()
    assert "curator" not in str(synth.result.report)


def test_aim_rejects_a_budget_scale_below_the_number_of_columns(small_private, small_schema):
    with pytest.raises(ConfigError, match="rounds >= 5"):
        run("aim", small_private, None, small_schema, epsilon=1.0, rounds=3)


def test_jam_needs_public_rows_and_bounded_dp(small_private, small_public, small_schema):
    with pytest.raises(ConfigError, match="public rows"):
        run("jam-pgm", small_private, None, small_schema, epsilon=1.0, rounds=2)
    with pytest.raises(ConfigError, match="bounded"):
        run("jam-pgm", small_private, small_public, small_schema, epsilon=1.0, rounds=2,
            neighbours="unbounded")


def test_per_round_fit_iterations_default_to_the_mechanisms_own(small_private, small_schema):
    """AIM refits with its authors' 1,000 iterations per round unless the run sets
    another number; the other Private-PGM mechanisms default to 100. Reports and
    sweep run ids record the number that ran."""
    from synth_core.api import RunConfig
    from synth_core.engine import DEFAULT_FIT_ITERS

    assert RunConfig("aim").round_fit_iters == 1000
    assert RunConfig("jam-pgm").round_fit_iters == DEFAULT_FIT_ITERS == 100
    assert RunConfig("aim", fit_iters=30).round_fit_iters == 30
    assert RunConfig("aim").resolved_json()["fit_iters"] == 1000
    assert RunConfig("aim").to_json()["fit_iters"] is None
    # an explicit 100 and the default are the same run (a stored sweep keeps its ids)
    assert RunConfig("jam-pgm", fit_iters=100).resolved_json() == RunConfig("jam-pgm").resolved_json()
    with pytest.raises(ConfigError):
        RunConfig("aim", fit_iters=0).validate()
    synth = Synthesizer("aim", workload="all-2way", epsilon=1.0, rounds=8, seed=0,
                        final_fit_iters=100)
    list(synth.run(small_private, schema=small_schema))
    assert synth.engine.estimator.max_iters == 1000
    assert synth.result.report["config"]["fit_iters"] == 1000
