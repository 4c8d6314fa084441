"""Chart ticks that read cleanly, and the round tables' noise column.

Log axes of epsilon label the 1-2-5 numbers of each decade in short form
(never Plotly's minor digits "9 0.1 2 3 ... 9 1"); the two narrow charts
beside each other (noise std, model size) keep to a few round ticks and
compact numbers; public measurements read "public: no noise", not None.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from synth_core import charts
from synth_core.engine import RoundEvent
from synth_core.workbench import Workbench, events_frame, measurements_frame
from synth_core.workbench.runs import NO_NOISE


def is_one_two_five(text: str) -> bool:
    """``text`` is a short number 1, 2 or 5 times a power of ten."""
    value = float(text)
    mantissa = value / 10 ** math.floor(math.log10(value))
    return text == f"{value:g}" and round(mantissa, 9) in (1, 2, 5)


def test_log_ticks_label_one_two_five_in_short_form():
    vals, text = charts.log_ticks([0.1, 1.0, 10.0])
    assert text == ["0.1", "0.2", "0.5", "1", "2", "5", "10"]
    assert vals == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    vals, text = charts.log_ticks([0.01, 100.0])      # 5 decades: powers of ten only
    assert text == ["0.01", "0.1", "1", "10", "100"]
    assert charts.log_ticks([]) == ([], [])
    vals, text = charts.log_ticks([0.3, 0.7])
    assert text == ["0.1", "0.2", "0.5", "1"]


def compare_results(epsilons) -> pd.DataFrame:
    rows = [{"mechanism": m, "epsilon": e, "seed": s, "status": "finished",
             "workload_error": 0.5 / (1 + e) + 0.01 * s}
            for m in ("aim", "public-only") for e in epsilons for s in range(2)]
    return pd.DataFrame(rows)


@pytest.mark.parametrize("epsilons", [[0.1, 1.0, 10.0], [0.5, 1.0, 2.0], [0.01, 0.1, 100.0]])
def test_compare_figure_has_clean_log_ticks(epsilons):
    axis = charts.compare_figure(compare_results(epsilons)).layout.xaxis
    assert axis.type == "log" and axis.tickvals and len(axis.ticktext) == len(axis.tickvals)
    assert all(is_one_two_five(t) for t in axis.ticktext)
    assert min(axis.tickvals) <= min(epsilons) and max(axis.tickvals) >= max(epsilons)


def test_compare_legend_names_the_full_mechanism():
    results = compare_results([0.1, 1.0])
    labels = {"aim": "AIM", "public-only": "Public-only baseline"}
    fig = charts.compare_figure(results, labels=labels)
    assert [t.name for t in fig.data] == ["AIM", "Public-only baseline"]
    assert fig.data[0].hovertemplate.startswith("AIM: ")
    assert fig.data[1].line.dash == "dot"          # the baseline keeps its line style
    assert [t.name for t in charts.compare_figure(results).data] == ["aim", "public-only"]
    # the public rows themselves: a line of another colour than the public-only baseline's,
    # with its value
    (line,) = charts.compare_figure(results, reference=0.3076, labels=labels).layout.shapes
    assert line.line.color != fig.data[1].line.color and line.y0 == 0.3076
    (note,) = charts.compare_figure(results, reference=0.3076).layout.annotations
    assert note.text.endswith("(the rows themselves): 0.3076")


def event(rnd: int, source: str, sigma: float | None) -> RoundEvent:
    return RoundEvent(mechanism="jam-pgm", round=rnd, rounds_planned=30, cliques=(("a", "b"),),
                      source=source, sigma=sigma, epsilon=None, rho_select=0.0,
                      rho_measure=0.0 if sigma is None else 0.001, rho_spent=0.001 * rnd,
                      rho_total=0.05, model_size_mb=0.0123 * rnd, seconds=0.1,
                      n_candidates=10, note="")


def test_sigma_and_model_size_charts_keep_few_round_ticks():
    events = [event(r, "private" if r % 3 else "public", 12.5 if r % 3 else None)
              for r in range(1, 31)]
    fig = charts.sigma_size_figure(events)
    for axis in (fig.layout.xaxis, fig.layout.xaxis2):
        assert axis.dtick >= 5 and math.ceil(30 / axis.dtick) <= 6
    for axis in (fig.layout.yaxis, fig.layout.yaxis2):
        assert axis.nticks <= 5 and axis.tickformat == ".3~g"
    assert fig.layout.xaxis2.domain[0] - fig.layout.xaxis.domain[1] >= 0.15
    wide = charts.rounds_figure(events, 30).layout.xaxis
    assert math.ceil(30 / wide.dtick) <= 20


def test_round_table_says_public_measurements_have_no_noise():
    table = events_frame([event(1, "private", 12.5), event(2, "public", None)])
    assert list(table["sigma"]) == ["12.5", NO_NOISE]
    wb = Workbench()
    wb.load_sample("titanic")
    wb.update_settings(epsilon=0.1, rounds=4, fit_iters=10, final_fit_iters=20, seed=0)
    wb.start_run()
    assert wb.worker.wait(120)
    run = wb.collect()
    assert run.ok, run.failure
    table = events_frame(run.events)
    public = table[table["source"] == "public"]
    assert len(public) and (public["sigma"] == NO_NOISE).all()
    assert table["sigma"].map(lambda s: s is not None and s != "None").all()
    measured = measurements_frame(run.result.report)
    assert (measured.loc[measured["source"] == "public", "noise std"] == NO_NOISE).all()
    private = measured.loc[measured["source"] == "private", "noise std"]
    assert all(float(s) > 0 for s in private)


def test_compare_bars_run_from_the_smallest_to_the_largest_seed():
    """The same bar convention as the what-if chart: min to max over seeds (the sd of
    two seeds said little and one seed has none)."""
    results = compare_results([0.1, 1.0])          # two seeds, 0.01 apart
    summary = charts.compare_summary(results)
    assert (summary["max"] - summary["min"]).round(9).eq(0.01).all()
    bars = charts.compare_figure(results).data[0].error_y
    assert list(bars.array) == pytest.approx([0.005, 0.005])
    assert list(bars.arrayminus) == pytest.approx([0.005, 0.005])
    one = charts.compare_summary(results[results["seed"] == 0])
    assert one["std"].isna().all() and (one["min"] == one["max"]).all()
    assert "min to max" in charts.compare_figure(results).layout.yaxis.title.text
    # the rounds run: a mechanism that stopped after few rounds explains its error
    assert summary["rounds"].isna().all()                     # not recorded here
    with_rounds = results.assign(rounds=[2, 3, 2, 2, 30, 30, 30, 30])
    assert charts.compare_summary(with_rounds)["rounds"].tolist() == [3, 2, 30, 30]


def _runs(errors: dict) -> pd.DataFrame:
    """Finished comparison runs: {(mechanism, epsilon): [error of seed 0, seed 1, ...]}."""
    return pd.DataFrame([{"mechanism": m, "epsilon": e, "seed": s, "status": "finished",
                          "workload_error": err}
                         for (m, e), errs in errors.items() for s, err in enumerate(errs)])


def test_the_compare_note_names_the_lowest_error_and_whether_the_seeds_settle_it():
    from synth_core.explain import compare_note
    results = _runs({("aim", 0.1): [0.50, 0.52], ("jam-pgm", 0.1): [0.30, 0.34],
                     ("aim", 1.0): [0.20, 0.26], ("jam-pgm", 1.0): [0.24, 0.25],
                     ("public-only", 0.1): [0.40, 0.41], ("public-only", 1.0): [0.40, 0.41]})
    note = compare_note(charts.compare_summary(results), {"jam-pgm": "JAM-PGM"}, reference=0.31)
    assert "at ε = 0.1, JAM-PGM (0.320), ahead of public-only (0.405)" in note
    # AIM's mean is lower at 1 but its seeds' range (0.20-0.26) holds JAM-PGM's (0.24-0.25)
    assert "at ε = 1, aim (0.230), level with JAM-PGM (0.245; their ranges" in note
    assert "At ε = 0.1, no mechanism is below the public rows alone (0.310)" in note
    one_seed = compare_note(charts.compare_summary(results[results["seed"] == 0]))
    assert one_seed.count("the order may change with the seed") == 1    # said once
    assert "at ε = 1, jam-pgm (0.240), then aim (0.200)" not in one_seed
    assert "at ε = 1, aim (0.200), then jam-pgm (0.240)" in one_seed
    both = compare_note(charts.compare_summary(results), reference=0.5)
    assert "At ε = 0.1 and 1, no mechanism" not in both                  # 0.23 < 0.5 at 1
    assert "At ε = 0.1 and 1, no mechanism" in compare_note(
        charts.compare_summary(results), reference=0.2)
    assert "public rows alone" not in one_seed                          # no reference given
    assert compare_note(charts.compare_summary(results[results["status"] == "x"])) is None
