"""The Public information page and what depends on it: after a reload the
widgets show what is marked, choosing "No public rows" takes effect, the
sidebar counts private and public rows under a filter, and a what-if preview
whose public information is gone is no longer shown."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from app_pages.sessions import PARAM
from test_app_pages import APP, errors, go, load_titanic, new_app, sidebar_text, texts


def reopen(at: AppTest, page: str) -> AppTest:
    """A reload of ``at``'s browser tab: a new Streamlit session with the URL's token."""
    again = AppTest.from_file(APP, default_timeout=60)
    again.query_params[PARAM] = at.query_params[PARAM]
    again.switch_page(page).run()
    assert not again.exception, again.exception
    return again


def use_filter(at: AppTest, column: str, values: list[str]) -> None:
    at.radio(key="public_mode").set_value("filter").run()
    at.selectbox(key="filter_column").set_value(column).run()
    at.multiselect(key="filter_values").set_value(values)
    at.button(key="apply_filter").click().run()
    assert not at.exception and not errors(at)


def test_reload_shows_the_active_filter_and_the_sidebar_counts_under_it():
    at = go(load_titanic(new_app()), "app_pages/public.py")
    wb = at.session_state["wb"]
    use_filter(at, "sex", ["female"])
    assert wb.public.kind == "filter"
    public = int((wb.data["sex"].astype(str) == "female").sum())
    private = wb.n_rows - public
    assert 0 < public < wb.n_rows
    line = f"Under the public-row filter: **{private:,} private**, {public:,} public rows"
    assert line in sidebar_text(at)
    again = reopen(at, "app_pages/public.py")
    assert again.session_state["wb"] is wb
    assert again.radio(key="public_mode").value == "filter"
    assert again.selectbox(key="filter_column").value == "sex"
    assert again.multiselect(key="filter_values").value == ["female"]
    assert line in sidebar_text(again)
    # another column's values are offered afresh, without an error
    again.selectbox(key="filter_column").set_value("pclass").run()
    assert not again.exception and again.multiselect(key="filter_values").value == []


def test_choosing_no_public_rows_takes_effect():
    at = go(load_titanic(new_app()), "app_pages/public.py")
    wb = at.session_state["wb"]
    assert wb.public.kind == "table"
    at.radio(key="public_mode").set_value("none").run()
    assert not at.exception and not errors(at)
    assert wb.public.kind == "none" and not wb.public.has_rows
    assert "Now: **no public rows**" in texts(at)
    assert "Public rows removed" in texts(at)
    assert not any(b.key == "clear_public" for b in at.button)
    # a reload keeps the choice
    again = reopen(at, "app_pages/public.py")
    assert again.radio(key="public_mode").value == "none" and wb.public.kind == "none"


def test_what_if_curves_are_dropped_when_their_public_rows_are_removed():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    wb.update_settings(mechanism="jam-pgm", workload="all-2way", rounds=2, fit_iters=5,
                       final_fit_iters=10)
    go(at, "app_pages/workload.py")
    at.multiselect(key="wi_mechs").set_value(["jam-pgm"])
    at.multiselect(key="wi_eps").set_value([1.0])
    at.button[[b.label for b in at.button].index("Start what-if")].click().run()
    assert not errors(at)
    assert wb.whatif.worker is None or wb.whatif.worker.wait(120)
    at.run()
    assert "What the prediction for JAM-PGM is based on" in texts(at)
    assert wb.what_if_stale() is None
    go(at, "app_pages/public.py")
    at.radio(key="public_mode").set_value("none").run()
    go(at, "app_pages/workload.py")
    assert "public table 'public.csv'" in (wb.what_if_stale() or "")
    assert "What the prediction for" not in texts(at)
    stale = [w.value for w in at.warning if "out of date" in w.value]
    assert stale and "public table 'public.csv'" in stale[0]


def test_a_filter_after_a_flag_says_the_flag_column_is_data_again():
    from test_app_pages import flagged_csv
    at = new_app()
    wb = at.session_state["wb"]
    wb.load_upload("people.csv", flagged_csv())
    wb.set_public_flag("is_public")
    assert "is_public" not in wb.schema.names
    go(at, "app_pages/public.py")
    use_filter(at, "sex", ["F"])
    assert "is_public" in wb.schema.names
    assert "The former flag column 'is_public' is a data column again" in texts(at)


def test_a_filter_on_a_synthesised_column_says_the_public_rows_tell_nothing_about_it():
    """Under 'sex is female' every public row is female and no private row is: the
    page says so, naming the column and how to leave it out."""
    from synth_core.workbench.public import FilteredRows
    at = go(load_titanic(new_app()), "app_pages/public.py")
    wb = at.session_state["wb"]
    assert not any("say nothing about" in w.value for w in at.warning)
    use_filter(at, "sex", ["female"])
    warning = next(w.value for w in at.warning if "say nothing about" in w.value)
    assert warning.startswith("Every public row has sex in {female}")
    assert "Leave 'sex' out of the schema" in warning
    # by construction: the split's private rows hold none of the filter's values
    public = wb.public.rows.frame(wb.source)
    assert len(public) and (public["sex"].astype(str) == "female").all()
    # the way out it names: the column marks the rows and is no longer synthesised
    wb.drop_column("sex")
    at.run()
    assert not any("say nothing about" in w.value for w in at.warning)
    assert FilteredRows("sex", ("female",)).caveat(wb.schema) is None
    assert "sex" not in wb.prepare().schema.names and wb.public.kind == "filter"
