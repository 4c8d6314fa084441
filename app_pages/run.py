"""Run page: start/stop a run in the background and watch its rounds live."""

import streamlit as st

from app_pages.common import (CURATOR_PLOT, PAGES, attempt, budget_text, curator_header,
                              data_page, mode_text, show_error)
from synth_core import charts
from synth_core.mechanisms import MECHANISMS
from synth_core.runner import FAILED, FINISHED, RUNNING, STOPPED
from synth_core.errors import SynthError
from synth_core.explain import pool_frame, workload_error_help
from synth_core.workbench import events_frame
from app_pages import explain as notes, side_by_side

POLL_SECONDS = 0.7

wb = data_page("Run")
s = wb.settings

ignores_rows = (wb.public.has_rows and s.mechanism in MECHANISMS
                and not MECHANISMS[s.mechanism].capabilities.public_rows)
st.markdown(f"**{wb.mechanism_title()}** at **ε = {s.epsilon:g}**, δ = {s.delta:g} "
            f"({s.neighbours}); workload `{s.workload}`; rounds "
            f"{s.rounds if s.rounds is not None else 'the default'}; public: "
            f"{wb.public_summary()}"
            + (f" (rows not used by {wb.mechanism_title()})" if ignores_rows else "")
            + f"; mode: {mode_text(s.run_mode, s.seed)}.")
notes.settings_notes(s)
try:
    secs, how = wb.estimate_seconds()
    st.caption(f"Rough run-time estimate: ~{secs:.0f} s ({how}). Change the settings on the "
               "Workload and budget page.")
except Exception:  # noqa: BLE001 - the estimate is optional
    pass
try:
    account = wb.dataset_budget()
except Exception as exc:  # noqa: BLE001 - shown, the Start button then refuses too
    account = None
    show_error(exc)
past_total = None
if account is not None:
    st.caption(f"Charged to the table's total budget before it starts ({account.label}: "
               f"{budget_text(account, s.delta)}).")
    try:      # said before Start, as the Compare page's cost preview does
        account.refuse_unless_fits(wb.budget_summary()["rho"], "this run", s.delta)
    except SynthError as exc:
        past_total = exc
        st.warning(str(exc), icon=":material/block:")
        st.page_link(PAGES["workload"], label="Lower epsilon", icon=":material/tune:")
fit = wb.mechanism_fit()
if not fit.available:
    st.warning(f"**{fit.choice.title} cannot run with the public information marked "
               f"({fit.refusal}).** {fit.reason_in('app')}", icon=":material/block:")
    st.page_link(PAGES["workload"], label="Choose the mechanism", icon=":material/tune:")
c1, c2, _ = st.columns([1, 1, 4])
if c1.button("Start run", type="primary",
             disabled=wb.running or not fit.available or past_total is not None,
             key="start_run"):
    if attempt(wb.start_run):
        st.rerun()
if c2.button("Stop", disabled=not wb.running, key="stop_run"):
    wb.stop_run()
    st.toast("Stopping after the round in progress…")


def show_rounds(events, status, planned, key):
    """Progress, round table, charts and the curator-only candidate pool."""
    rounds_done = max([e.round for e in events], default=0)
    if planned:
        st.progress(min(1.0, rounds_done / planned),
                    text=f"round {rounds_done} / {planned} ({status})")
    else:
        st.progress(1.0 if status == FINISHED else 0.0,
                    text=f"round {rounds_done} (adaptive number of rounds; {status})")
    if not events:
        st.caption("Preparing the data and the first round…" if status == RUNNING else
                   "No rounds: this mechanism measured nothing from the private data.")
        return
    st.plotly_chart(charts.rounds_figure(events, planned), key=f"rounds_{key}")
    left, right = st.columns(2)
    left.plotly_chart(charts.budget_figure(events), key=f"budget_{key}")
    right.plotly_chart(charts.sigma_size_figure(events), key=f"sigma_{key}")
    st.markdown("**Rounds** (releasable: these go into the report)")
    st.dataframe(events_frame(events), hide_index=True, key=f"table_{key}")
    selectable = [e for e in events if e.curator is not None]
    if selectable:
        with st.container(border=True):
            curator_header("Candidate pool of a round")
            numbers = [e.round for e in selectable]
            latest = numbers[-1]
            pick = st.selectbox("Round", ["latest"] + numbers, key=f"pool_round_{key}",
                                format_func=lambda r: f"latest (round {latest})" if r == "latest"
                                else f"round {r}")
            pick = latest if pick == "latest" else pick
            ev = next(e for e in selectable if e.round == pick)
            table = pool_frame(ev)
            n_pub = int((table["source"] == "public").sum())
            st.caption(f"{len(table)} candidates ({n_pub} public, {len(table) - n_pub} private); "
                       f"chosen: {' × '.join(ev.cliques[0])} ({ev.source}).")
            st.plotly_chart(charts.candidates_figure(table), key=f"pool_{key}", config=CURATOR_PLOT)
            notes.pool_table(ev, table, f"{key}_{pick}")


#: the run this page shows live: started and not collected yet. app.py collects
#: a run that ended before this script run, but a short run (a fraction of a
#: second) can end while the page is drawn, so two reads of ``wb.running`` here
#: could disagree. This one read decides, and the live view polls until a full
#: rerun has collected the run.
started = wb.worker


@st.fragment(run_every=POLL_SECONDS if started is not None else None)
def live():
    """The run in progress, redrawn every POLL_SECONDS; once it has ended (or
    another tab on the same link collected it), one full rerun shows the outcome."""
    worker = wb.worker
    events, status = worker.snapshot() if worker is not None else ([], None)
    if status != RUNNING:
        st.rerun()  # app.py collects the ended run; the page redraws it
    st.subheader(f"Running: {worker.label}")
    cfg = worker.synthesizer.config
    st.caption(f"Mode: {mode_text(cfg.run_mode, cfg.seed)}.")
    if worker.stop_requested:
        st.caption("Stop requested: the run stops after the round in progress.")
    show_rounds(events, status, worker.rounds_planned, "live")


if started is not None:
    live()
elif wb.runs:
    run = wb.runs[-1]
    st.subheader(f"Run {run.number}: {run.label}")
    if run.ok:   # the mode the report states
        privacy = run.result.report["privacy"]   # the seed is curator-only, never in the report
        st.caption(f"Mode: {mode_text(privacy['mode'], run.result.config.seed)}.")
    else:
        st.caption(f"Mode: {mode_text(run.settings.run_mode, run.settings.seed)}.")
    if run.status == FAILED:
        st.error(f"The run failed: {run.failure.text()}", icon=":material/error:")
        st.caption(f"Budget charged before it failed: rho = {run.rho_spent:.4g}. Your data and "
                   "settings are unchanged.")
    elif run.status == STOPPED:
        st.warning(f"Stopped after round {run.events[-1].round if run.events else 0}. "
                   f"Budget charged: rho = {run.rho_spent:.4g}. A stopped run has no synthetic "
                   "data to release.", icon=":material/stop_circle:")
    else:
        st.success(f"Finished in {run.seconds:.1f} s: {len(run.result.synthetic):,} synthetic "
                   f"rows, rho spent {run.rho_spent:.4g} of {run.result.ledger.total:.4g}.",
                   icon=":material/check_circle:")
        notes.report_warnings(run.result.report)
        st.page_link(PAGES["release"], label="Go to Release: download the synthetic data and "
                     "report", icon=":material/download:")
        with st.container(border=True):
            curator_header("Workload error of this run")
            diag = run.result.curator_diagnostics()
            proxy = run.result.public_proxy_error()
            m1, m2 = st.columns(2)
            help_text = workload_error_help(len(run.result.workload.cliques))
            m1.metric("Workload error of the synthetic data (curator-only)",
                      f"{diag.workload_error:.4f}", help=help_text)
            if proxy is not None:
                m2.metric("Public proxy error, the public rows alone (curator-only)",
                          f"{proxy:.4f}", help=workload_error_help(
                              len(run.result.workload.cliques), "the public rows"))
            notes.baseline(run, diag.workload_error, proxy)
        side_by_side.curator_view(run, f"run{run.number}")
        notes.run_notes(run)
    show_rounds(run.events, run.status, run.events[-1].rounds_planned if run.events else None,
                f"run{run.number}")
else:
    st.info("Press **Start run**. The run goes on in the background; this page shows every "
            "round as it happens and you can stop it at any time.", icon=":material/info:")
