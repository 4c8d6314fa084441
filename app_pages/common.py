"""Helpers shared by the pages: the session's Workbench, errors, the sidebar.

Pages stay thin: the logic lives in synth_core.workbench, runner and charts.
"""

from __future__ import annotations

import logging

import streamlit as st

from synth_core.errors import SynthError
from synth_core.workbench import DOMAIN_SOURCE_TEXT, Workbench

log = logging.getLogger("workbench")

PAGES = {
    "start": "app_pages/start.py",
    "data": "app_pages/data.py",
    "public": "app_pages/public.py",
    "workload": "app_pages/workload.py",
    "run": "app_pages/run.py",
    "release": "app_pages/release.py",
    "compare": "app_pages/compare.py",
}


def get_wb() -> Workbench:
    """The session's one state object."""
    if "wb" not in st.session_state:
        st.session_state["wb"] = Workbench()
    return st.session_state["wb"]


def sync_widgets(group: str, token, values: dict) -> None:
    """Set widget keys from the workbench when its state changed since they were
    last set (``token`` differs) or when Streamlit dropped them (page not shown).

    Keyed widgets keep their own value across reruns and ignore a new default,
    so a widget that mirrors workbench state is set through session state.
    """
    marker = f"_sync_{group}"
    if st.session_state.get(marker) != token or any(k not in st.session_state for k in values):
        for key, value in values.items():
            st.session_state[key] = value
        st.session_state[marker] = token


#: widget keys whose options depend on the loaded table
DATA_KEYS = ("wl_targets", "wl_custom", "wl_k", "edit_column", "filter_column", "filter_values",
             "public_flag", "public_columns", "public_mode", "cmp_mechs")
#: widget key prefixes of the schema editor (one set per column)
EDITOR_PREFIXES = ("kind_", "cats_", "lower_", "upper_", "bins_", "missing_")


def reset_stale_widgets(wb: Workbench) -> None:
    """Forget widget values that belonged to a previous table or schema."""
    token = (wb.loads, wb.schema.names if wb.schema is not None else ())
    if st.session_state.get("_data_token") != token:
        for key in DATA_KEYS:
            st.session_state.pop(key, None)
        st.session_state["_data_token"] = token
    if st.session_state.get("_schema_token") != wb.schema_version:
        for key in [k for k in st.session_state if isinstance(k, str)
                    and k.startswith(EDITOR_PREFIXES)]:
            st.session_state.pop(key, None)
        st.session_state["_schema_token"] = wb.schema_version


def error_text(exc: Exception) -> str:
    if isinstance(exc, SynthError):
        return exc.message + (f" {exc.hint}" if exc.hint else "")
    return f"Unexpected error ({type(exc).__name__}): {exc}. Nothing you loaded was lost."


def show_error(exc: Exception, where=None) -> None:
    """An inline error with the message and the hint, never a traceback."""
    if not isinstance(exc, SynthError):
        log.exception("unexpected error in the workbench", exc_info=exc)
    (where or st).error(error_text(exc), icon=":material/error:")


def attempt(fn, *args, where=None, **kwargs) -> bool:
    """Call ``fn``; on an error show it inline and return False."""
    try:
        fn(*args, **kwargs)
        return True
    except Exception as exc:  # noqa: BLE001 - every error is shown, none escapes
        show_error(exc, where)
        return False


def flash(message: str) -> None:
    """A success message shown once after the next rerun."""
    get_wb().messages.append(message)


def show_flashes() -> None:
    wb = get_wb()
    while wb.messages:
        st.success(wb.messages.pop(0), icon=":material/check_circle:")


#: Plotly settings of curator-only charts: no image export button
CURATOR_PLOT = {"modeBarButtonsToRemove": ["toImage"], "displaylogo": False}


def curator_header(what: str) -> None:
    st.markdown(f"##### :red-background[CURATOR-ONLY, not releasable] {what}")
    st.caption("Computed from the private data without noise. Shown to you, the data curator, "
               "to judge the run; never part of any download or release file.")


def need_data(wb: Workbench) -> bool:
    if wb.has_data:
        return True
    st.info("No table is loaded yet. Load a bundled sample or upload a table first.",
            icon=":material/info:")
    st.page_link(PAGES["data"], label="Go to Data", icon=":material/table:")
    return False


def data_page(title: str) -> Workbench:
    """The top of a page that works on the loaded table: the title, pending
    messages, and (with no table loaded) a pointer to the Data page and a stop.
    Returns the session's Workbench."""
    wb = get_wb()
    st.title(title)
    show_flashes()
    if not need_data(wb):
        st.stop()
    return wb


def sidebar(wb: Workbench) -> None:
    with st.sidebar:
        st.markdown("### Session")
        if wb.has_data:
            st.markdown(f"**Data:** `{wb.data_name}`  \n{len(wb.data):,} rows × "
                        f"{len(wb.schema.names)} columns")
            src = wb.schema.source
            text = DOMAIN_SOURCE_TEXT[src]
            if src == "private":
                st.markdown(f":orange[**Domain:** {text}]")
            else:
                st.markdown(f"**Domain:** {text}")
            st.markdown(f"**Public:** {wb.public_summary()}")
        else:
            st.markdown("**Data:** none loaded")
        s = wb.settings
        st.markdown(f"**Mechanism:** {s.mechanism}  \n**ε = {s.epsilon:g}, δ = {s.delta:g}** "
                    f"({s.neighbours})  \n**Workload:** `{s.workload}`")
        try:
            b = wb.budget_summary()
            st.markdown(f"**Budget per run:** ρ = {b['rho']:.4g}")
            st.markdown(f"**Spent this session:** ρ = {b['session_rho']:.4g} "
                        f"(ε = {b['session_epsilon']:.3g} at δ = {s.delta:g}) over "
                        f"{b['runs']} run(s)"
                        + (f" and {b['compare_runs']} comparison run(s)" if b["compare_runs"] else ""))
        except SynthError as exc:
            show_error(exc)
        if wb.running:
            st.markdown(f":orange[**Running:** {wb.worker.label} (progress on the Run page)]")
        if wb.comparing:
            st.markdown(f":orange[**Comparing:** {wb.sweep.label} (progress on the Compare "
                        "page)]")
