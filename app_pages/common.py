"""Helpers shared by the pages: the session's Workbench, errors, the sidebar.

Pages stay thin: the logic lives in synth_core.workbench, runner and charts.
"""

from __future__ import annotations

import logging

import streamlit as st

from app_pages.sessions import session_workbench
from synth_core.errors import SynthError
from synth_core.privacy import cdp_epsilon
from synth_core.runner import FAILED, STOPPED
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

#: the run modes the Workload and budget page offers (synth_core.privacy.resolve_mode)
MODE_LABELS = {
    "release": "Release (discrete Gaussian from OpenDP, secure randomness, not reproducible)",
    "research": "Research (seeded, continuous Gaussian, reproducible)",
}


def mode_text(mode: str, seed) -> str:
    """How a run's mode reads on the pages."""
    if mode == "release":
        return "release (OpenDP discrete Gaussian, secure randomness, not reproducible)"
    return (f"research (seed {seed}: reproducible)" if seed is not None
            else "research (fresh seed)")


def get_wb() -> Workbench:
    """The session's one state object (app_pages/sessions.py: found again after a
    reload by the token in the URL; also in ``st.session_state["wb"]``)."""
    return session_workbench()


def sync_widgets(group: str, token, values: dict) -> None:
    """Set widget keys from the workbench when its state changed since they were
    last set (``token`` differs) or when Streamlit dropped them (page not shown).

    Keyed widgets keep their own value across reruns and ignore a new default,
    so a widget that mirrors workbench state is set through session state.
    Only a new ``token`` resets every key: a key Streamlit dropped (its widget
    was not drawn in the last run, e.g. the rounds box of a mechanism without
    rounds, or a run cut short by the user's next click) is refilled alone, so
    the choices the user has made but not saved yet stay.

    Pages also pass the same ``values`` as the widgets' own defaults (``value=``,
    ``index=``). Streamlit tells the browser a session-state value only in the run
    that set it; a browser that mounts the widget afresh later (e.g. after that
    run was cut short under load) falls back to the widget's default. With the
    saved setting as default, such a widget shows the saved value instead of its
    minimum, and Save cannot store minimums the user never chose.
    """
    marker = f"_sync_{group}"
    fresh = st.session_state.get(marker) != token
    for key, value in values.items():
        if fresh or key not in st.session_state:
            st.session_state[key] = value
    st.session_state[marker] = token


#: widget keys whose options depend on the loaded table
DATA_KEYS = ("wl_targets", "wl_custom", "wl_k", "edit_column", "filter_column", "filter_values",
             "public_flag", "public_columns", "public_mode", "cmp_mechs", "disk_flag")
#: widget key prefixes of the schema editor (one set per column)
EDITOR_PREFIXES = ("kind_", "cats_", "lower_", "upper_", "bins_", "missing_", "clip_",
                   "declared_")


def kept_widget(key: str) -> str:
    """``key``, its last value restored if Streamlit dropped it while its page was not
    shown (a revisited Compare page showed the default picks above the results of
    other ones); the value is kept by :func:`keep_widget`."""
    kept = f"_kept_{key}"
    if key not in st.session_state and kept in st.session_state:
        st.session_state[key] = st.session_state[kept]
    return key


def keep_widget(key: str) -> None:
    """Remember widget ``key``'s value for :func:`kept_widget`."""
    if key in st.session_state:
        st.session_state[f"_kept_{key}"] = st.session_state[key]


def reset_stale_widgets(wb: Workbench) -> None:
    """Forget widget values that belonged to a previous table or schema."""
    token = (wb.loads, wb.schema.names if wb.schema is not None else ())
    if st.session_state.get("_data_token") != token:
        for key in DATA_KEYS:
            st.session_state.pop(key, None)
            st.session_state.pop(f"_kept_{key}", None)
        st.session_state["_data_token"] = token
    if st.session_state.get("_schema_token") != wb.domain.version:
        for key in [k for k in st.session_state if isinstance(k, str)
                    and k.startswith(EDITOR_PREFIXES)]:
            st.session_state.pop(key, None)
        st.session_state["_schema_token"] = wb.domain.version


def error_text(exc: Exception) -> str:
    if isinstance(exc, SynthError):
        return exc.text("app")
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


def new_upload(up, key: str) -> bool:
    """Whether the uploader's file ``up`` was just uploaded, not kept by the uploader
    from an earlier rerun. Every upload has its own ``file_id``: the same file
    uploaded again (after a refused attempt, or after another table was loaded)
    is new; a name-and-size check treated it as done and silently ignored it."""
    if up is None or st.session_state.get(f"_loaded_{key}") == up.file_id:
        return False
    st.session_state[f"_loaded_{key}"] = up.file_id
    return True


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
    if wb.needs_domain:
        st.info(f"The file `{wb.data_name}` is open (it stays on disk), but its domain is not "
                "declared yet: declare a schema or give public rows on the Data page.",
                icon=":material/info:")
        st.page_link(PAGES["data"], label="Go to Data", icon=":material/table:")
        return False
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


#: how the sidebar names a split of the loaded table into private and public rows
SPLIT_LABEL = {"flag": "Under the flag column", "filter": "Under the public-row filter"}


def sidebar(wb: Workbench) -> None:
    with st.sidebar:
        st.markdown("### Session")
        if wb.has_data:
            split = wb.private_public_counts()
            st.markdown(f"**Data:** `{wb.data_name}`  \n{wb.n_rows:,} rows × "
                        f"{len(wb.schema.names)} columns"
                        + (" (on disk, counted by DuckDB)" if wb.out_of_core else "")
                        + (f"  \n{SPLIT_LABEL[wb.public.kind]}: **{split[0]:,} private**, "
                           f"{split[1]:,} public rows" if split else ""))
            src = wb.schema.source
            text = DOMAIN_SOURCE_TEXT[src]
            if src == "private":
                st.markdown(f":orange[**Domain:** {text}]")
            else:
                st.markdown(f"**Domain:** {text}")
            st.markdown(f"**Public:** {wb.public_summary()}")
        elif wb.needs_domain:
            st.markdown(f"**Data:** `{wb.data_name}` (on disk, {wb.n_rows:,} rows)  \n"
                        ":orange[**Domain:** not declared yet (Data page)]")
        else:
            st.markdown("**Data:** none loaded")
        s = wb.settings
        st.markdown(f"**Mechanism:** {wb.mechanism_title()}  \n"
                    f"**ε = {s.epsilon:g}, δ = {s.delta:g}** ({s.neighbours})  \n"
                    f"**Workload:** `{s.workload}`  \n"
                    f"**Mode:** {s.run_mode}" + (f" (seed {s.seed})" if s.seed is not None else ""))
        try:
            b = wb.budget_summary()
            st.markdown(f"**Budget per run:** ρ = {b['rho']:.4g}")
            st.markdown(f"**Spent this session:** ρ = {b['session_rho']:.4g} "
                        f"(ε = {b['session_epsilon']:.3g} at δ = {s.delta:g}) over "
                        f"{b['runs']} run(s)"
                        + (f" and {b['compare_runs']} comparison run(s)" if b["compare_runs"] else "")
                        + (", and the run in progress so far" if b["running"] else ""))
        except SynthError as exc:
            show_error(exc)
        dataset_budget_line(wb)
        if wb.running:
            st.markdown(f":orange[**Running:** {wb.worker.label} (progress on the Run page)]")
        if wb.compare.running:
            st.markdown(f":orange[**Comparing:** {wb.compare.worker.label} (progress on the Compare "
                        "page)]")


def budget_text(account, delta: float) -> str:
    """``spent of total`` in rho, and in epsilon at ``delta``."""
    spent, total = account.spent, account.total_rho
    eps = (lambda r: cdp_epsilon(r, delta) if r > 0 else 0.0)
    return (f"ρ = {spent:.4g} of {total:.4g} spent, {account.remaining:.4g} left "
            f"(ε = {eps(spent):.3g} of {eps(total):.3g} at δ = {delta:g}; budgets add up in "
            f"ρ, so what is left is one more run of ε up to {eps(account.remaining):.3g})")


def dataset_budget_line(wb: Workbench) -> None:
    """The sidebar's line on the loaded table's total budget (its account)."""
    if wb.data is None:
        return
    try:
        account = wb.dataset_budget()
    except SynthError as exc:
        show_error(exc)
        return
    if account is None:
        st.markdown("**Table's total budget:** not set (Data page)")
        return
    st.markdown(f"**Table's total budget** ({account.label}): "
                + budget_text(account, wb.settings.delta))


def show_finished_worker(worker, seen_key: str, *, stopped: str, finished: str | None = None,
                         rerun: bool = True) -> bool:
    """Inside a polling fragment: False while a background worker (a Compare sweep, a
    what-if) runs; once it is done, its outcome (``stopped``/``finished`` may use
    ``{done}`` and ``{total}``), one full rerun so the page shows the results, and True."""
    if not worker.done:
        return False
    done, total = worker.progress
    if worker.status == FAILED:
        st.error(worker.failure.text())
    elif worker.status == STOPPED:
        st.warning(stopped.format(done=done, total=total))
    elif finished:
        st.success(finished.format(done=done, total=total))
    if rerun and st.session_state.get(seen_key) != id(worker):
        st.session_state[seen_key] = id(worker)
        st.rerun()
    return True
