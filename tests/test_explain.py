"""synth_core.explain and synth_core.side_by_side on real small runs.

Every expected number is computed here from the run (its events, ledger,
report and tables) by an independent route, never typed in.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from synth_core import Synthesizer, explain, load_sample, side_by_side as sbs
from synth_core.errors import ConfigError
from synth_core.evaluate import marginal_error
from synth_core.mechanisms.jam_pgm import JAM_SCORE_SENSITIVITY
from synth_core.privacy import (Neighbours, ResearchNoise, cdp_epsilon,
                                exponential_probabilities)
from tiny_tables import FIT, PRIVATE, PUBLIC, SCHEMA, SHIFTED_PUBLIC


@pytest.fixture(scope="module")
def titanic():
    return load_sample("titanic")


@pytest.fixture(scope="module")
def jam(titanic):
    """JAM-PGM on the Titanic sample at epsilon 1: public picks, unspent budget."""
    return Synthesizer("jam-pgm", epsilon=1.0, seed=0, rounds=5, **FIT).fit(
        titanic.private, public=titanic.public, schema=titanic.schema)


@pytest.fixture(scope="module")
def mwem():
    """MWEM+PGM, unbounded, on the tiny table: every round private, all budget spent."""
    return Synthesizer("mwem-pgm", epsilon=1.0, seed=1, rounds=3, neighbours="unbounded",
                       **FIT).fit(PRIVATE, schema=SCHEMA)


def selection_rounds(result):
    return [e for e in result.events if e.curator is not None]


# -- selection probabilities --------------------------------------------------------

def test_the_pool_records_the_rounds_sensitivity(jam, mwem):
    assert {e.curator.sensitivity for e in selection_rounds(jam)} == {JAM_SCORE_SENSITIVITY}
    assert {e.curator.sensitivity for e in selection_rounds(mwem)} == {
        Neighbours.UNBOUNDED.marginal_l1_sensitivity}


@pytest.mark.parametrize("run", ["jam", "mwem"])
def test_probabilities_match_the_engines_selection_frequencies(run, request):
    """Draw the round's selection many times with the engine's own sampler
    (ResearchNoise.select, what Engine.rounds calls) and compare frequencies."""
    result = request.getfixturevalue(run)
    ev = max(selection_rounds(result), key=lambda e: len(e.curator.scores))
    probs = explain.selection_probabilities(ev)
    assert probs.sum() == pytest.approx(1.0)
    noise = ResearchNoise(np.random.default_rng(11))
    draws = 20_000
    picks = np.bincount([noise.select(np.asarray(ev.curator.scores), ev.epsilon,
                                      ev.curator.sensitivity) for _ in range(draws)],
                        minlength=probs.size) / draws
    tolerance = 4.5 * np.sqrt(probs * (1 - probs) / draws) + 1e-3
    assert np.all(np.abs(picks - probs) <= tolerance), np.abs(picks - probs).max()
    # a wrong sensitivity gives other probabilities, which the draws reject
    wrong = exponential_probabilities(np.asarray(ev.curator.scores), ev.epsilon,
                                              2 * ev.curator.sensitivity)
    assert np.any(np.abs(picks - wrong) > tolerance)


def test_pool_frame_has_scores_probabilities_and_the_choice(jam):
    ev = selection_rounds(jam)[-1]
    table = explain.pool_frame(ev)
    assert len(table) == len(ev.curator.candidates)
    assert table["probability"].sum() == pytest.approx(1.0)
    assert list(table["score"]) == sorted(ev.curator.scores, reverse=True)
    chosen = table[table["chosen"]]
    assert list(chosen["marginal"]) == [" × ".join(ev.cliques[0])]
    # the highest score has the highest probability
    assert table["probability"].iloc[0] == table["probability"].max()


def test_selection_note_names_the_rounds_figures(jam):
    ev = selection_rounds(jam)[-1]
    probs = explain.selection_probabilities(ev)
    best = int(np.argmax(ev.curator.scores))
    note = explain.selection_note(ev)
    assert f"ε_sel = {ev.epsilon:.3g}" in note
    assert f"{probs[best]:.1%}" in note
    assert f"{2 * ev.curator.sensitivity / ev.epsilon:.3g}" in note
    if ev.curator.chosen != best:
        assert f"{probs[ev.curator.chosen]:.1%}" in note


# -- unspent budget ------------------------------------------------------------------

def test_unspent_note_lists_the_public_rounds_and_the_amount(jam):
    total, spent = jam.ledger.total, jam.ledger.spent
    picks = explain.public_rounds(jam.events)
    assert picks and spent < total
    note = explain.unspent_note(jam.events, total, spent)
    assert f"ρ = {total - spent:.4g} of {total:.4g}" in note
    assert f" {len(picks)} round(s) picked a public marginal" in note
    listed = picks[:explain.UNSPENT_ROUNDS_LISTED]
    for e in listed:
        assert f"round {e.round} (" in note
        assert f"{e.curator.rho_measure_planned:.3g}" in note
    for e in picks[len(listed):]:                     # a long run: counted, not listed
        assert f"round {e.round} (" not in note
    if len(picks) > len(listed):
        assert f"and {len(picks) - len(listed)} more (the round table" in note
    last = [e for e in jam.events if e.epsilon is not None][-1]
    # JAM-PGM's last round gets all that is left; its public pick leaves the measurement share
    assert last in picks
    assert last.curator.rho_measure_planned == pytest.approx(total - spent, rel=1e-9)


def test_unspent_note_of_a_long_run_names_the_first_public_rounds_and_counts_the_rest(titanic):
    run = Synthesizer("jam-pgm", epsilon=1.0, seed=0, rounds=16, **FIT).fit(
        titanic.private, public=titanic.public, schema=titanic.schema)
    picks = explain.public_rounds(run.events)
    assert len(picks) > explain.UNSPENT_ROUNDS_LISTED
    note = explain.unspent_note(run.events, run.ledger.total, run.ledger.spent)
    named = [e for e in picks if f"round {e.round} (" in note]
    assert named == picks[:explain.UNSPENT_ROUNDS_LISTED]
    assert f"and {len(picks) - len(named)} more (the round table lists every one)" in note


def test_planned_measurement_is_what_a_private_round_charges(jam):
    charged = {c.round: c.rho for c in jam.ledger.charges if c.step == "measure"}
    private = [e for e in selection_rounds(jam) if e.source == "private"]
    assert private
    for e in private:
        assert charged[e.round] == pytest.approx(e.curator.rho_measure_planned, rel=1e-12)


def test_no_unspent_note_when_everything_was_spent(mwem):
    assert mwem.ledger.spent == pytest.approx(mwem.ledger.total, rel=1e-9)
    assert explain.unspent_note(mwem.events, mwem.ledger.total, mwem.ledger.spent) is None
    # with budget left and no public pick, the note names the stopping rule
    note = explain.unspent_note(mwem.events, 2 * mwem.ledger.total, mwem.ledger.spent)
    assert "stopped before using all of it" in note


def test_unspent_note_of_a_mechanism_that_reads_no_private_data():
    result = Synthesizer("public-only", epsilon=1.0, seed=0).fit(PRIVATE, public=PUBLIC,
                                                                 schema=SCHEMA)
    assert result.ledger.spent == 0
    note = explain.unspent_note(result.events, result.ledger.total, result.ledger.spent)
    assert f"ρ = {result.ledger.total:.4g} of {result.ledger.total:.4g} (100%)" in note
    assert "measured nothing from the private table" in note


# -- privacy figures -----------------------------------------------------------------

def test_number_notes_carry_this_runs_figures(jam, mwem):
    p = jam.report["privacy"]
    notes = explain.number_notes(jam.report)
    assert f"ρ = {p['rho']:.4g} is the zCDP budget equivalent to ε = 1, δ = 1e-09" in notes["rho"]
    assert f"spent ρ = {p['rho_spent']:.4g}" in notes["rho"]
    assert f"ε = {cdp_epsilon(p['rho_spent'], p['delta']):.3g}" in notes["rho"]
    assert f"{math.e:.3g}" in notes["epsilon"]
    n = jam.report["data"]["n"]
    assert f"n = {n:,}" in notes["delta"] and f"n = {n:,}" in notes["neighbours"]
    assert "replace one record" in notes["neighbours"]
    other = explain.number_notes(mwem.report)
    assert "add or remove one record" in other["neighbours"] and "n =" not in other["delta"]


# -- against the public rows ---------------------------------------------------------

def test_baseline_note_says_when_the_public_rows_alone_do_better(jam):
    err, proxy = jam.curator_diagnostics().workload_error, jam.public_proxy_error()
    beats, text = explain.baseline_note("jam-pgm", 1.0, err, proxy)
    assert beats == (err < proxy)
    assert f"{err:.3f}" in text and f"{proxy:.3f}" in text
    if not beats:
        assert "does not beat the public rows alone" in text and "more epsilon" in text


def test_baseline_note_when_the_run_beats_far_off_public_rows():
    result = Synthesizer("jam-pgm", epsilon=20.0, seed=3, rounds=4, **FIT).fit(
        PRIVATE, public=SHIFTED_PUBLIC, schema=SCHEMA)
    err, proxy = result.curator_diagnostics().workload_error, result.public_proxy_error()
    assert err < proxy
    beats, text = explain.baseline_note("jam-pgm", 20.0, err, proxy)
    assert beats and "beats the public rows alone" in text
    assert explain.baseline_note("jam-pgm", 20.0, err, None) is None
    # a lead of a few percent is one run's, and said to be (a 1% lead read as a win)
    close = explain.baseline_note("jam-pgm", 1.0, 0.305, 0.308)[1]
    assert "(1% lower). This is one run: a gap this small can turn round" in close
    assert "This is one run" not in explain.baseline_note("jam-pgm", 1.0, 0.20, 0.308)[1]


# -- vacuous bounds ------------------------------------------------------------------

def test_bounds_at_the_largest_possible_error_read_no_information():
    """At a tiny epsilon the supported bounds exceed 2n and are capped there."""
    result = Synthesizer("aim", epsilon=0.02, seed=2, rounds=4, **FIT).fit(PRIVATE, schema=SCHEMA)
    bounds = result.report["marginal_bounds"]["bounds"]
    n = result.report["data"]["n"]
    vacuous = [b for b in bounds if b["bound_l1"] is not None and b["bound_l1"] >= 2 * n]
    assert vacuous, "expected a capped bound at this epsilon"
    frame = explain.bounds_display_frame(result.report)
    shown = dict(zip(frame["marginal"], frame["95% bound (L1 counts)"]))
    for b in bounds:
        text = shown[" × ".join(b["clique"])]
        if b in vacuous:
            assert text == explain.NO_INFORMATION
        elif b["bound_l1"] is None:
            assert text == "no bound"
        else:
            assert text.startswith(f"{b['bound_l1']:.4g}")
    assert "bound (L1, counts)" not in frame.columns


def test_the_bounds_summary_counts_them_and_says_why_the_others_are_missing():
    report = {"marginal_bounds": {"bounds": [
        {"bound_l1": 12.0}, {"bound_l1": None, "note": "no bound: supported only by public data"},
        {"bound_l1": None, "note": "no bound: supported only by public data"},
        {"bound_l1": None, "note": "no bound: the last selected marginal has no measurement"}]}}
    assert explain.bounds_summary(report) == (
        "1 of 4 marginals have an informative bound. Without one: 2 × supported only by "
        "public data; 1 × the last selected marginal has no measurement.")
    assert explain.bounds_summary({"marginal_bounds": {"bounds": [{"bound_l1": 1.0}]}}) == (
        "1 of 1 marginals have an informative bound.")
    # a bound at the largest possible error (L1 share 2) pins nothing down: not counted
    vacuous = [{"bound_l1": 800.0, "bound_normalised": 2.0},
               {"bound_l1": 900.0, "bound_normalised": 2.3}]
    report["marginal_bounds"]["bounds"] += vacuous
    assert explain.bounds_summary(report).startswith(
        "1 of 6 marginals have an informative bound. 2 bounds are the largest possible error "
        "(no information). Without one: 2 ×")


# -- side by side --------------------------------------------------------------------

def test_marginal_frame_shares_and_counts_match_the_tables(jam, titanic):
    schema = jam.inputs.schema
    clique = ("sex", "survived")
    frame = sbs.marginal_frame(schema, clique, sbs.run_tables(jam))
    assert set(frame["table"]) == {sbs.REAL, sbs.PUBLIC, sbs.SYNTHETIC}
    for side, share in frame.groupby("table")["share"]:
        assert share.sum() == pytest.approx(1.0)
    # real counts, counted independently from the sample's private file
    codes = schema.encode(titanic.private)
    sizes = schema.sizes
    cells = pd.MultiIndex.from_product([range(sizes["sex"]), range(sizes["survived"])])
    expected = codes.groupby(["sex", "survived"]).size().reindex(cells, fill_value=0).to_numpy()
    real = frame[frame["table"] == sbs.REAL]
    assert list(real["count"]) == list(expected.astype(float))
    labels = schema.column("sex").labels()
    survived = schema.column("survived").labels()
    assert real["cell"].iloc[0] == f"sex={labels[0]}, survived={survived[0]}"


def test_error_scale_is_the_workload_errors_l1_and_half_of_it_is_misplaced(jam):
    clique = jam.workload.cliques[0]
    frame = sbs.marginal_frame(jam.inputs.schema, clique, sbs.run_tables(jam), max_cells=5)
    assert frame.attrs["shown"] == 5 < frame.attrs["cells"]
    scale = sbs.error_scale(frame)
    assert scale.l1 == pytest.approx(jam.curator_diagnostics().per_marginal[tuple(clique)])
    p = jam.inputs.data.private.marginal(clique)
    q = jam.synthetic_table.marginal(clique)
    over = np.clip(q / q.sum() - p / p.sum(), 0, None).sum()   # mass where synthetic has too much
    assert scale.misplaced == pytest.approx(over)
    text = scale.text()
    assert f"An L1 error of {scale.l1:.2f}" in text and f"{scale.misplaced:.1%} of the" in text
    public = sbs.error_scale(frame, sbs.PUBLIC)
    assert public.l1 == pytest.approx(marginal_error(jam.inputs.data.private,
                                                     jam.inputs.data.public, clique))


def test_the_release_view_has_no_real_side(jam):
    tables = sbs.run_tables(jam, real=False)
    assert sbs.REAL not in tables
    frame = sbs.marginal_frame(jam.inputs.schema, ("pclass",), tables)
    sbs.check_no_real(frame)
    assert sbs.REAL not in frame.attrs["full"]
    with pytest.raises(ConfigError, match="real distribution"):
        sbs.check_no_real(sbs.marginal_frame(jam.inputs.schema, ("pclass",), sbs.run_tables(jam)))
    with pytest.raises(ConfigError, match="no real side"):
        sbs.error_scale(frame)
    fig = sbs.figure(frame)
    assert [t.name for t in fig.data] == ["public", "synthetic"]


def test_choices_and_unknown_columns(jam):
    schema = jam.inputs.schema
    choices = sbs.marginal_choices(schema, jam.workload.cliques)
    assert choices[:len(schema.names)] == [(c,) for c in schema.names]
    assert choices[len(schema.names):] == [tuple(c) for c in jam.workload.cliques]
    with pytest.raises(ConfigError, match="No column 'height'"):
        sbs.marginal_frame(schema, ("height",), sbs.run_tables(jam))


def test_the_epsilon_note_follows_the_neighbour_relation():
    """Bounded DP compares a table with one record replaced, unbounded DP one with a
    record added or removed: the note says which, and delta is an additive slack."""
    bounded = explain.setting_notes(1.0, 1e-9, 0.015, "bounded", 1000)
    assert "one person's record were replaced by any other record" in bounded["epsilon"]
    assert "whether or not" not in bounded["epsilon"] and "2.72" in bounded["epsilon"]
    unbounded = explain.setting_notes(1.0, 1e-9, 0.015, "unbounded", None)
    assert "whether or not one person's record is in the table" in unbounded["epsilon"]
    assert "additive slack" in bounded["delta"] and "may fail" not in bounded["delta"]
