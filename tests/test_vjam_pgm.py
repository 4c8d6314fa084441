"""vJAM-PGM (public columns, vertical split) on small data: budget arithmetic,
free exact public measurements, errors on bad splits, CLI, reproducibility."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import replay_jam_schedule
from synth_core import Synthesizer
from synth_core import privacy as privacy_mod
from synth_core.engine import PUBLIC, PRIVATE, Candidate, Engine, RoundPlan
from synth_core.errors import ConfigError, SynthError
from synth_core.mechanisms import make_mechanism
from synth_core.mechanisms.jam_pgm import JAM_MEASURE_SHARE
from synth_core.mechanisms.vjam_pgm import VJAM_SCORE_SENSITIVITY, VJAMPGM
from synth_core.privacy import rho_from_epsilon_delta

ROOT = Path(__file__).resolve().parent.parent
T = 4
ALPHA = JAM_MEASURE_SHARE
WORKLOAD = "all-2way"
COLUMNS = ("sex", "age", "edu", "income", "hours")


def run_vjam(private, schema, public_columns, *, epsilon, seed=0, rounds=T):
    """Run vJAM-PGM, recording the exponential mechanism's (eps, sensitivity)."""
    calls = []
    original = privacy_mod.exponential_mechanism

    def recording(scores, eps, sensitivity, rng):
        calls.append((eps, sensitivity, len(scores)))
        return original(scores, eps, sensitivity, rng)

    synth = Synthesizer("vjam-pgm", epsilon=epsilon, rounds=rounds, seed=seed, workload=WORKLOAD,
                        fit_iters=20, final_fit_iters=50)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(privacy_mod, "exponential_mechanism", recording)
        events = list(synth.run(private, schema=schema, public_columns=public_columns))
    return synth, events, calls


@pytest.fixture(scope="module")
def three_public(small_private, small_schema):
    """P = {sex, age, edu}, Q = {income, hours}, epsilon 10."""
    return run_vjam(small_private, small_schema, ["sex", "age", "edu"], epsilon=10.0)


@pytest.fixture(scope="module")
def three_public_low_eps(small_private, small_schema):
    return run_vjam(small_private, small_schema, ["sex", "age", "edu"], epsilon=0.01)


@pytest.fixture(scope="module")
def four_public(small_private, small_schema):
    """P = {sex, age, edu, income}: most candidates are public."""
    return run_vjam(small_private, small_schema, ["sex", "age", "edu", "income"], epsilon=1.0,
                    seed=1)


@pytest.fixture(scope="module")
def one_public(small_private, small_schema):
    """P = {sex}: after the initialisation every candidate is private."""
    return run_vjam(small_private, small_schema, ["sex"], epsilon=1.0, seed=2)


def replay_charges(synth, events, public_columns, epsilon):
    """Check every charge against the formulas; return the unspent measure share."""
    ledger = synth.result.ledger
    rho = rho_from_epsilon_delta(epsilon, 1e-9)
    assert ledger.total == rho
    P = set(public_columns)
    private_oneways = [c for c in COLUMNS if c not in P]
    k = len(private_oneways)
    # round 0: the private 1-ways share rho / (T + 1); the public 1-ways are free
    init = [c for c in ledger.charges if c.round == 0]
    assert sorted(c.detail for c in init) == sorted(private_oneways)
    assert all(c.step == "measure" for c in init)
    for c in init:
        assert c.rho == pytest.approx(rho / (T + 1) / k, rel=1e-12)
    assert events[0].round == 0 and events[0].rho_select == 0
    assert events[0].sigma == pytest.approx(math.sqrt(k * (T + 1) / rho), rel=1e-12)
    used = math.fsum(c.rho for c in init)
    assert used == pytest.approx(rho / (T + 1), rel=1e-12)
    # rounds 1..T: JAM-PGM's schedule on what is left
    replay, unspent = replay_jam_schedule(ledger, events[1:], rho, used, T, ALPHA)
    for event, rho_t, used in replay:
        assert event.epsilon == pytest.approx(math.sqrt(8 * (1 - ALPHA) * rho_t), rel=1e-9)
        if event.source == PUBLIC:
            assert set(event.clique) <= P and event.rho_measure == 0
        else:
            assert not set(event.clique) <= P
        assert event.rho_spent == pytest.approx(used, rel=1e-9)
    return unspent


@pytest.mark.parametrize("fixture, public_columns, epsilon", [
    ("three_public", ("sex", "age", "edu"), 10.0),
    pytest.param("three_public_low_eps", ("sex", "age", "edu"), 0.01, marks=pytest.mark.slow),
    ("four_public", ("sex", "age", "edu", "income"), 1.0),
    ("one_public", ("sex",), 1.0),
])
def test_every_charge_matches_the_formulas(request, fixture, public_columns, epsilon):
    synth, events, calls = request.getfixturevalue(fixture)
    replay_charges(synth, events, public_columns, epsilon)
    # one exponential mechanism per round, at eps_t, with sensitivity 2
    assert [c[0] for c in calls] == [pytest.approx(e.epsilon) for e in events[1:]]
    assert all(c[1] == VJAM_SCORE_SENSITIVITY == 2.0 for c in calls)


def test_ledger_total_equals_rho_when_every_pick_is_private(one_public):
    # with P = {sex} the only public clique of W+ is sex itself, measured at
    # round 0: every later candidate is private, so the budget is spent exactly
    synth, events, _ = one_public
    assert all(e.source == PRIVATE for e in events[1:])
    assert synth.result.ledger.spent == pytest.approx(synth.result.ledger.total, rel=1e-12)


def test_public_picks_spend_only_selection_budget(four_public):
    synth, events, _ = four_public
    public = [e for e in events[1:] if e.source == PUBLIC]
    assert public, "expected public picks when 4 of 5 columns are public"
    ledger = synth.result.ledger
    for e in public:
        steps = [c.step for c in ledger.charges if c.round == e.round]
        assert steps == ["select"]
        assert e.rho_round == e.rho_select > 0


def test_initial_public_oneways_are_exact_and_free(three_public):
    synth, events, _ = three_public
    private = synth.result.inputs.data.private
    init = [m for m in synth.result.measurements if m.round == 0]
    assert sorted(m.clique for m in init) == sorted((c,) for c in COLUMNS)
    for m in init:
        if m.clique[0] in ("sex", "age", "edu"):
            assert m.source == PUBLIC and m.noise_std == 0.0
            np.testing.assert_array_equal(m.values, private.marginal(m.clique))
        else:
            assert m.source == PRIVATE and m.noise_std > 0
            assert not np.array_equal(m.values, private.marginal(m.clique))
    charged = {c.detail for c in synth.result.ledger.charges if c.round == 0}
    assert charged == {"income", "hours"}
    assert events[0].source == "private+public"


@pytest.mark.parametrize("fixture, public_columns", [
    ("three_public", {"sex", "age", "edu"}),
    pytest.param("three_public_low_eps", {"sex", "age", "edu"}, marks=pytest.mark.slow),
    ("four_public", {"sex", "age", "edu", "income"}),
    ("one_public", {"sex"}),
])
def test_cliques_inside_the_public_columns_are_never_noisy(request, fixture, public_columns):
    synth, events, _ = request.getfixturevalue(fixture)
    private = synth.result.inputs.data.private
    for m in synth.result.measurements:
        inside = set(m.clique) <= public_columns
        assert (m.source == PUBLIC) == inside
        if inside:
            assert m.noise_std == 0.0
            np.testing.assert_array_equal(m.values, private.marginal(m.clique))
    # the candidate pools: each clique once, public exactly when inside P
    for e in events[1:]:
        cands = e.curator.candidates
        assert len({c.clique for c in cands}) == len(cands)
        assert all((c.source == PUBLIC) == (set(c.clique) <= public_columns) for c in cands)
    # released measurements: public ones carry no noise
    for item in synth.result.report["measurements"]:
        if set(item["clique"]) <= public_columns:
            assert item["source"] == PUBLIC and item["noise_std"] == 0.0


def test_public_answer_refuses_a_private_clique(three_public):
    synth, _, _ = three_public
    mech = synth.engine.mechanism
    with pytest.raises(ConfigError, match="private column"):
        mech.public_answer(synth.engine.state, ("sex", "income"))


def test_scores_follow_the_formulas(three_public):
    synth, _, _ = three_public
    mech, state = synth.engine.mechanism, synth.engine.state
    private = state.data.private
    plan = RoundPlan(epsilon=1.0, sensitivity=2.0, noise_std=3.0, rho_measure=0.1)
    pool = [Candidate(("age", "edu"), PUBLIC), Candidate(("sex",), PUBLIC),
            Candidate(("edu", "income"), PRIVATE), Candidate(("hours",), PRIVATE)]
    scores = mech.scores(state, plan, pool)
    for cand, score in zip(pool, scores):
        err = np.abs(private.marginal(cand.clique) - state.model.counts(cand.clique)).sum()
        if cand.source == PUBLIC:
            assert score == pytest.approx(err)
        else:
            assert score == pytest.approx(err - math.sqrt(2 / math.pi) * 3.0
                                          * private.cells(cand.clique))


def test_measured_public_cliques_leave_the_pool(three_public):
    synth, _, _ = three_public
    mech, state = synth.engine.mechanism, synth.engine.state
    measured_public = [set(m.clique) for m in state.measurements if m.source == PUBLIC]
    for cand in mech._pool(state):
        if cand.source == PUBLIC:
            assert not any(set(cand.clique) <= m for m in measured_public)


def test_release_records_the_split(three_public):
    synth, _, _ = three_public
    report = synth.result.report
    assert report["public_information"]["columns"] == ["sex", "age", "edu"]
    assert report["public_information"]["private_columns"] == ["income", "hours"]
    statement = report["privacy"]["statement"]
    assert "Public columns (sex, age, edu)" in statement
    assert "protects the private columns (income, hours) only" in statement
    assert "private-column values of one record" in statement


def test_reproducible_from_a_seed(small_private, small_schema, three_public):
    synth, events, _ = three_public
    again, events2, _ = run_vjam(small_private, small_schema, ["sex", "age", "edu"], epsilon=10.0)
    assert [(e.cliques, e.source) for e in events] == [(e.cliques, e.source) for e in events2]
    assert synth.result.synthetic.equals(again.result.synthetic)
    assert synth.result.ledger.to_json() == again.result.ledger.to_json()


@pytest.mark.slow
def test_error_falls_as_epsilon_grows(three_public, three_public_low_eps):
    high = three_public[0].result.curator_diagnostics().workload_error
    low = three_public_low_eps[0].result.curator_diagnostics().workload_error
    assert high < low


# -- bad splits -------------------------------------------------------------------


def engine_for(mech, small_private, small_schema, neighbours="bounded"):
    from synth_core.api import prepare_inputs
    from synth_core.privacy import Neighbours
    from synth_core.workload import parse_workload

    inputs = prepare_inputs(small_private, schema=small_schema)
    return Engine(mech, inputs.data, parse_workload(WORKLOAD, inputs.schema.names), rho=0.1,
                  neighbours=Neighbours.parse(neighbours), seed=0)


def test_without_public_columns_every_clique_is_private(small_private, small_schema):
    # behaves like JAM-PGM without public data: private measurements only, and says so
    from synth_core.api import RunWarning

    synth = Synthesizer("vjam-pgm", epsilon=1.0, rounds=3, workload=WORKLOAD, fit_iters=20,
                        final_fit_iters=40, seed=0)
    with pytest.warns(RunWarning, match="without public columns"):
        events = list(synth.run(small_private, schema=small_schema))
    result = synth.result
    assert all(m.source == PRIVATE for m in result.measurements)
    assert all(ev.source == PRIVATE for ev in events)
    assert result.ledger.spent == pytest.approx(rho_from_epsilon_delta(1.0, 1e-9), rel=1e-9)
    assert result.report["warnings"]


def test_unknown_public_column_is_named(small_private, small_schema):
    mech = make_mechanism("vjam-pgm", public_columns=["sex", "nope"])
    with pytest.raises(ConfigError, match="Unknown public column: 'nope'"):
        list(engine_for(mech, small_private, small_schema).rounds())
    # through the API the split is checked against the schema first
    synth = Synthesizer("vjam-pgm", epsilon=1.0, rounds=2, workload=WORKLOAD)
    with pytest.raises(SynthError, match="nope") as info:
        list(synth.run(small_private, schema=small_schema, public_columns=["sex", "nope"]))
    assert info.value.column == "nope"


@pytest.mark.slow
def test_all_columns_public_spends_nothing_and_warns(small_private, small_schema):
    from synth_core.api import RunWarning

    synth = Synthesizer("vjam-pgm", epsilon=1.0, rounds=2, workload=WORKLOAD, fit_iters=20,
                        final_fit_iters=40, seed=0)
    with pytest.warns(RunWarning, match="Every column is marked public"):
        events = list(synth.run(small_private, schema=small_schema, public_columns=list(COLUMNS)))
    result = synth.result
    assert result.ledger.spent == 0 and not result.ledger.charges
    assert [ev.round for ev in events] == [0]            # the exact measurements, no selection
    assert {m.clique for m in result.measurements} == set(result.workload.cliques)
    assert all(m.source == PUBLIC and m.noise_std == 0 for m in result.measurements)
    assert "Every column is marked public" in result.report["warnings"][0]


def test_unbounded_dp_is_refused(small_private, small_schema):
    mech = make_mechanism("vjam-pgm", public_columns=["sex"])
    with pytest.raises(ConfigError, match="bounded DP"):
        list(engine_for(mech, small_private, small_schema, "unbounded").rounds())


def test_public_columns_reach_only_mechanisms_that_take_them(small_private, small_schema):
    # AIM (without --conditional) and MWEM+PGM take the option and refuse public columns
    for name, message in (("aim", "AIM treats every column as private"),
                          ("mwem-pgm", "mwem-pgm does not use public columns")):
        synth = Synthesizer(name, epsilon=1.0, rounds=8, workload=WORKLOAD)
        with pytest.raises(ConfigError, match=message):
            list(synth.run(small_private, schema=small_schema, public_columns=["sex"]))
    # the public-only baseline has no such option: refused instead of silently ignored
    synth = Synthesizer("public-only", epsilon=1.0, workload=WORKLOAD)
    with pytest.raises(ConfigError, match="public-only does not use public columns"):
        list(synth.run(small_private, small_private, schema=small_schema, public_columns=["sex"]))
    # given as an option and to run(): they must agree
    synth = Synthesizer("vjam-pgm", epsilon=1.0, rounds=2, workload=WORKLOAD,
                        public_columns=["sex"])
    with pytest.raises(ConfigError, match="given twice and differ"):
        list(synth.run(small_private, schema=small_schema, public_columns=["age"]))


def test_vjam_is_registered():
    from synth_core.mechanisms import MECHANISMS
    assert MECHANISMS["vjam-pgm"] is VJAMPGM
    assert not VJAMPGM.capabilities.public_rows


# -- command line -----------------------------------------------------------------


def synth_cli(*args):
    return subprocess.run([sys.executable, "-m", "synth_core.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=600)


@pytest.mark.slow
def test_cli_public_columns_on_titanic(tmp_path):
    out, report = tmp_path / "s.csv", tmp_path / "r.json"
    res = synth_cli("run", "--sample", "titanic", "--mechanism", "vjam-pgm",
                    "--public-columns", "pclass,sex", "--epsilon", "1", "--rounds", "3",
                    "--workload", "all-2way", "--seed", "0", "--fit-iters", "20",
                    "--final-fit-iters", "50", "--out", str(out), "--report", str(report))
    assert res.returncode == 0, res.stderr
    lines = [l for l in res.stdout.splitlines() if l.startswith("round")]
    assert len(lines) == 4  # initialisation and 3 rounds
    rep = json.loads(report.read_text())
    assert rep["public_information"]["columns"] == ["pclass", "sex"]
    assert rep["public_information"]["rows"] is None  # the sample's public rows are unused
    assert "protects the private columns" in rep["privacy"]["statement"]
    assert rep["config"]["mechanism"] == "vjam-pgm"
    for m in rep["measurements"]:
        if set(m["clique"]) <= {"pclass", "sex"}:
            assert m["source"] == "public" and m["noise_std"] == 0.0
    assert rep["privacy"]["rho_spent"] <= rep["privacy"]["rho"] * (1 + 1e-12)


@pytest.mark.slow
def test_cli_unknown_public_column_is_named(tmp_path):
    res = synth_cli("run", "--sample", "titanic", "--mechanism", "vjam-pgm",
                    "--public-columns", "pclass,nope", "--rounds", "2",
                    "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json"))
    assert res.returncode == 2
    assert "'nope'" in res.stderr and "Traceback" not in res.stderr
    res = synth_cli("run", "--sample", "titanic", "--mechanism", "vjam-pgm",
                    "--public-columns", "pclass,,sex", "--rounds", "2")
    assert res.returncode == 2 and "--public-columns" in res.stderr

