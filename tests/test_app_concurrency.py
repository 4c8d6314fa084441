"""Two browser sessions at once, and nothing lost across pages
or on a reload.

Streamlit AppTest sessions of the real app (no mocks): each session keeps its
own Workbench in ``st.session_state["wb"]``, found again by a new session
(a reload) through the ``session`` token in the URL; runs execute in
background threads. Also the upload name handling of ``synth_core.workbench.uploads.read_upload``.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest

from streamlit.testing.v1 import AppTest

from app_pages.sessions import PARAM
from synth_core.errors import DataError
from synth_core.workbench import Workbench
from synth_core.workbench.uploads import read_upload
from test_app_pages import (APP, PAGES, errors, flagged_csv, go, load_titanic, new_app, texts,
                            wait_for_run)

ALL_PAGES = PAGES + ["app_pages/compare.py"]


def upload_people(at):
    go(at, "app_pages/data.py")
    at.file_uploader(key="upload_data").set_value(("people.csv", flagged_csv(n=200, seed=3),
                                                   "text/csv"))
    at.run()
    assert not at.exception and not errors(at)
    return at


def start_run(at):
    go(at, "app_pages/run.py")
    at.button(key="start_run").click().run()
    assert not at.exception and not errors(at)


def sidebar(at) -> str:
    return "\n".join(m.value for m in at.sidebar.markdown)


def reopen(token: str | None, page: str = "app_pages/run.py") -> AppTest:
    """A new session (a reload, or another browser) on ``page`` with the URL's token."""
    at = AppTest.from_file(APP, default_timeout=60)
    if token is not None:
        at.query_params[PARAM] = token
    at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def test_two_sessions_do_not_see_each_others_data_or_runs():
    titanic = load_titanic(new_app())
    people = upload_people(new_app())
    wb1, wb2 = titanic.session_state["wb"], people.session_state["wb"]
    assert wb1 is not wb2
    assert wb1.data_name == "titanic:private" and wb2.data_name == "people.csv"
    assert "titanic" in sidebar(titanic) and "people.csv" not in sidebar(titanic)
    assert "people.csv" in sidebar(people) and "titanic" not in sidebar(people)

    wb1.update_settings(mechanism="jam-pgm", workload="all-2way", rounds=2, fit_iters=10,
                        final_fit_iters=20, seed=0)
    wb2.update_settings(mechanism="mwem-pgm", workload="all-2way", rounds=2, fit_iters=10,
                        final_fit_iters=20, seed=1, epsilon=2.0)
    start_run(titanic)
    start_run(people)             # both run at the same time, in their own threads
    wait_for_run(titanic)
    wait_for_run(people)
    for at in (titanic, people):
        go(at, "app_pages/run.py")
        assert any("Finished in" in s.value for s in at.success), texts(at)

    assert len(wb1.runs) == 1 and len(wb2.runs) == 1
    run1, run2 = wb1.runs[0], wb2.runs[0]
    assert run1.status == run2.status == "finished"
    assert run1.result is not run2.result
    assert run1.result.config.mechanism == "jam-pgm" and run2.result.config.mechanism == "mwem-pgm"
    assert run1.result.config.epsilon == 1.0 and run2.result.config.epsilon == 2.0
    # each run's synthetic data has its own session's columns and size
    assert list(run1.result.synthetic.columns) == list(wb1.schema.names)
    assert list(run2.result.synthetic.columns) == list(wb2.schema.names)
    assert set(run1.result.synthetic.columns).isdisjoint({"edu", "is_public"})
    assert len(run1.result.synthetic) == 1008 and len(run2.result.synthetic) == 200
    assert run1.result.inputs.data.n == 1008 and run2.result.inputs.data.n == 200

    # the release pages offer only the session's own run
    for at, wb, mine, other in ((titanic, wb1, '"survived"', '"edu"'),
                                (people, wb2, '"edu"', '"survived"')):
        go(at, "app_pages/release.py")
        assert not errors(at)
        files = wb.release_files(wb.runs[0])
        synthetic = pd.read_csv(io.BytesIO(files["synthetic.csv"]))
        assert list(synthetic.columns) == list(wb.schema.names)
        report = files["report.json"]
        report = report.decode() if isinstance(report, bytes) else report
        assert mine in report and other not in report
        assert other.strip('"') not in sidebar(at)
    # a reload finds each session's own Workbench by its token, never the other's
    tokens = [at.query_params[PARAM] for at in (titanic, people)]
    assert tokens[0] != tokens[1]
    for token, wb, mine, other in ((tokens[0], wb1, "titanic:private", "people.csv"),
                                   (tokens[1], wb2, "people.csv", "titanic")):
        again = reopen(token, "app_pages/release.py")
        assert again.session_state["wb"] is wb and again.query_params[PARAM] == token
        assert mine in sidebar(again) and other not in sidebar(again)
        assert not any("earlier session expired" in w.value for w in again.warning)
    # a new table in one session leaves the other's data and runs alone
    load_titanic(go(people, "app_pages/start.py"))
    assert wb2.data_name == "titanic:private" and wb1.data_name == "titanic:private"
    assert wb1.data is not wb2.data
    assert len(wb1.runs) == 1 and wb1.runs[0] is run1


def test_data_and_finished_runs_survive_visiting_every_page():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    data, schema = wb.data, wb.schema
    wb.update_settings(workload="all-2way", rounds=2, fit_iters=10, final_fit_iters=20, seed=0)
    start_run(at)
    wait_for_run(at)
    go(at, "app_pages/run.py")
    assert len(wb.runs) == 1 and wb.runs[0].status == "finished"
    run = wb.runs[0]
    for _ in range(2):
        for page in ALL_PAGES:
            go(at, page)
            assert not errors(at), page
            assert at.session_state["wb"] is wb
            assert wb.data is data and wb.schema == schema and wb.runs == [run]
            assert "titanic:private" in sidebar(at)
    go(at, "app_pages/run.py")
    assert any("Finished in" in s.value for s in at.success)
    go(at, "app_pages/release.py")
    assert [b.label for b in at.get("download_button")][:3] == [
        "Synthetic data (CSV)", "Synthetic data (Parquet)", "Report (JSON)"]
    assert len(wb.runs) == 1 and wb.runs[0] is run and wb.data is data


@pytest.mark.parametrize("name", ["..", ".", "x.csv/..", "a/.", "", "noext", "evil.exe",
                                  "../../x.txt"])
def test_upload_names_that_name_no_table_file_are_a_data_error(name):
    with pytest.raises(DataError, match="unsupported file type"):
        read_upload(name or "x", b"a,b\n1,2\n")


@pytest.mark.parametrize("name,label", [("a\x00b.csv", "ab.csv"), ("../../etc/t.csv", "t.csv"),
                                        ("C:\\Users\\me\\t.CSV", "t.CSV"),
                                        ("x\x00.csv\x00", "x.csv"), ("t.csv.gz", "t.csv.gz")])
def test_upload_is_saved_under_a_fixed_name_with_its_suffix(name, label, monkeypatch, tmp_path):
    import gzip
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    content = b"a,b\n1,2\n3,4\n"
    if label.endswith(".gz"):
        content = gzip.compress(content)
    df = read_upload(name, content)
    assert list(df.columns) == ["a", "b"] and len(df) == 2
    # errors name the upload by its cleaned label, never a path outside the temp folder
    with pytest.raises(DataError) as exc:
        read_upload(name, b"\xff\xfe\x00garbage" if not label.endswith(".gz") else b"no")
    assert label in str(exc.value) and "\x00" not in str(exc.value)
    assert list(tmp_path.iterdir()) == []           # the temporary folder is gone


def test_workbench_uploads_with_hostile_names_keep_the_loaded_table():
    # Streamlit's uploader already refuses NUL bytes and names without a table
    # suffix; the Workbench (also usable without the app) must not rely on that
    wb = Workbench()
    for name in ("x.csv/..", "..", "a\x00"):
        with pytest.raises(DataError):
            wb.load_upload(name, b"a,b\n1,2\n")
    assert wb.data is None
    wb.load_upload("ok\x00.csv", b"a,b\n1,2\n3,4\n")
    assert len(wb.data) == 2
    for name in ("x.csv/..", "p\x00"):
        with pytest.raises(DataError):
            wb.set_public_table(name, b"a,b\n1,2\n")


def test_reload_with_the_token_finds_the_workbench_and_its_run():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    token = at.query_params[PARAM]
    assert len(token) >= 22
    wb.update_settings(workload="all-2way", rounds=3, fit_iters=10, final_fit_iters=20, seed=0)
    start_run(at)
    # a reload while the run goes on: the new session sees it (running, or just finished)
    during = reopen(token)
    assert during.session_state["wb"] is wb
    # its worker (running, or done and not yet collected) or, once collected, its run
    assert wb.worker is not None or wb.runs
    if wb.running:
        assert any(h.value.startswith("Running: JAM-PGM") for h in during.subheader)
    wait_for_run(at)
    # query parameters survive page switches; a reload after the run sees it finished
    for page in ALL_PAGES:
        go(at, page)
        assert at.query_params[PARAM] == token
    after = reopen(token)
    assert after.session_state["wb"] is wb and len(wb.runs) == 1
    assert any("Finished in" in s.value for s in after.success), texts(after)
    assert "titanic:private" in sidebar(after) and "1 run(s)" in sidebar(after)
    go(after, "app_pages/release.py")
    assert [b.label for b in after.get("download_button")][:1] == ["Synthetic data (CSV)"]

    # another browser (no token) starts afresh, with a token of its own
    other = reopen(None)
    assert other.session_state["wb"] is not wb and not other.session_state["wb"].has_data
    assert other.query_params[PARAM] != token and "none loaded" in sidebar(other)
    assert not any("earlier session expired" in w.value for w in other.warning)
    # an unknown, made-up or damaged token: a fresh session and a clear notice, no traceback
    for bad in ("x" * 32, token[:-2], "not a token!", token + "A"):
        fresh = reopen(bad)
        assert fresh.session_state["wb"] is not wb and not fresh.session_state["wb"].has_data
        assert fresh.query_params[PARAM] not in (bad, token)
        assert any("earlier session expired" in w.value for w in fresh.warning)
        assert not errors(fresh)
        go(fresh, "app_pages/start.py")              # the notice is shown once
        assert not any("earlier session expired" in w.value for w in fresh.warning)


@pytest.fixture
def two_slot_registry(monkeypatch):
    """The app's registry rebuilt with room for two sessions (then rebuilt again)."""
    from app_pages.sessions import registry
    monkeypatch.setenv("SYNTH_WORKBENCH_SESSIONS", "2")
    registry.clear()
    yield
    monkeypatch.delenv("SYNTH_WORKBENCH_SESSIONS")
    registry.clear()


def test_a_full_workbench_turns_a_new_visitor_away_and_keeps_every_session(two_slot_registry):
    first, second = load_titanic(new_app()), upload_people(new_app())
    tokens = [at.query_params[PARAM] for at in (first, second)]
    for page in ("app_pages/start.py", "app_pages/run.py"):
        stranger = AppTest.from_file(APP, default_timeout=60)
        stranger.switch_page(page).run()
        assert not stranger.exception
        assert any("serving its maximum of 2 sessions" in e.value for e in stranger.error)
        assert "wb" not in stranger.session_state
    for token, at in zip(tokens, (first, second)):
        again = reopen(token, "app_pages/data.py")
        assert again.session_state["wb"] is at.session_state["wb"]
        assert not errors(again)
