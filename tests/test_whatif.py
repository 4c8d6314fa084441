"""What-if budgeting: predictions from public information only, at zero privacy cost."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SMALL_SCHEMA, all_keys, wait_until
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core import charts, load_sample
from synth_core.privacy import gaussian_std, rho_from_epsilon_delta
from synth_core.whatif import (ESTIMATE, MEASURED, PublicBasis, build_curve, calibrate,
                               noise_estimator, noise_term, predict_error_curve, refine_order,
                               run_config, standin_tables)
from synth_core.workbench import Workbench

FAST = dict(rounds=3, fit_iters=10, final_fit_iters=20)


class Untouchable:
    """Stands in for the private table: its row count is all it gives."""

    def __init__(self, n: int):
        self._n = n

    def __len__(self):
        return self._n

    def __getattr__(self, name):
        raise AssertionError(f"the what-if read the private table ({name})")

    def __getitem__(self, key):
        raise AssertionError("the what-if read the private table")


def test_the_signature_has_no_place_for_the_private_table(small_schema, small_public):
    params = set(inspect.signature(predict_error_curve).parameters)
    assert not params & {"data", "private", "inputs", "private_table"}
    fields = set(inspect.signature(PublicBasis).parameters)
    assert fields == {"schema", "n", "n_note", "rows", "rows_label", "public_columns",
                      "column_values"}
    with pytest.raises(Exception, match="public columns only"):
        PublicBasis(small_schema, 10, "", public_columns=("sex",),
                    column_values=small_public[["sex", "income"]])


def test_public_rows_stand_in_is_rescaled_to_n(small_schema, small_public):
    basis = PublicBasis(small_schema, 3000, "n public", rows=small_public)
    counts = small_public["edu"].value_counts()
    priv, pub = standin_tables(basis, "public-rows", uses_public_rows=False, seed=0)
    assert len(priv) == 3000 and pub is None
    scaled = priv["edu"].value_counts()
    assert np.allclose(scaled[counts.index] / 3000, counts / len(small_public), atol=400 / 3000 / 100 + 0.003)
    priv, pub = standin_tables(basis, "public-rows", uses_public_rows=True, seed=0)
    assert len(priv) == 3000 and len(pub) == len(small_public)      # bootstrap of n_pub rows
    priv, pub = standin_tables(basis, "public-rows", uses_public_rows=True, seed=0,
                               public_split="halves")
    assert len(priv) == 3000 and len(pub) == len(small_public) // 2


def test_independent_stand_in_uses_only_schema_and_public_columns(small_schema, small_public):
    # no public rows: uniform over the declared domain, public columns from their values
    values = small_public[["sex"]].assign(sex="F")
    basis = PublicBasis(small_schema, 2000, "assumed", public_columns=("sex",),
                        column_values=values)
    assert basis.available_standins() == ["independent", "public-columns-fit"]
    priv, pub = standin_tables(basis, "independent", uses_public_rows=False, seed=1)
    assert len(priv) == 2000 and pub is None
    assert set(priv["sex"]) == {"F"}
    shares = priv["edu"].value_counts(normalize=True)
    assert set(shares.index) == {"low", "mid", "high"} and shares.min() > 0.25
    fit, _ = standin_tables(basis, "public-columns-fit", uses_public_rows=False, seed=1)
    assert set(fit["sex"]) == {"F"} and len(fit) == 2000
    with pytest.raises(Exception, match="needs public rows"):
        standin_tables(basis, "public-rows", uses_public_rows=False, seed=1)
    with pytest.raises(Exception, match="needs public rows"):
        standin_tables(basis, "independent", uses_public_rows=True, seed=1)


@pytest.mark.slow
def test_predicted_error_falls_as_epsilon_grows(small_schema, small_public):
    basis = PublicBasis(small_schema, 3000, "n public", rows=small_public)
    curve = predict_error_curve(basis, "mwem-pgm", [0.02, 20.0], workload="all-2way", seeds=1,
                                standin="independent", **FAST)
    (low_eps, high_eps) = curve.points
    assert high_eps.mean < low_eps.mean
    assert curve.rho_spent_on_private == 0
    assert "No privacy budget was spent" in curve.basis and "3,000" in curve.basis
    check_release(curve.to_release())


def _small_workbench(small_private, small_public) -> Workbench:
    wb = Workbench()
    wb.load_upload("people.csv", small_private.to_csv(index=False).encode())
    wb.load_schema_file("schema.json", json.dumps(SMALL_SCHEMA).encode())
    wb.set_public_table("pub.csv", small_public.to_csv(index=False).encode())
    wb.update_settings(mechanism="jam-pgm", workload="all-2way", seed=0, **FAST)
    return wb


@pytest.mark.slow
def test_workbench_what_if_spends_nothing_and_reaches_the_report(small_private, small_public):
    wb = _small_workbench(small_private, small_public)
    private = wb.data
    wb.source.frame = Untouchable(len(private))          # any read of the private table fails
    assert wb.what_if_standins() == ["public-rows", "independent"]
    worker = wb.start_what_if(["jam-pgm"], [0.1, 10.0], seeds=1)
    assert worker.wait(120) and worker.status == "finished", worker.failure
    (curve,) = wb.whatif.curves()
    assert [p.epsilon for p in curve.points] == [0.1, 10.0]
    assert curve.n == len(private) and "bounded DP" in curve.basis
    assert wb.session_rho_spent() == 0 and not wb.runs
    assert wb.start_what_if(["jam-pgm"], [10.0, 0.1], seeds=1) is None     # cached
    wb.source.frame = private

    wb.start_run()
    assert wb.worker.wait(120)
    run = wb.collect()
    block = run.result.report["what_if"]
    assert block["made"] is True and block["rho_spent"] == 0
    assert "public rows" in block["basis"]
    assert [p["epsilon"] for p in block["curves"][0]["points"]] == [0.1, 10.0]
    assert block["curves"][0]["same_settings_as_run"] is True
    check_release(run.result.report)
    assert not CURATOR_ONLY_KEYS & set(all_keys(block))
    assert wb.session_rho_spent() == pytest.approx(run.rho_spent)
    # other public information marked since: the preview is out of date on the Workload
    # page, and a run made now does not carry it either
    wb.clear_public_rows()
    assert wb.what_if_stale()
    wb.update_settings(mechanism="mwem-pgm")
    wb.start_run()
    assert wb.worker.wait(120)
    later = wb.collect()
    assert later.ok and "what_if" not in later.result.report


@pytest.mark.slow
def test_workload_page_shows_the_what_if_preview():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parent.parent / "app.py"),
                           default_timeout=60)
    at.run()
    at.button(key="sample_titanic").click().run()
    wb = at.session_state["wb"]
    wb.update_settings(mechanism="jam-pgm", workload="all-2way", seed=0, **FAST)
    at.switch_page("app_pages/workload.py").run()
    assert not at.exception
    assert any(s.value == "What-if preview (zero privacy cost)" for s in at.subheader)
    at.multiselect(key="wi_eps").set_value([0.5, 5.0])
    at.button[[b.label for b in at.button].index("Start what-if")].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert wb.whatif.worker.wait(120), "the what-if did not finish in time"
    at.run()
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) >= 1
    assert any("based on" in i.value and "public rows" in i.value for i in at.info)
    assert any("No privacy budget was spent" in s.value for s in at.success)
    assert any("times the default stand-in's prediction" in c.value for c in at.caption)
    assert wb.session_rho_spent() == 0
    # a target error: the smallest epsilon of the grid predicted to reach it
    at.number_input(key="wi_target").set_value(1.99).run()
    assert any("epsilon 0.5 is the smallest on this grid" in m.value for m in at.markdown)


def test_the_target_note_names_the_smallest_epsilon_predicted_to_reach_it():
    """A planner's question (helper-58): which epsilon for an error below Y? The seeds'
    highest error must reach it, and a grid that never does says how close it came."""
    from synth_core.whatif import WhatIfCurve, WhatIfPoint, target_note
    curve = WhatIfCurve("aim", "public-rows", [
        WhatIfPoint(3.0, 0.20, 0.18, 0.22, (0.18, 0.22)),
        WhatIfPoint(1.0, 0.30, 0.29, 0.31, (0.29, 0.31)),
        WhatIfPoint(10.0, 0.12, 0.12, 0.12, (), ESTIMATE)], "basis", 400, 2, {})
    assert target_note(curve, 0.25, "AIM").startswith(
        "AIM: epsilon 3 is the smallest on this grid predicted to reach a workload error of "
        "0.25 (0.22, predicted).")
    assert "epsilon 10 is the smallest" in target_note(curve, 0.2)     # 0.22 > 0.2 at 3
    assert "(0.12, estimated, no stand-in run yet)" in target_note(curve, 0.2)
    missed = target_note(curve, 0.1)
    assert "no epsilon on this grid is predicted to reach 0.1; the lowest is 0.12 at " \
           "epsilon 10" in missed and "can be higher or lower" in missed


# ---------------------------------------------------------------- estimates (no run)


def test_noise_term_is_the_expected_l1_noise_of_a_round():
    cfg = run_config("jam-pgm", 1.0, 0, delta=1e-9)
    sigma = gaussian_std(rho_from_epsilon_delta(1.0, 1e-9) / 30, np.sqrt(2.0))  # bounded DP
    want = np.mean([np.sqrt(2 / np.pi) * sigma * c / 500 for c in (6, 24)])
    assert noise_term(cfg, (6, 24), 500, 30) == pytest.approx(want, rel=1e-12)
    unbounded = run_config("jam-pgm", 1.0, 0, delta=1e-9, neighbours="unbounded")
    assert noise_term(unbounded, (6,), 500, 30) == pytest.approx(
        noise_term(cfg, (6,), 500, 30) / np.sqrt(2.0), rel=1e-12)


def test_calibrate_follows_the_measured_points():
    assert calibrate([], [], 0.2, 0.03) == (0.2, 0.03)                    # the prior
    floor, scale = calibrate([4.0], [0.5], 0.2)                           # through the point
    assert floor == 0.2 and floor + scale * 4.0 == pytest.approx(0.5)
    assert calibrate([4.0], [0.1], 0.2) == (0.1, 0.0)                     # below the prior floor
    floor, scale = calibrate([1.0, 3.0, 9.0], [0.25, 0.35, 0.65], 0.0)    # a line: recovered
    assert (floor, scale) == (pytest.approx(0.2), pytest.approx(0.05))
    assert calibrate([1.0, 9.0], [0.4, 0.3], 0.0) == (pytest.approx(0.35), 0.0)   # never rising


def test_refine_order_measures_the_ends_first():
    assert refine_order([1.0, 0.1, 10.0, 0.3, 3.0]) == [0.1, 10.0, 1.0, 0.3, 3.0]
    assert refine_order([2.0, 1.0]) == [1.0, 2.0]


@pytest.mark.parametrize("mechanism", ["mwem-pgm", "aim"])
def test_the_prior_of_a_mechanism_without_public_data_is_near_its_stand_in_runs(mechanism):
    """Before any stand-in run, the estimate of a mechanism that uses no public
    information is within a factor 2 of what its stand-in run measures (the
    JAM-PGM prior put MWEM+PGM 15 to 20 times below)."""
    sample = load_sample("titanic")
    basis = PublicBasis(sample.schema, n=len(sample.private), n_note="n is public",
                        rows=sample.public)
    settings = dict(workload="all-2way", rounds=6, fit_iters=20, final_fit_iters=100)
    prior = noise_estimator(basis, mechanism, settings).estimates([0.3, 3.0])
    runs = predict_error_curve(basis, mechanism, [0.3, 3.0], seeds=1, **settings)
    for point in runs.points:
        assert 0.5 < prior[point.epsilon] / point.mean < 2.0, (point.epsilon, prior, point.mean)


def test_estimates_fall_with_epsilon_and_recalibrate(small_schema, small_public):
    basis = PublicBasis(small_schema, 3000, "n public", rows=small_public)
    est = noise_estimator(basis, "jam-pgm", dict(workload="all-2way"))
    assert est.floor > 0          # the stand-in public table differs from the stand-in private
    eps = [0.1, 1.0, 10.0]
    prior = est.estimates(eps)
    values = [prior[e] for e in eps]
    assert values == sorted(values, reverse=True) and values[0] <= est.ceiling
    high, low = 0.8 * est.ceiling, 0.2 * est.ceiling     # measured at the ends
    updated = est.estimates(eps, {0.1: high, 10.0: low})
    assert updated[0.1] == pytest.approx(high) and updated[10.0] == pytest.approx(low)
    assert low < updated[1.0] < high
    curve = build_curve(basis, "jam-pgm", "public-rows", [{"epsilon": 0.1, "error": high}],
                        seeds=1, settings={}, estimates=updated)
    assert [p.kind for p in curve.points] == [MEASURED, ESTIMATE, ESTIMATE]
    assert not curve.complete and curve.points[0].mean == high
    assert [r["kind"] for r in curve.to_release()["points"]] == [MEASURED, ESTIMATE, ESTIMATE]
    fig = charts.whatif_figure([curve])
    symbols = {t.name: t.marker.symbol for t in fig.data if t.name}
    assert symbols == {"jam-pgm: measured (stand-in run)": "diamond",
                       "jam-pgm: estimate (no run yet)": "circle-open"}


def test_estimates_at_once_then_runs_replace_them_never_reading_the_private_table(
        small_private, small_public):
    wb = _small_workbench(small_private, small_public)
    wb.update_settings(rounds=2, fit_iters=5, final_fit_iters=5)
    wb.source.frame = Untouchable(len(wb.data))          # any read of the private table fails
    worker = wb.start_what_if(["jam-pgm"], [0.1, 1.0, 10.0], seeds=1)
    (first,) = wb.whatif.curves()                        # estimates for every epsilon at once
    assert [p.epsilon for p in first.points] == [0.1, 1.0, 10.0]
    assert {p.kind for p in first.points} <= {ESTIMATE, MEASURED} and not first.complete
    wait_until(lambda: worker.progress[0] >= 1 or worker.done, 60, "the first stand-in run")
    worker.stop()
    assert worker.wait(60) and worker.failure is None
    (live,) = wb.whatif.curves()
    kinds = {p.epsilon: p.kind for p in live.points}
    assert kinds[0.1] == MEASURED and kinds[1.0] == ESTIMATE     # the smallest epsilon first
    assert wb.session_rho_spent() == 0 and not wb.runs


def test_a_flat_public_rows_curve_says_what_it_cannot_see():
    """A mechanism that uses public rows, on the public-rows stand-in, whose measured
    error barely moves over a decade of epsilon gets the note; a falling curve, a
    mechanism without public rows, estimates alone or a narrow span do not."""
    from synth_core.whatif import WhatIfCurve, WhatIfPoint

    def curve(mechanism, errors, eps=(0.1, 1.0, 10.0), kind=MEASURED, standin="public-rows"):
        pts = [WhatIfPoint(e, m, m, m, (m,) if kind == MEASURED else (), kind)
               for e, m in zip(eps, errors)]
        return WhatIfCurve(mechanism, standin, pts, "basis", 400, 1, {})

    note = curve("jam-pgm", [0.756, 0.743, 0.754]).flat_note
    assert note and "between 0.743 and 0.756 for epsilon 0.1 to 10" in note
    assert "cannot see" in note
    assert curve("jam-pgm", [0.9, 0.5, 0.2]).flat_note is None
    assert curve("mwem-pgm", [0.756, 0.743, 0.754]).flat_note is None
    assert curve("jam-pgm", [0.756, 0.743, 0.754], kind=ESTIMATE).flat_note is None
    assert curve("jam-pgm", [0.75, 0.74], eps=(1.0, 3.0)).flat_note is None
    assert curve("jam-pgm", [0.75, 0.74, 0.75], standin="independent").flat_note is None


def test_the_public_only_baseline_is_not_predicted(small_schema, small_public):
    """It spends nothing, so its error is flat, and that error (the public rows' distance
    from the private table) is what the stand-in cannot see: refused, with the reason,
    by the API and the workbench, not drawn as a measured curve."""
    from synth_core.errors import ConfigError
    from synth_core.whatif import estimate_error_curve
    basis = PublicBasis(small_schema, 3000, "n public", rows=small_public)
    for call in (predict_error_curve, estimate_error_curve):
        with pytest.raises(ConfigError, match="spends no budget"):
            call(basis, "public-only", [0.1, 1.0, 10.0])
    wb = Workbench()
    wb.load_sample("titanic")
    with pytest.raises(ConfigError, match="No what-if for public-only"):
        wb.start_what_if(["jam-pgm", "public-only"], [1.0])
    assert wb.whatif.worker is None


def test_the_basis_says_which_way_bias_moves_each_kind_of_mechanism(small_schema, small_public):
    from synth_core.whatif import describe_basis
    basis = PublicBasis(small_schema, 3000, "n public", rows=small_public)
    uses = describe_basis(basis, "public-rows", "jam-pgm")
    ignores = describe_basis(basis, "public-rows", "mwem-pgm")
    assert "too optimistic" in uses and "too optimistic" not in ignores
    assert "too high or too low" in ignores


def test_a_ranking_across_the_two_kinds_of_mechanism_is_flagged():
    from synth_core.whatif import WhatIfCurve, ranking_note

    def curve(mechanism, standin="public-rows"):
        return WhatIfCurve(mechanism, standin, [], "basis", 400, 1, {})

    assert ranking_note([curve("jam-pgm"), curve("mwem-pgm")])
    assert "turn the ranking round" in ranking_note([curve("aim"), curve("pmw-pub")])
    assert ranking_note([curve("jam-pgm"), curve("pmw-pub")]) is None       # one kind
    assert ranking_note([curve("jam-pgm", "independent"), curve("mwem-pgm", "independent")]) \
        is None


def test_the_stated_accuracy_range_is_the_measured_one():
    """MEASURED_RATIOS is the range of real / predicted error in the committed
    what-if measurements (mean over seeds per data, epsilon; bootstrap stand-in)."""
    from collections import defaultdict
    from synth_core.whatif import ACCURACY_NOTE, MEASURED_RATIOS
    path = Path(__file__).resolve().parents[1] / "benchmarks/results/whatif/runs.jsonl"
    predicted, real = defaultdict(list), defaultdict(list)
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        key = (rec["data"], rec["mechanism"], rec["epsilon"])
        if rec["bench"] == "whatif-run" and rec["split"] == "bootstrap":
            predicted[key].append(rec["predicted"])
        elif rec["bench"] == "whatif-real":
            real[key].append(rec["workload_error"])
    ratios = [np.mean(real[k]) / np.mean(predicted[k]) for k in predicted if real[k]]
    assert len(ratios) >= 6
    assert MEASURED_RATIOS == (round(min(ratios), 2), round(max(ratios), 2))
    assert f"{MEASURED_RATIOS[0]:.2f} to {MEASURED_RATIOS[1]:.2f}" in ACCURACY_NOTE
