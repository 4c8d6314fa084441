"""The Compare page's and the what-if preview's mechanism pick: the entries of
the Workload page's guided list (Conditional AIM and Conditional vJAM-PGM as
their own entries), only the available ones offered, the others named in a
caption with their reasons, results labelled with the full names, and a job
of a conditional entry run with ``conditional: true``. A compare of a session
whose table has a column left out carries the choice to every job.
"""

from __future__ import annotations

import json

import pytest

from test_app_pages import errors, go, load_titanic, new_app, run_comparison, texts
from synth_core.errors import ConfigError
from synth_core.workbench.guide import guided_choices

#: small runs: a few rounds, short fits
FAST = dict(workload="all-2way", rounds=6, fit_iters=20, final_fit_iters=40)


def titanic_with_public_sex(**settings):
    """The Titanic sample with 'sex' marked a public column, ``settings`` and FAST saved."""
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    wb.update_settings(**settings, **FAST)
    return at, wb


def pick(at, key: str):
    return at.multiselect(key=key)


def left_out_caption(at) -> str:
    found = [c.value for c in at.caption if c.value.startswith("Not available with")]
    assert len(found) <= 2, found
    return found[0] if found else ""


def check_pick(at, key: str, rows: bool, columns: bool) -> None:
    """The pick offers exactly the guide's available entries by full name (the
    what-if: but the ones it does not predict, each named with why), by default
    only available ones, and names every other entry with its reason."""
    from synth_core.whatif import NOT_PREDICTED
    fits = guided_choices(public_rows=rows, public_columns=columns, neighbours="bounded")
    box = pick(at, key)
    skipped = NOT_PREDICTED if key == "wi_mechs" else {}
    assert box.options == [f.choice.title for f in fits
                           if f.available and f.choice.key not in skipped]
    for f in fits:
        if f.available and f.choice.key in skipped:
            assert any(c.value.startswith(f"{f.choice.title} is not offered here: the "
                                          "public-only baseline spends no budget")
                       for c in at.caption)
    assert set(box.value) <= {f.choice.key for f in fits if f.available} and box.value
    named = left_out_caption(at).split(" neighbours: ")[1].split(". ")[0].split("; ")
    assert named == [f"{f.choice.title} ({f.refusal})" for f in fits if not f.available]


def test_compare_and_what_if_pick_from_the_guided_list():
    at = load_titanic(new_app())                       # titanic: public rows
    wb = at.session_state["wb"]
    go(at, "app_pages/compare.py")
    check_pick(at, "cmp_mechs", rows=True, columns=False)
    assert "Conditional AIM" not in pick(at, "cmp_mechs").options
    assert "Conditional AIM (needs public columns)" in left_out_caption(at)
    go(at, "app_pages/workload.py")
    check_pick(at, "wi_mechs", rows=True, columns=False)
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    for page, key in (("app_pages/compare.py", "cmp_mechs"), ("app_pages/workload.py", "wi_mechs")):
        go(at, page)
        check_pick(at, key, rows=True, columns=True)
        assert {"Conditional AIM", "Conditional vJAM-PGM"} <= set(pick(at, key).options)
        assert "AIM (public columns only with conditional generation)" in left_out_caption(at)
    # the saved run's entry is the default where it is available
    wb.update_settings(mechanism="aim", options={"conditional": True})
    go(at, "app_pages/compare.py")
    assert pick(at, "cmp_mechs").value == ["aim+conditional"]
    # an entry left out of the list is refused by the session too, with its reason
    with pytest.raises(ConfigError, match="takes public columns only to generate conditionally"):
        wb.compare_jobs(["aim"], [1.0], 1)
    with pytest.raises(ConfigError, match="refuses public columns"):
        wb.start_what_if(["mwem-pgm"], [1.0], 1)
    assert wb.whatif.worker is None


def test_a_conditional_compare_entry_runs_conditionally_under_its_full_name(tmp_path,
                                                                           monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at, wb = titanic_with_public_sex(mechanism="jam-pgm", options={})
    go(at, "app_pages/compare.py")
    pick(at, "cmp_mechs").set_value(["aim+conditional", "jam-pgm"]).run()
    at.multiselect(key="cmp_eps").set_value([1.0]).run()
    at.number_input(key="cmp_seeds").set_value(1).run()
    cost = next(d.value for d in at.dataframe if "rho each" in d.value.columns)
    assert list(cost["mechanism"]) == ["Conditional AIM", "JAM-PGM", "total"]
    run_comparison(at)
    results = wb.compare_results()[0].set_index("mechanism")
    assert set(results.index) == {"aim+conditional", "jam-pgm"}
    assert set(results["status"]) == {"finished"}
    saved = json.loads(results.loc["aim+conditional", "config"])
    assert saved["run"]["mechanism"] == "aim" and saved["run"]["options"]["conditional"] is True
    assert saved["public_columns_used"] == ["sex"]
    plain = json.loads(results.loc["jam-pgm", "config"])
    assert "conditional" not in plain["run"]["options"]
    shown = [d.value for d in at.dataframe]
    summary = next(t for t in shown if "mean error" in t.columns)
    assert set(summary["Mechanism"]) == {"Conditional AIM", "JAM-PGM"}
    assert "sd over seeds" not in summary.columns          # one seed: no spread to show
    assert not errors(at)


def test_a_conditional_what_if_entry_predicts_with_conditional_generation():
    at, wb = titanic_with_public_sex(mechanism="jam-pgm", options={})
    go(at, "app_pages/workload.py")
    pick(at, "wi_mechs").set_value(["aim+conditional"]).run()
    at.multiselect(key="wi_eps").set_value([1.0]).run()
    at.button[[b.label for b in at.button].index("Start what-if")].click().run()
    assert not errors(at)
    assert wb.whatif.worker is None or wb.whatif.worker.wait(120)
    at.run()
    (curve,) = wb.whatif.curves()
    assert curve.mechanism == "aim+conditional" and not curve.failures
    assert curve.settings["options"] == {"conditional": True}
    assert "What the prediction for Conditional AIM is based on" in texts(at)
    table = next(d.value for d in at.dataframe if "predicted error" in d.value.columns)
    assert set(table["mechanism"]) == {"Conditional AIM"}
    # the release report's block: the registry name, the full name and the options
    (entry,) = wb.whatif.report(wb.loads)["curves"]
    assert (entry["mechanism"], entry["title"]) == ("aim", "Conditional AIM")
    assert entry["settings"]["options"] == {"conditional": True}


def test_compare_keeps_a_column_left_out_on_the_data_page(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    go(at, "app_pages/data.py")
    at.selectbox(key="edit_column").set_value("parch").run()
    at.button(key="drop_column").click().run()
    assert "parch" not in wb.schema.names and not errors(at)
    wb.update_settings(mechanism="mwem-pgm", **FAST)
    go(at, "app_pages/compare.py")
    pick(at, "cmp_mechs").set_value(["mwem-pgm"]).run()
    at.multiselect(key="cmp_eps").set_value([1.0]).run()
    at.number_input(key="cmp_seeds").set_value(1).run()
    run_comparison(at)
    (row,) = wb.compare_results()[0].to_dict("records")
    assert row["status"] == "finished", row["error"]
    saved = json.loads(row["config"])
    assert saved["dataset"]["drop_columns"] == ["parch"]
    marginals = wb.compare_results()[1]
    assert not marginals["marginal"].str.contains("parch").any()


def test_the_run_page_compares_a_conditional_run_with_the_public_rows_by_its_full_name():
    at, wb = titanic_with_public_sex(mechanism="aim", options={"conditional": True}, seed=0)
    go(at, "app_pages/run.py")
    at.button(key="start_run").click().run()
    assert wb.worker.wait(120)
    at.run()
    assert not errors(at)
    notes = [m.value for m in (*at.success, *at.warning) if "public rows alone" in m.value]
    assert len(notes) == 1 and "Conditional AIM" in notes[0], notes
    assert "aim's" not in notes[0] and "mechanism public-only" not in notes[0]


def test_the_what_if_pick_follows_the_saved_mechanism_and_takes_typed_epsilons():
    """Saving another mechanism on the Workload page changes the what-if's pick at once
    (it kept the old one until the page was left); its epsilon grid takes typed values."""
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    go(at, "app_pages/workload.py")
    assert pick(at, "wi_mechs").value == ["jam-pgm"]
    wb.update_settings(mechanism="mwem-pgm")
    at.run()
    assert pick(at, "wi_mechs").value == ["mwem-pgm"]
    at.multiselect(key="wi_eps").set_value([0.1, "0.3", "x"]).run()
    assert any("Not an epsilon, left out: x" in e.value for e in at.error)
    assert [float(v) for v in at.multiselect(key="wi_eps").value if v != "x"] == [0.1, 0.3]
