"""Streamlit AppTest of every page of the workbench (no browser, no mocks).

AppTest cannot drive fragments' timers, so the threaded run is awaited here
with the worker's bounded wait, then the page is run again.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from conftest import all_keys, wait_until
from synth_core.errors import ConfigError
from synth_core.report import CURATOR_ONLY_KEYS, check_release

APP = str(Path(__file__).resolve().parent.parent / "app.py")
PAGES = ["app_pages/start.py", "app_pages/data.py", "app_pages/public.py",
         "app_pages/workload.py", "app_pages/run.py", "app_pages/release.py"]


def new_app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception
    return at


def go(at: AppTest, page: str) -> AppTest:
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def texts(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.info] + [e.value for e in at.success] + [e.value for e in at.warning]
    return "\n".join(str(p) for p in parts)


def sidebar_text(at: AppTest) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def load_titanic(at: AppTest) -> AppTest:
    at.button(key="sample_titanic").click().run()
    assert not at.exception and not errors(at)
    return at


def wait_for_run(at: AppTest, timeout: float = 120) -> None:
    wb = at.session_state["wb"]
    assert wb.worker is None or wb.worker.wait(timeout), "the run did not finish in time"


def run_comparison(at: AppTest, timeout: float = 180) -> None:
    """Click "Start comparison" on the Compare page and wait for the grid."""
    wb = at.session_state["wb"]
    at.button[[b.label for b in at.button].index("Start comparison")].click().run()
    assert not at.exception and not errors(at)
    assert wb.compare.worker.wait(timeout), "the comparison did not finish in time"
    at.run()
    assert not at.exception and not errors(at)


def flagged_csv(n=300, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "sex": rng.choice(["F", "M"], n), "age": rng.integers(18, 80, n),
        "edu": rng.choice(["low", "mid", "high"], n),
        "is_public": np.where(rng.random(n) < 0.3, "yes", "no")}).to_csv(index=False).encode()


def test_every_page_renders_without_data():
    at = new_app()
    assert at.title[0].value == "Differentially private synthetic data"
    assert "none loaded" in sidebar_text(at)
    for page in PAGES[1:]:
        go(at, page)
        assert not errors(at)
    assert "No finished run yet" in texts(at)


def test_every_page_renders_beside_a_damaged_budget_account():
    """A hand-edited account (a total that is not a number) made every page raise in
    the sidebar; now each page says what is wrong and no run can start."""
    from synth_core.workbench.budget import budget_path
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    account = wb.set_dataset_budget(3.0, 1e-9)
    state = json.loads(account.path.read_text())
    state["total_rho"] = "lots"
    account.path.write_text(json.dumps(state))
    assert account.path == budget_path(wb.source.fingerprint())
    for page in PAGES[1:]:
        go(at, page)
        assert any("damaged" in e for e in errors(at)), page
    with pytest.raises(ConfigError, match="damaged"):
        wb.start_run()


def test_run_page_says_before_start_that_the_run_would_pass_the_total():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    wb.set_dataset_budget(0.8, wb.settings.delta)
    wb.update_settings(epsilon=1.0)
    go(at, "app_pages/run.py")
    assert any("Refused: this run needs" in w.value for w in at.warning)
    assert at.button(key="start_run").disabled
    wb.update_settings(epsilon=0.5)
    go(at, "app_pages/run.py")
    assert not any("Refused" in w.value for w in at.warning)
    assert not at.button(key="start_run").disabled


def test_start_page_loads_titanic_in_one_click():
    at = new_app()
    assert {b.key for b in at.button} >= {"sample_titanic", "sample_adult-pub025"}
    samples = [b.key for b in at.button if b.key.startswith("sample_")]
    assert samples[0] == "sample_titanic"              # the quick one first, and primary
    assert at.button(key="sample_titanic").proto.type == "primary"
    load_titanic(at)
    assert "Loaded sample 'titanic'" in texts(at)
    side = sidebar_text(at)
    assert "titanic:private" in side and "1,008 rows" in side and "public.csv" in side
    assert "declared" in side
    for page in PAGES:
        go(at, page)
        assert not errors(at), page


def test_the_column_editor_and_budget_label_follow_the_table_loaded():
    """After another table was loaded, the column box still showed the old table's
    column while the form edited another, a column's form kept values typed for the
    previous table, and the budget form's label named the previous table."""
    at = go(new_app(), "app_pages/data.py")
    at.button(key="load_sample").click().run()
    wb = at.session_state["wb"]
    at.selectbox(key="edit_column").set_value("sex").run()
    at.text_input(key="cats_sex").set_value("typed, for titanic").run()
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(), "text/csv"))
    at.run()
    assert wb.data_name == "people.csv"
    assert at.selectbox(key="edit_column").value == wb.schema.names[0]
    assert at.text_input(key="budget_label").value == "people.csv"
    at.selectbox(key="edit_column").set_value("sex").run()
    spec = wb.schema.column("sex")
    assert at.text_input(key="cats_sex").value == ", ".join(map(str, spec.categories))


def test_compare_picks_are_kept_when_the_page_is_left_and_revisited():
    """Back on Compare, the pickers showed the defaults above the results of the
    picks made before (Streamlit drops a widget's value while its page is not shown)."""
    at = go(new_app(), "app_pages/data.py")
    at.button(key="load_sample").click().run()
    go(at, "app_pages/compare.py")
    at.multiselect(key="cmp_mechs").set_value(["aim", "public-only"])
    at.multiselect(key="cmp_eps").set_value([0.3, 1.0])
    at.number_input(key="cmp_seeds").set_value(1).run()
    go(at, "app_pages/data.py")
    go(at, "app_pages/compare.py")
    assert at.multiselect(key="cmp_mechs").value == ["aim", "public-only"]
    assert at.multiselect(key="cmp_eps").value == [0.3, 1.0]
    assert at.number_input(key="cmp_seeds").value == 1
    # another table: the mechanisms go back to the defaults the page proposes for it
    go(at, "app_pages/data.py")
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(), "text/csv"))
    at.run()
    go(at, "app_pages/compare.py")
    assert at.multiselect(key="cmp_mechs").value != ["aim", "public-only"]


def test_data_page_upload_preview_and_schema_errors():
    at = go(new_app(), "app_pages/data.py")
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(), "text/csv"))
    at.run()
    assert not at.exception and not errors(at)
    wb = at.session_state["wb"]
    assert wb.data_name == "people.csv" and len(wb.data) == 300
    assert "Loaded 'people.csv'" in texts(at)
    assert any("domain not privacy-protected" in w.value for w in at.warning)
    assert len(at.dataframe) >= 2                    # preview and schema table

    # a bad upload: message and hint, the loaded table stays
    at.file_uploader(key="upload_data").set_value(("bad.csv", b"a,b\n1,2,3,4\n", "text/csv"))
    at.run()
    assert not at.exception
    assert errors(at) and "bad.csv" in errors(at)[0]
    assert wb.data_name == "people.csv"
    # the same file uploaded again after another table was loaded is loaded again (a
    # name-and-size check took it for the earlier upload and silently did nothing)
    at.button(key="load_sample").click().run()
    assert wb.data_name != "people.csv"
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(), "text/csv"))
    at.run()
    assert wb.data_name == "people.csv" and "Loaded 'people.csv'" in texts(at)
    at.run()                                    # a rerun keeps the uploader's file: no reload
    assert "Loaded 'people.csv'" not in texts(at)

    # schema editor: an invalid numeric column is reported next to the column
    at.selectbox(key="edit_column").set_value("age").run()
    at.radio(key="kind_age").set_value("numeric")
    at.text_input(key="lower_age").set_value("60")
    at.text_input(key="upper_age").set_value("20")
    at.text_input(key="bins_age").set_value("4")
    at.button[[b.label for b in at.button].index("Apply to column")].click().run()
    assert not at.exception
    errs = errors(at)
    assert errs and "column 'age'" in errs[0] and "lower" in errs[0]
    assert wb.schema.column("age").kind == "categorical"   # unchanged
    # bounds that leave data outside: a DataError naming the column
    at.text_input(key="lower_age").set_value("18")
    at.text_input(key="upper_age").set_value("30")
    at.button[[b.label for b in at.button].index("Apply to column")].click().run()
    assert "column 'age'" in errors(at)[0] and "outside the bounds" in errors(at)[0]
    # a valid edit
    at.text_input(key="upper_age").set_value("80")
    at.button[[b.label for b in at.button].index("Apply to column")].click().run()
    assert not errors(at)
    assert wb.schema.column("age").kind == "numeric" and wb.schema.column("age").bins == 4
    assert "Column 'age' updated." in texts(at)
    # leave a column out of the schema
    at.selectbox(key="edit_column").set_value("edu").run()
    at.button(key="drop_column").click().run()
    assert not errors(at) and "edu" not in wb.schema.names
    assert any("Not in the schema" in w.value and "edu" in w.value for w in at.warning)


def test_data_page_sample_picker_and_schema_upload():
    at = go(new_app(), "app_pages/data.py")
    at.selectbox(key="sample_pick").set_value("titanic-full")
    at.button(key="load_sample").click().run()
    wb = at.session_state["wb"]
    assert wb.source.sample == "titanic-full" and wb.public.kind == "none"
    assert "declared" in texts(at)
    at.file_uploader(key="upload_schema").set_value(("s.json", b"{oops", "application/json"))
    at.run()
    assert errors(at) and "not valid JSON" in errors(at)[0]
    assert wb.schema.source == "declared" and len(wb.schema.names) == 6


def test_public_page_marks_public_rows_and_shows_curator_panel():
    at = go(new_app(), "app_pages/data.py")
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(), "text/csv"))
    at.run()
    go(at, "app_pages/public.py")
    wb = at.session_state["wb"]
    assert wb.public.kind == "none"
    at.radio(key="public_mode").set_value("flag").run()
    assert at.selectbox(key="public_flag").options == ["is_public"]
    at.button(key="apply_flag").click().run()
    assert not at.exception and not errors(at)
    assert wb.public.kind == "flag" and "is_public" not in wb.schema.names
    assert "rows flagged by column 'is_public'" in texts(at)
    # the curator-only panel with the public proxy error
    assert "CURATOR-ONLY, not releasable" in texts(at)
    assert any("curator-only" in m.label for m in at.metric)
    assert "public proxy" in sidebar_text(at) or "flagged" in sidebar_text(at)

    # a filter on the loaded table
    at.radio(key="public_mode").set_value("filter").run()
    at.selectbox(key="filter_column").set_value("sex").run()
    at.multiselect(key="filter_values").set_value(["F", "M"])
    at.button(key="apply_filter").click().run()
    assert errors(at) and "nothing would stay private" in errors(at)[0]
    assert wb.public.kind == "flag"                  # unchanged
    at.multiselect(key="filter_values").set_value(["F"])
    at.button(key="apply_filter").click().run()
    assert not errors(at) and wb.public.kind == "filter"

    # public columns: all columns is refused with a message
    at.multiselect(key="public_columns").set_value(list(wb.schema.names)).run()
    assert errors(at) and "nothing private" in errors(at)[0]
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    assert wb.public.columns == ("sex",)


def test_public_page_uploads_a_public_table():
    at = go(load_titanic(new_app()), "app_pages/public.py")
    wb = at.session_state["wb"]
    at.file_uploader(key="upload_public").set_value(
        ("pub.csv", b"pclass,survived,sex,age,sibsp,parch\n1st,died,alien,30,0,0\n", "text/csv"))
    at.run()
    assert errors(at) and "sex" in errors(at)[0] and "alien" in errors(at)[0]
    assert wb.public.rows.name == "public.csv"            # the sample's public table stays
    at.file_uploader(key="upload_public").set_value(
        ("pub.csv", b"pclass,survived,sex,age,sibsp,parch\n1st,died,male,30,0,0\n"
                    b"3rd,survived,female,,1,2\n", "text/csv"))
    at.run()
    assert not errors(at) and wb.public.rows.name == "pub.csv" and len(wb.public.rows.table) == 2
    # the private table uploaded as the public one: refused, the public rows kept
    private_csv = wb.source.frame.to_csv(index=False).encode()
    at.file_uploader(key="upload_public").set_value(("copy.csv", private_csv, "text/csv"))
    at.run()
    assert any("holds the same records as the private table" in e for e in errors(at))
    assert wb.public.rows.name == "pub.csv"
    assert wb.public_overlap_note() is None                 # two rows: too few to judge
    # a near-copy (the private table less 8 rows) loads, with a curator-only warning
    near = wb.source.frame.iloc[8:].to_csv(index=False).encode()
    at.file_uploader(key="upload_public").set_value(("near.csv", near, "text/csv"))
    at.run()
    warned = [w.value for w in at.warning if "also records of the private table" in w.value]
    assert warned and "1,000 of the 1,000 public rows (100%)" in warned[0]
    # the sample's own public rows share half their records by chance: no warning
    wb.load_sample("titanic")
    assert wb.public_overlap_note() is None


def test_workload_page_builds_workloads_and_settings():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    assert "20 marginals" in texts(at)
    at.radio(key="wl_kind").set_value("target").run()
    at.slider(key="wl_k").set_value(2)
    at.multiselect(key="wl_targets").set_value(["survived"])
    at.button[[b.label for b in at.button].index("Use this workload")].click().run()
    assert not errors(at) and wb.settings.workload == "target:survived:2"
    assert "5 marginals" in texts(at)

    at.radio(key="wl_kind").set_value("custom").run()
    at.text_area(key="wl_custom").set_value("age, height\n")
    at.button[[b.label for b in at.button].index("Use this workload")].click().run()
    assert errors(at) and "height" in errors(at)[0] and "Known columns" in errors(at)[0]
    assert wb.settings.workload == "target:survived:2"
    at.text_area(key="wl_custom").set_value("age, sex\npclass, survived * x\n")
    at.button[[b.label for b in at.button].index("Use this workload")].click().run()
    assert errors(at) and "not a number" in errors(at)[0]
    at.text_area(key="wl_custom").set_value("age, sex\npclass, survived * 3\n")
    at.button[[b.label for b in at.button].index("Use this workload")].click().run()
    assert not errors(at) and wb.settings.workload == "age,sex;pclass,survived*3"

    # epsilon on the log slider, delta, mechanism and hyper-parameters
    at.select_slider(key="epsilon").set_value(0.5)
    at.select_slider(key="delta").set_value(1e-6)
    at.checkbox(key="rounds_default").uncheck()
    at.number_input(key="rounds").set_value(5)
    # fit iterations: the mechanism's default until the box is unticked
    assert at.checkbox(key="fit_iters_default").value and wb.settings.fit_iters is None
    assert at.number_input(key="fit_iters").value == wb.settings.round_fit_iters
    at.checkbox(key="fit_iters_default").uncheck()
    at.number_input(key="fit_iters").set_value(20)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not errors(at)
    s = wb.settings
    assert (s.epsilon, s.delta, s.rounds, s.fit_iters) == (0.5, 1e-6, 5, 20)
    assert "ε = 0.5" in sidebar_text(at)
    assert any(m.label == "Run-time estimate" for m in at.metric)
    assert any(m.label == "Planned rounds" and m.value == "5" for m in at.metric)

    at.selectbox(key="mechanism").set_value("aim").run()
    at.checkbox(key="rounds_default").check()
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert wb.settings.mechanism == "aim" and wb.settings.rounds is None
    # a number typed while the default is ticked is not used, and the page says so
    at.number_input(key="rounds").set_value(12)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert wb.settings.rounds is None
    assert any("Rounds T = 12 was not used" in m.value for m in at.success)



def test_budget_form_keeps_unsaved_choices_when_a_widget_disappears():
    """A mechanism without rounds (public-only) hides the rounds widgets, and
    Streamlit forgets their state; the next rerun must refill only those, not
    reset the mechanism and epsilon the user picked but has not saved yet."""
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    at.selectbox(key="mechanism").set_value("public-only").run()
    assert not at.exception and at.selectbox(key="mechanism").value == "public-only"
    at.select_slider(key="epsilon").set_value(10.0)    # inside the form: sent on Save
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not errors(at)
    assert (wb.settings.mechanism, wb.settings.epsilon) == ("public-only", 10.0)
    # and back to a mechanism with rounds: its widgets come back at the saved values
    at.selectbox(key="mechanism").set_value("jam-pgm").run()
    assert at.checkbox(key="rounds_default").value and not errors(at)

def test_budget_form_widgets_default_to_the_saved_settings():
    """A browser that mounts the budget form afresh, without widget state (the
    run that sent the session-state values was cut short under load), shows
    each widget's own default. Those defaults are the saved settings, so a Save
    cannot store minimums the user never chose (epsilon 0.01, 0.1 MB). A model
    size under the 10 MB conditioning bound saves too (no error about
    condition_max_mb)."""
    from synth_core.workbench import EPSILON_GRID

    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    at.select_slider(key="epsilon").set_value(10.0)
    at.number_input(key="max_model_size").set_value(5.0)
    at.checkbox(key="fit_iters_default").uncheck()
    at.number_input(key="fit_iters").set_value(30)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not errors(at) and "Settings saved." in texts(at)
    s = wb.settings
    assert (s.mechanism, s.epsilon, s.max_model_size, s.fit_iters) == ("jam-pgm", 10.0, 5.0, 30)
    at.run()   # a later run: Streamlit sends no session-state value any more
    assert at.number_input(key="max_model_size").proto.default == 5.0
    assert at.number_input(key="fit_iters").proto.default == 30
    assert [EPSILON_GRID[int(i)] for i in at.select_slider(key="epsilon").proto.default] == [10.0]
    assert at.checkbox(key="fit_iters_default").proto.default is False
    assert at.checkbox(key="rounds_default").proto.default is True


def test_run_page_runs_in_background_and_release_page_downloads():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    wb.update_settings(rounds=3, fit_iters=20, final_fit_iters=50, seed=0)
    go(at, "app_pages/run.py")
    assert "Press **Start run**" in texts(at)
    assert "rows not used by" not in texts(at)        # JAM-PGM uses the public rows
    wb.update_settings(mechanism="aim")
    at.run()
    assert "(rows not used by AIM)" in texts(at)     # AIM ignores them: the header says so
    wb.update_settings(mechanism="jam-pgm")
    at.run()
    at.button(key="start_run").click().run()
    assert not at.exception and not errors(at)
    assert wb.runs or wb.worker is not None          # running, or already collected
    wait_for_run(at)
    at.run()
    assert not at.exception and not errors(at)
    assert len(wb.runs) == 1 and wb.runs[0].status == "finished"
    assert any("Finished in" in s.value for s in at.success)
    assert "CURATOR-ONLY, not releasable" in texts(at)
    assert any("Workload error" in m.label and "curator-only" in m.label for m in at.metric)
    assert "round 3 / 3" in at.get("progress")[0].proto.text
    pool = at.selectbox(key="pool_round_run1")
    assert pool.options == ["latest (round 3)", "round 1", "round 2", "round 3"]
    assert pool.value == "latest"
    pool.set_value(1).run()
    assert not at.exception and "chosen:" in texts(at)
    rounds = at.dataframe[0].value
    assert list(rounds["round"]) == [1, 2, 3] and "score" not in rounds.columns
    assert set(rounds["source"]) <= {"public", "private"}
    assert "ρ = 0.01497" in sidebar_text(at)         # the session's budget

    go(at, "app_pages/release.py")
    # a seeded research run: the page says it must not be published, and nothing else is wrong
    assert not errors(at)
    assert any(w.value.startswith("Not fit for publication") for w in at.warning)
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["Synthetic data (CSV)", "Synthetic data (Parquet)", "Report (JSON)",
                      "Schema (JSON)", "Reproduce (shell)", "Reproduce (notebook)"]
    assert any("This release satisfies" in i.value for i in at.info)
    assert "CURATOR" not in texts(at)
    codes = [c.value for c in at.code]
    assert codes and "\nsynth run --sample titanic" in codes[0] and "--seed" not in codes[0]
    assert codes[0].startswith("# running this reads the private table again and spends")
    assert "\n# this run was seeded: an exact repeat needs its seed" in codes[0]
    # the files behind the buttons
    files = wb.release_files(wb.runs[0])
    report = json.loads(files["report.json"])
    check_release(report)
    assert not CURATOR_ONLY_KEYS & set(all_keys(report))
    assert len(pd.read_csv(io.BytesIO(files["synthetic.csv"]))) == 1008
    # the table's only run: nothing to add; after a second run, its release says what
    # covers a run chosen among the two
    assert not any("chosen for release" in w.value for w in at.warning)
    wb.start_run()
    assert wb.worker.wait(120) and wb.collect().ok
    go(at, "app_pages/release.py")
    at.selectbox(key="release_run").set_value(1).run()
    assert any("chosen for release among the table's runs" in w.value for w in at.warning)


def test_run_page_shows_a_failed_run_cleanly():
    at = new_app()
    at.button(key="sample_titanic-full").click().run()
    wb = at.session_state["wb"]
    # JAM-PGM without public rows is refused before Start, with the reason
    wb.update_settings(mechanism="jam-pgm", rounds=3, fit_iters=20, final_fit_iters=50)
    go(at, "app_pages/run.py")
    assert at.button(key="start_run").disabled
    assert any("JAM-PGM is built on public rows" in w.value for w in at.warning)
    # a run that fails once started (AIM's budget scale below its 1-way count)
    wb.update_settings(mechanism="aim", rounds=2)
    at.run()
    at.button(key="start_run").click().run()
    wait_for_run(at)
    at.run()
    assert not at.exception
    errs = errors(at)
    assert errs and "AIM's budget scale T=2" in errs[0] and "Traceback" not in errs[0]
    assert wb.has_data and wb.source.sample == "titanic-full"   # nothing lost
    go(at, "app_pages/release.py")
    assert "No finished run yet" in texts(at)


def test_run_page_refuses_public_columns_with_mwem():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    wb.update_settings(mechanism="mwem-pgm")
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    assert any("does not use public columns" in w.value for w in at.warning)
    go(at, "app_pages/run.py")
    assert at.button(key="start_run").disabled
    warned = " ".join(w.value for w in at.warning)
    assert "MWEM+PGM cannot run" in warned and "clear Public columns" in warned
    with pytest.raises(ConfigError):
        wb.start_run()
    assert wb.worker is None


def test_compare_page_runs_a_small_grid(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    wb.update_settings(rounds=3, fit_iters=20, final_fit_iters=50)
    go(at, "app_pages/compare.py")
    assert "No saved results for this setup yet." in texts(at)
    at.multiselect(key="cmp_eps").set_value([])
    at.button[[b.label for b in at.button].index("Start comparison")].click().run()
    assert errors(at) and "at least one epsilon" in errors(at)[0]
    at.multiselect(key="cmp_mechs").set_value(["jam-pgm", "public-only"])
    at.multiselect(key="cmp_eps").set_value([0.5, "x"]).run()    # a value typed in
    assert errors(at) == ["Not an epsilon, left out: x. Type a number from 0.0001 to "
                          "1,000,000, such as 0.3."]
    # past the largest epsilon a run takes, or below the smallest: named here, not at Start
    at.multiselect(key="cmp_eps").set_value([0.5, "1e9", "0", "1e-5"]).run()
    assert errors(at) == ["Not an epsilon, left out: 1e9, 0, 1e-5. Type a number from 0.0001 "
                          "to 1,000,000, such as 0.3."]
    at.multiselect(key="cmp_eps").set_value([0.5, "3.16"])       # one not in the list
    at.number_input(key="cmp_seeds").set_value(1)
    run_comparison(at)
    assert sorted(set(wb.compare_results()[0]["epsilon"])) == [0.5, 3.16]
    assert any("Comparison finished: 4 runs." in s.value for s in at.success)
    assert "CURATOR-ONLY, not releasable" in texts(at)
    results = wb.compare_results()[0]
    best = results[results["epsilon"] == 0.5].sort_values("workload_error").iloc[0]
    title = "JAM-PGM" if best["mechanism"] == "jam-pgm" else "Public-only"
    assert f"Lowest mean workload error at ε = 0.5, {title} " in texts(at)
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["CURATOR-ONLY results (Parquet)", "CURATOR-ONLY per-marginal errors (Parquet)"]
    assert "comparison run(s)" in sidebar_text(at)


@pytest.mark.parametrize("columns", [1, 2])
def test_workload_page_takes_tables_of_fewer_than_three_columns(columns):
    """A table of one or two columns gets the all-k-way workload it can have
    (k = its column count) and a Workload page without a slider it cannot draw."""
    at = new_app()
    wb = at.session_state["wb"]
    frame = pd.DataFrame({c: ["a", "b", "a", "c"] * 10 for c in ("x", "y")[:columns]})
    wb.load_upload("small.csv", frame.to_csv(index=False).encode())
    assert wb.settings.workload == f"all-{columns}way" and len(wb.workload()) == 1
    go(at, "app_pages/workload.py")
    assert not errors(at)
    for kind in ("all", "target"):
        at.radio(key="wl_kind").set_value(kind).run()
        assert not at.exception and not errors(at)
        at.button[[b.label for b in at.button].index("Use this workload")].click().run()
        assert not at.exception and not errors(at)
    assert wb.settings.workload.startswith("target:") and len(wb.workload()) == 1


def test_workload_page_offers_every_mechanism_and_its_parameters():
    from synth_core.mechanisms import MECHANISMS
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    box = at.selectbox(key="mechanism")
    names = [k for k in box.options if "Conditional" not in k]
    assert len(names) == len(MECHANISMS)
    for name in MECHANISMS:
        at.selectbox(key="mechanism").set_value(name).run()
        assert not at.exception and not errors(at), name
    at.selectbox(key="mechanism").set_value("jam-pgm").run()
    at.number_input(key="opt_jam-pgm_alpha").set_value(0.7)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not errors(at)
    assert wb.settings.options == {"alpha": 0.7}
    at.number_input(key="opt_jam-pgm_alpha").set_value(1.5)
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert wb.settings.options == {"alpha": 0.7}     # refused, unchanged
    assert errors(at) and "alpha" in errors(at)[0]
    # conditional generation is an entry of the list, not an option box
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    go(at, "app_pages/workload.py")
    at.selectbox(key="mechanism").set_value("aim+conditional").run()
    assert "opt_aim_conditional" not in {c.key for c in at.checkbox}
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not errors(at)
    assert wb.settings.mechanism == "aim" and wb.settings.options == {"conditional": True}


def test_widgets_follow_the_workbench_after_a_new_table():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    assert at.selectbox(key="mechanism").value == "jam-pgm"
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    wb = at.session_state["wb"]
    assert wb.public.columns == ("sex",)
    go(at, "app_pages/start.py")
    at.button(key="sample_titanic-full").click().run()
    assert wb.settings.mechanism == "aim" and wb.public.columns == ()
    go(at, "app_pages/public.py")
    assert at.multiselect(key="public_columns").value == []
    assert at.radio(key="public_mode").value == "none"
    assert wb.public.columns == ()
    go(at, "app_pages/workload.py")
    assert at.selectbox(key="mechanism").value == "aim"
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert wb.settings.mechanism == "aim"


def test_run_page_stop_button_stops_the_run():
    at = go(load_titanic(new_app()), "app_pages/run.py")
    wb = at.session_state["wb"]
    wb.update_settings(rounds=30, fit_iters=20, final_fit_iters=50)
    at.button(key="start_run").click().run()
    assert wb.running
    # the live view (the polling fragment runs with the page): events so far
    wait_until(lambda: len(wb.worker.events) >= 2 or not wb.running, 60, "two rounds of the run")
    assert wb.running
    at.run()
    assert not at.exception and not errors(at)
    assert any(h.value.startswith("Running: JAM-PGM") for h in at.subheader)
    live = at.dataframe[0].value
    assert len(live) >= 2 and set(live["source"]) <= {"public", "private"}
    assert "/ 30 (running)" in at.get("progress")[0].proto.text
    assert "Running:" in sidebar_text(at)
    at.button(key="stop_run").click().run()
    assert not at.exception
    wait_for_run(at)
    at.run()
    run = wb.runs[-1]
    assert run.status == "stopped" and 1 <= len(run.events) < 30
    assert any("Stopped after round" in w.value for w in at.warning)
    assert f"ρ = {run.rho_spent:.4g}" in sidebar_text(at)
    go(at, "app_pages/release.py")
    assert "No finished run yet" in texts(at)


# ---------------------------------------------------------------- a file on this machine

def _open_disk(at: AppTest, path, backend="duckdb") -> AppTest:
    at.text_input(key="disk_path").set_value(str(path))
    at.radio(key="disk_backend").set_value(backend)
    at.button(key="open_disk").click().run()
    assert not at.exception
    return at


def test_data_page_opens_a_parquet_file_on_disk_with_duckdb(tmp_path, monkeypatch):
    from synth_core.api import SAMPLE_DIR
    from synth_core.backends.duckdb_backend import DuckDBTable
    from synth_core.tables import load_table

    root = tmp_path / "allowed"
    (root / "sub").mkdir(parents=True)
    frame = load_table(SAMPLE_DIR / "titanic/titanic.csv")
    frame.to_parquet(root / "sub" / "titanic.parquet")
    outside = tmp_path / "elsewhere.parquet"
    frame.to_parquet(outside)
    (root / "link.parquet").symlink_to(outside)          # a way out of the allowed folder
    (root / "broken.parquet").write_bytes(b"PAR1 this is not a parquet file")
    monkeypatch.setenv("SYNTH_WORKBENCH_DATA_ROOTS", str(root))

    at = go(new_app(), "app_pages/data.py")
    assert str(root) in texts(at)                         # the allowed folders are shown
    _open_disk(at, root / "sub" / ".." / "sub" / "titanic.parquet")
    assert not errors(at)
    wb = at.session_state["wb"]
    assert wb.out_of_core and wb.n_rows == 1309 and len(wb.data) == 100   # a preview only
    preview = at.dataframe[0].value
    assert len(preview) == 100 and list(preview.columns) == list(frame.columns)
    assert preview["age"].tolist()[:5] == frame["age"].tolist()[:5]
    assert "1,309 rows" in texts(at) and "LIMIT 100" in texts(at)
    assert "no domain yet" in texts(at) and "not declared yet" in sidebar_text(at)
    go(at, "app_pages/run.py")                            # other pages say what to do
    assert "domain is not declared yet" in texts(at) and not errors(at)

    go(at, "app_pages/data.py")
    at.file_uploader(key="disk_schema").set_value(
        ("schema.json", (SAMPLE_DIR / "titanic/schema.json").read_bytes(), "application/json"))
    at.run()
    assert not at.exception and not errors(at)
    assert wb.has_data and wb.schema.source == "declared" and wb.out_of_core
    assert "1,309 rows" in sidebar_text(at) and "counted by DuckDB" in sidebar_text(at)

    # paths that may not or cannot be opened: a specific error each, nothing lost
    for bad, what in [(outside, "outside the folders"), (root / "link.parquet", "outside the folders"),
                      (tmp_path / "allowed" / ".." / "elsewhere.parquet", "outside the folders"),
                      (root / "missing.parquet", "not found"), (root / "notes.txt", "unsupported file type"),
                      (root / "broken.parquet", "cannot read")]:
        _open_disk(at, bad)
        assert errors(at) and what in errors(at)[0], (bad, errors(at))
        assert wb.out_of_core and wb.n_rows == 1309 and wb.schema.source == "declared"

    # a run counts the file with DuckDB; its curator-only error comes from DuckDB's counts
    wb.update_settings(mechanism="aim", rounds=24, workload="all-2way", fit_iters=20,
                       final_fit_iters=50, seed=0)
    go(at, "app_pages/run.py")
    at.button(key="start_run").click().run()
    assert not at.exception and not errors(at)
    wait_for_run(at)
    at.run()
    assert not at.exception and not errors(at)
    run = wb.runs[0]
    assert run.status == "finished"
    private = run.result.inputs.data.private
    assert isinstance(private, DuckDBTable) and private.con is None   # closed after the run
    assert any("Workload error" in m.label and "curator-only" in m.label for m in at.metric)

    go(at, "app_pages/release.py")
    assert not errors(at)
    assert any("This release satisfies" in i.value for i in at.info)
    code = [c.value for c in at.code][0]
    assert f"--data {root / 'sub' / 'titanic.parquet'} --backend duckdb" in code
    files = wb.release_files(run)
    report = json.loads(files["report.json"])
    check_release(report)
    assert report["domain"]["protected"]
    assert len(pd.read_csv(io.BytesIO(files["synthetic.csv"]))) == 1309


def test_public_rows_flagged_in_a_disk_file_and_compare(tmp_path, monkeypatch):
    from conftest import make_correlated

    frame = make_correlated(2000, seed=3)[["sex", "edu", "income"]]
    frame["is_public"] = np.where(np.random.default_rng(0).random(len(frame)) < 0.2, "yes", "no")
    frame.to_csv(tmp_path / "people.csv", index=False)
    monkeypatch.setenv("SYNTH_WORKBENCH_DATA_ROOTS", str(tmp_path))
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path / "out"))
    monkeypatch.chdir(tmp_path)
    import synth_core.api
    import synth_core.backends.memory
    import synth_core.disk_table
    from synth_core.tables import load_table

    def never_the_private_file(path, *args, **kwargs):   # pandas must never read people.csv
        assert Path(path).name != "people.csv", "the private file was loaded into pandas"
        return load_table(path, *args, **kwargs)
    for module in (synth_core.api, synth_core.backends.memory, synth_core.disk_table):
        monkeypatch.setattr(module, "load_table", never_the_private_file)

    at = go(new_app(), "app_pages/data.py")
    _open_disk(at, "people.csv")                          # relative to the working directory
    wb = at.session_state["wb"]
    assert wb.out_of_core and wb.n_rows == 2000
    # the domain from the rows the flag column marks public (DuckDB reads only those)
    assert at.selectbox(key="disk_flag").options == ["is_public"]
    at.button(key="disk_flag_apply").click().run()
    assert not at.exception and not errors(at)
    n_public = int((frame["is_public"] == "yes").sum())
    assert wb.public.kind == "flag" and wb.schema.source == "public"
    assert wb.schema.names == ("sex", "edu", "income")
    assert f"{n_public:,} rows flagged by column 'is_public'" in sidebar_text(at)

    go(at, "app_pages/public.py")
    assert not errors(at) and "CURATOR-ONLY, not releasable" in texts(at)
    assert any("curator-only" in m.label for m in at.metric)   # proxy error, counted by DuckDB
    at.radio(key="public_mode").set_value("filter").run()
    assert "needs the table in memory" in texts(at) and not errors(at)
    assert wb.public.kind == "flag"

    wb.update_settings(mechanism="jam-pgm", rounds=2, workload="all-2way", fit_iters=20,
                       final_fit_iters=40)
    go(at, "app_pages/compare.py")
    at.multiselect(key="cmp_mechs").set_value(["jam-pgm"])
    at.multiselect(key="cmp_eps").set_value([1.0])
    at.number_input(key="cmp_seeds").set_value(1)
    run_comparison(at)
    results = wb.compare_results()[0]
    assert list(results["status"]) == ["finished"] and results["workload_error"].iloc[0] > 0
    assert "CURATOR-ONLY, not releasable" in texts(at)


def test_data_page_loads_a_file_on_disk_into_memory(tmp_path, monkeypatch):
    from synth_core.api import SAMPLE_DIR

    (tmp_path / "t.csv").write_bytes((SAMPLE_DIR / "titanic/titanic.csv").read_bytes())
    monkeypatch.setenv("SYNTH_WORKBENCH_DATA_ROOTS", str(tmp_path))
    at = _open_disk(go(new_app(), "app_pages/data.py"), tmp_path / "t.csv", backend="memory")
    assert not errors(at)
    wb = at.session_state["wb"]
    assert not wb.out_of_core and len(wb.data) == wb.n_rows == 1309
    assert wb.schema.source == "private" and "Loaded 't.csv' into memory" in texts(at)
    assert any("domain not privacy-protected" in w.value for w in at.warning)
    assert wb.reproduce_command().count(f"--data {tmp_path / 't.csv'}") == 1
    assert "--backend" not in wb.reproduce_command()
    go(at, "app_pages/public.py")                        # a filter works on a loaded table
    at.radio(key="public_mode").set_value("filter").run()
    assert "pclass" in at.selectbox(key="filter_column").options and not errors(at)


def test_a_disk_file_replaced_by_a_link_out_of_the_roots_is_refused(tmp_path, monkeypatch):
    from synth_core.errors import DataError
    from synth_core.workbench import Workbench

    root = tmp_path / "allowed"
    root.mkdir()
    frame = pd.DataFrame({"a": ["x", "y"] * 50, "b": [1, 2] * 50})
    frame.to_parquet(root / "t.parquet")
    frame.to_parquet(tmp_path / "secret.parquet")
    monkeypatch.setenv("SYNTH_WORKBENCH_DATA_ROOTS", str(root))
    wb = Workbench()
    wb.load_disk(str(root / "t.parquet"))
    wb.load_schema_file("s.json", json.dumps({"columns": [
        {"name": "a", "kind": "categorical", "categories": ["x", "y"]},
        {"name": "b", "kind": "categorical", "categories": [1, 2]}]}).encode())
    assert wb.run_kwargs()["data"] == str(root / "t.parquet")
    (root / "t.parquet").unlink()
    (root / "t.parquet").symlink_to(tmp_path / "secret.parquet")
    try:
        wb.run_kwargs()
    except DataError as exc:
        assert "outside the folders" in str(exc)
    else:
        raise AssertionError("a link out of the allowed folders was followed")


def test_run_and_release_pages_show_the_reports_warnings():
    """MWEM+PGM with the sample's public rows marked: it ignores them, and both pages
    say so (the report's warning), once each."""
    at = go(load_titanic(new_app()), "app_pages/run.py")
    wb = at.session_state["wb"]
    wb.update_settings(mechanism="mwem-pgm", rounds=3, fit_iters=20, final_fit_iters=50)
    at.run()
    at.button(key="start_run").click().run()
    wait_for_run(at)
    at.run()
    assert not at.exception and not errors(at)
    said = [w.value for w in at.warning if "does not use public rows" in w.value]
    assert len(said) == 1 and "were ignored" in said[0]
    go(at, "app_pages/release.py")
    assert len([w for w in at.warning if "does not use public rows" in w.value]) == 1
