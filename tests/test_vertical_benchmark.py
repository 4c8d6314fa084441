"""The diagnostics of benchmarks/vertical.py (the public-columns experiment)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from synth_core.workload import Workload

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import vertical  # noqa: E402


def test_errors_split_by_number_of_public_columns():
    cliques = (("a", "b", "c"), ("a", "b", "x"), ("a", "x", "y"), ("x", "y", "z"), ("b", "y", "z"))
    workload = Workload(cliques, (1.0,) * len(cliques))
    errors = dict(zip(cliques, [0.1, 0.2, 0.3, 0.4, 0.6]))
    out = vertical.by_public_count(errors, workload, ["a", "b", "c"])
    assert out == pytest.approx({"0": 0.4, "1": 0.45, "2": 0.2, "3": 0.1})
    assert list(out) == ["0", "1", "2", "3"]


def test_stored_labels_mark_every_non_default_setting():
    assert vertical.stored_label("conditional-aim", 1.0) == "conditional-aim"
    assert vertical.stored_label("conditional-aim", 1.0, vertical.default_fit_iters("aim")) \
        == "conditional-aim"
    assert vertical.stored_label("conditional-aim", 2.0, 100, 240) \
        == "conditional-aim@rho x2@fit_iters 100@rounds 240"


def test_trace_summary_counts_what_a_run_measured():
    def event(rnd, cliques, source="private", sigma=None, size=1.0):
        return {"round": rnd, "cliques": cliques, "source": source, "sigma": sigma,
                "model_size_mb": size}
    events = [event(0, [["a"], ["x"]], "private+public", 10.0),
              event(1, [["x", "y"]], sigma=10.0),
              event(2, [["a", "x", "y"]], sigma=5.0),
              event(3, [["y", "z"]], sigma=5.0, size=3.5),
              event(4, [["z"]], sigma=5.0 * (1 - 1e-15), size=3.5)]
    out = vertical.trace_summary(events, ["a", "b"])
    assert out["rounds"] == 4 and out["private_measurements"] == 4
    assert out["with_public_column"] == 1
    assert out["by_size"] == {"1": 1, "2": 2, "3": 1}
    assert out["sigma_halvings"] == 1 and out["sigma_lowered_at"] == [2]
    assert (out["first_sigma"], out["last_sigma"], out["model_size_mb"]) \
        == (10.0, 5.0 * (1 - 1e-15), 3.5)
    assert out["measured"] == ["x+y", "a+x+y", "y+z", "z"]


def test_curator_records_follow_a_pick_through_its_refit():
    import math

    from synth_core.engine import Candidate, CuratorScores, RoundEvent

    def event(rnd, scores, chosen, sigma=2.0):
        cands = tuple(Candidate(cl, src) for cl, src, _ in scores)
        cur = CuratorScores(cands, tuple(s for _, _, s in scores), chosen) if scores else None
        clique = cands[chosen].clique if scores else ("a",)
        return RoundEvent(mechanism="m", round=rnd, rounds_planned=3, cliques=(clique,),
                          source="private", sigma=sigma, epsilon=0.1, rho_select=0.0,
                          rho_measure=0.0, rho_spent=0.0, rho_total=1.0, model_size_mb=1.0,
                          seconds=0.0, n_candidates=len(scores), note="", curator=cur)

    ab, x = ("a", "b"), ("x",)
    events = [event(0, [], 0),   # the initialisation: nothing selected
              event(1, [(ab, "private", 30.0), (x, "private", 5.0)], 0),
              event(2, [(ab, "private", 10.0), (x, "private", 12.0)], 1),
              event(3, [(ab, "private", 9.0), (x, "private", 0.0)], 0),
              event(4, [(ab, "private", 1.0), (x, "public", 7.0)], 1, sigma=None),  # exact pick
              event(5, [(ab, "private", 8.0), (x, "private", 0.5)], 0)]
    cells = {ab: 4, x: 3}.__getitem__
    root = math.sqrt(2 / math.pi) * 2.0
    pen_ab, pen_x = root * 4, root * 3   # expected noise L1 of a+b and of x
    out = vertical.curator_round_records(events, cells)
    # the initialisation and the exact pick of round 4 are no selection to follow
    assert [r["round"] for r in out] == [1, 2, 3, 5]
    first, second, third, fifth = out
    assert (first["chosen"], first["chosen_rank"], first["top"]) == ("a+b", 1, "a+b")
    assert first["chosen_error"] == pytest.approx(30.0 + pen_ab)
    assert first["chosen_noise_l1"] == pytest.approx(pen_ab)
    assert "previous" not in first
    # round 2: a+b's error after its measurement and refit is 10 + pen of 30 + pen
    assert second["previous"] == "a+b"
    assert second["previous_error_now"] == pytest.approx(10.0 + pen_ab)
    assert second["absorbed"] == pytest.approx(1 - (10.0 + pen_ab) / (30.0 + pen_ab))
    assert (second["chosen"], second["chosen_rank"]) == ("x", 1)
    assert second["chosen_error"] == pytest.approx(12.0 + pen_x)
    assert third["absorbed"] == pytest.approx(12.0 / (12.0 + pen_x))
    # after an exact pick the model moved for other reasons: no previous pick to follow
    assert "previous" not in fifth and fifth["chosen"] == "a+b"
    # AIM's scores carry workload weights: the error is the score over its weight
    weighted = vertical.curator_round_records(events, cells, {ab: 2.0, x: 1.0})
    assert weighted[0]["chosen_score"] == 30.0
    assert weighted[0]["chosen_error"] == pytest.approx(15.0 + pen_ab)
    assert weighted[1]["previous_error_now"] == pytest.approx(5.0 + pen_ab)


def test_conditional_rows_without_a_sampling_field_read_as_iid(tmp_path):
    """Rows stored before the systematic draws are kept apart from the new default."""
    rows = tmp_path / "rows.jsonl"
    base = dict(public_fraction=0.25, epsilon=10.0, seed=0, error_private=0.1)
    rows.write_text("\n".join(json.dumps(dict(base, **extra)) for extra in (
        {"mechanism": "conditional-aim"},
        {"mechanism": "conditional-aim", "sampling": "systematic"},
        {"mechanism": "conditional-vjam-pgm@fit_iters 100"},
        {"mechanism": "aim"})) + "\n")
    labels = sorted(r["mechanism"] for r in vertical.read_rows(rows))
    assert labels == ["aim", "conditional-aim", "conditional-aim@iid sampling",
                      "conditional-vjam-pgm@fit_iters 100@iid sampling"]
    assert vertical.done_keys(rows) >= {(0.25, "conditional-aim", 10.0, 0),
                                        (0.25, "conditional-aim@iid sampling", 10.0, 0)}


@pytest.mark.slow
def test_the_expected_output_is_scored_without_sampling_noise(small_private, small_schema):
    """own_output_errors: a plain run's model marginals, a conditional run's
    average of 16 draws; both closer to the data than one independent draw."""
    from synth_core import Synthesizer

    fast = dict(epsilon=5.0, seed=0, rounds=8, fit_iters=20, final_fit_iters=60,
                workload="all-3way")
    synth = Synthesizer("aim", conditional=True, **fast)
    list(synth.run(small_private, schema=small_schema, public_columns=["sex", "age", "edu"]))
    res = synth.result
    expected = vertical.own_output_errors(res, conditional=True)
    one_draw = vertical.resampled_iid_errors(res)
    assert set(expected) == set(one_draw) == set(res.workload.cliques)
    assert sum(expected.values()) < sum(one_draw.values())
    plain = Synthesizer("aim", **fast)
    list(plain.run(small_private, schema=small_schema))
    model = vertical.own_output_errors(plain.result, conditional=False)
    sampled = plain.result.curator_diagnostics().per_marginal
    assert set(model) == set(sampled)
    assert model != sampled
    import numpy as np

    from synth_core.runtime import estimation

    codes = small_schema.encode(small_private)
    for cl in model:   # the model's own marginal (from mbi) against the data's, counted here
        with estimation():   # mbi's arrays in float64, as the run's own projections
            own = np.asarray(plain.result.model.mrf.project(list(cl)).datavector(flatten=False))
        data = np.zeros(own.shape)
        np.add.at(data, tuple(codes[c].to_numpy() for c in cl), 1)
        assert model[cl] == pytest.approx(np.abs(own / own.sum() - data / data.sum()).sum(),
                                          rel=1e-9), cl


def test_tables_score_on_the_workload_asked_for(tmp_path, capsys):
    """--score all orders the mechanisms on W, --score private (default) on W'."""
    rows = tmp_path / "rows.jsonl"
    base = dict(public_fraction=0.5, epsilon=1.0, seed=0, peak_rss_mb=100.0, seconds=1.0,
                sampling="systematic")
    errors = {"aim": (0.10, 0.10), "vjam-pgm": (0.12, 0.09),
              "conditional-aim": (0.11, 0.08), "conditional-vjam-pgm": (0.105, 0.07)}
    rows.write_text("\n".join(json.dumps(dict(base, mechanism=m, error_private=p, error_all=a))
                              for m, (p, a) in errors.items()) + "\n")
    lowest = {}
    for score in ("private", "all"):
        vertical.markdown([rows], score)
        line = capsys.readouterr().out.splitlines()[-1]
        lowest[score] = line.rstrip(" |").rsplit("| ", 1)[-1]
        vertical.summary([rows], score)
        out = json.loads(capsys.readouterr().out.splitlines()[-1])
        assert out["scored_on"] == score
        assert out["vjam_beats_aim"] is (score == "all")
    assert lowest == {"private": "AIM", "all": "Cond. vJAM-PGM"}


def test_sampling_benchmark_rebuilds_a_traced_structure(tmp_path):
    """benchmarks/conditional_sampling.py: the model it times has the junction
    tree of the traced run (every measured clique inside a tree clique)."""
    import numpy as np

    import conditional_sampling
    from synth_core.conditional import sample_private_given_public

    trace = tmp_path / "0.25_conditional-aim_10_0.jsonl"
    trace.write_text("\n".join(json.dumps({"round": r, "cliques": c}) for r, c in enumerate(
        [[["a"], ["b"], ["c"], ["d"]], [["a", "b"]], [["b", "c", "d"]], [["a", "b"]]])))
    cliques = conditional_sampling.traced_cliques(trace)
    assert cliques == [("a",), ("b",), ("c",), ("d",), ("a", "b"), ("b", "c", "d")]
    sizes = {"a": 2, "b": 3, "c": 4, "d": 2}
    model, tree = conditional_sampling.model_with_structure(sizes, cliques, 100, seed=0)
    assert all(any(set(cl) <= set(t) for t in tree) for cl in cliques)
    assert model.probability(("a", "c")).sum() == pytest.approx(1.0)
    drawn = sample_private_given_public(model, {"a": np.zeros(20, dtype=np.int64)},
                                        np.random.default_rng(0))
    assert set(drawn) == {"b", "c", "d"} and all(len(v) == 20 for v in drawn.values())


def test_missing_runs_lists_the_seeds_left_per_cell():
    def row(frac, mech, eps, seed, cpu=10.0, **extra):
        return dict(public_fraction=frac, mechanism=mech, epsilon=eps, seed=seed,
                    cpu_seconds=cpu, **extra)
    rows = [row(0.25, "aim", 1.0, 0, 10.0), row(0.25, "aim", 1.0, 1, 30.0),
            row(0.25, "conditional-aim@iid sampling", 1.0, 1),   # not the default: still missing
            row(0.25, "vjam-pgm", 1.0, 2, failed=True),           # failed: still missing
            row(0.5, "aim", 1.0, 0)]
    out = vertical.missing_runs(rows, [0.25], ["aim", "conditional-aim", "vjam-pgm"], [1.0],
                                [0, 1, 2])
    assert [(e["mechanism"], e["seeds"]) for e in out] == \
        [("aim", [2]), ("conditional-aim", [0, 1, 2]), ("vjam-pgm", [0, 1, 2])]
    assert out[0]["cpu_seconds_per_run"] == 20.0 and out[1]["cpu_seconds_per_run"] is None
    assert out[0]["command"].endswith("--fractions 0.25 --mechanisms aim --epsilons 1 --seeds 2")


def test_figure_ticks_only_the_epsilons_run_and_shows_the_seed_bars():
    pytest.importorskip("altair")
    runs = ROOT / "benchmarks" / "results" / "vertical_adult" / "runs.jsonl"
    rows = vertical.figure_rows([runs])
    assert {r["dataset"] for r in rows} == {f"adult, {p}% columns public" for p in (25, 50, 75)}
    spec = vertical.figure_chart(rows).to_dict()
    lines, bars = spec["spec"]["layer"]
    assert lines["encoding"]["x"]["axis"]["values"] == [0.1, 1.0, 10.0]
    assert (bars["encoding"]["y"]["field"], bars["encoding"]["y2"]["field"]) == ("min", "max")
    assert spec["config"]["rule"]["strokeWidth"] >= 2
