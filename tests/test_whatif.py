"""What-if budgeting: predictions from public information only, at zero privacy cost."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import numpy as np
import pytest

from conftest import SMALL_SCHEMA, all_keys
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core.whatif import PublicBasis, predict_error_curve, standin_tables
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
    assert wb.session_rho_spent() == 0
