"""The Workload and budget page's what-if preview: predicted workload error
against epsilon from public information only, at zero privacy cost."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dataclasses import replace

from app_pages.common import keep_widget, kept_widget, show_error, show_finished_worker
from app_pages.mechanism_pick import pick_epsilons, pick_mechanisms
from synth_core import charts
from synth_core.side_by_side import WORKLOAD_ERROR_SCALE
from synth_core.whatif import (ACCURACY_NOTE, NOT_PREDICTED, STANDINS, ranking_note,
                                target_note)
from synth_core.workbench.guide import key_title
from synth_core.workbench.runs import TIME_NOTE, cost_frame, describe_total
from synth_core.workbench.what_if import ASSUMED_N_RANGE, DEFAULT_ASSUMED_N, what_if_plan

POLL_SECONDS = 1.0


def whatif_section(wb) -> None:
    st.subheader("What-if preview (zero privacy cost)")
    st.caption("Predict the workload error against epsilon before spending any budget: the "
               "mechanism itself runs on a stand-in table built from public information only "
               "(never the private table), with its own simulated ledger. Uses the workload and "
               "hyper-parameters saved above. Every epsilon gets an estimate at once (hollow "
               "markers: from the noise the mechanism would add, no run); stand-in runs then "
               "replace the estimates one by one (filled markers) and recalibrate the rest.")
    standins = wb.what_if_standins()
    standin = st.radio("Stand-in for the private table", standins, format_func=STANDINS.get,
                       horizontal=True, key="wi_standin_" + "-".join(standins))
    c1, c2, c3 = st.columns([2, 2, 1])
    below = st.container()   # the entries left out, under the three boxes
    mechs = pick_mechanisms(wb, "wi_mechs", container=c1, note=below,
                            not_offered=NOT_PREDICTED)
    eps = pick_epsilons("wi_eps", container=c2)
    seeds = c3.number_input("Seeds", min_value=1, max_value=10, value=1,
                            key=kept_widget("wi_seeds"))
    keep_widget("wi_seeds")
    assumed = None
    if wb.what_if_needs_assumed_n():
        assumed = st.number_input(
            "Rows to assume (unbounded DP: the private row count is not public)",
            min_value=ASSUMED_N_RANGE[0], max_value=ASSUMED_N_RANGE[1], value=DEFAULT_ASSUMED_N,
            step=100, key="wi_assumed_n")
    cost_preview(wb, mechs, eps, int(seeds))
    go = st.button("Start what-if", disabled=wb.whatif.running, key="wi_go")
    if go:
        try:
            worker = wb.start_what_if(mechs, eps, int(seeds), standin,
                                      None if assumed is None else int(assumed))
            st.toast("What-if started" if worker else "What-if already computed (cached)")
            st.rerun()
        except Exception as exc:  # noqa: BLE001
            show_error(exc)
    if wb.whatif.running and st.button("Stop what-if", key="wi_stop"):
        wb.whatif.stop()

    @st.fragment(run_every=POLL_SECONDS if wb.whatif.running else None)
    def live():
        w = wb.whatif.worker
        if w is not None and not show_finished_worker(
                w, "_wi_seen", stopped="What-if stopped after {done} of {total} stand-in runs."):
            done, total = w.progress
            cur = w.current or {}
            st.progress(done / max(1, total),
                        text=f"stand-in run {done + 1} of {total}: "
                             f"{key_title(cur.get('mechanism', '…'))} "
                             f"at ε = {cur.get('epsilon', 0):g}, seed {cur.get('seed', 0)}")
        was = wb.what_if_stale()
        if was is not None:   # its basis is gone: the curves are not shown
            st.warning(f"The last what-if was based on public information that is no longer "
                       f"marked ({was}); its curves are out of date and not shown. Press "
                       "**Start what-if** for a preview from what is marked now "
                       f"({wb.public_summary()}).", icon=":material/update:")
            return
        show_curves(wb.whatif.curves())

    live()


def cost_preview(wb, mechs, eps, seeds: int) -> None:
    """Before Start: how many stand-in runs, their budget (none) and the time
    estimate of the run-time model."""
    try:
        plans = [replace(p, mechanism=key_title(p.mechanism))
                 for p in what_if_plan(mechs, eps, seeds, wb.settings, wb.estimate_seconds)]
    except Exception as exc:  # noqa: BLE001  (the choice is checked again on Start)
        st.caption(f"No cost preview yet: {exc}")
        return
    frame = cost_frame(plans)
    runs = int(frame.iloc[-1]["runs"])
    c1, c2, c3 = st.columns(3)
    c1.metric("Stand-in runs", runs,
              help=f"{len(mechs)} mechanism(s) x {len(eps)} epsilon(s) x {seeds} seed(s)")
    c2.metric("Budget on the private data", "none",
              help="stand-in runs never read the private table; their ledgers are simulated")
    c3.metric("CPU time estimate", describe_total(plans), help=TIME_NOTE)
    st.caption(f"**Cost before you start: {runs} stand-in run(s), no privacy budget** (they "
               "never read the private table). The error estimates for every epsilon "
               "appear at once and measured points replace them as each stand-in run "
               f"finishes, the fastest mechanisms first. {TIME_NOTE}")


def show_curves(curves) -> None:
    """The chart and table of the what-if curves (estimates and measured points),
    what they are based on, and their failures."""
    if not curves:
        return
    shown = [c for c in curves if c.points]
    if shown:
        st.plotly_chart(charts.whatif_figure(shown, {c.mechanism: key_title(c.mechanism)
                                                     for c in shown}), key="wi_fig")
        if not all(c.complete for c in shown):
            st.caption("Hollow markers are estimates (no run yet); filled markers are measured "
                       "by a stand-in run.")
        single = all(c.seeds <= 1 for c in shown)
        st.caption(WORKLOAD_ERROR_SCALE + " A prediction is an estimate, not a bound: "
                   + ("with one seed no spread is shown, and the figures' last digits mean "
                      "little; more seeds show how much the stand-in runs vary."
                      if single else "its bars show only how the stand-in runs vary over "
                                     "seeds, not how far the real error may be.")
                   + " " + ACCURACY_NOTE)
        table = pd.concat([c.frame() for c in shown], ignore_index=True)
        st.dataframe(table.assign(mechanism=table["mechanism"].map(key_title)), hide_index=True,
                     key="wi_table")
        target = st.number_input("Target workload error (optional)", min_value=0.001,
                                 max_value=1.999, value=None, step=0.01, key="wi_target",
                                 placeholder="e.g. 0.25",
                                 help="Which epsilon of the grid each mechanism is predicted "
                                      "to need for this error.")
        if target is not None:
            for c in shown:
                st.markdown(target_note(c, target, key_title(c.mechanism)))
    for basis in dict.fromkeys(c.basis for c in curves):
        names = ", ".join(key_title(c.mechanism) for c in curves if c.basis == basis)
        st.info(f"**What the prediction for {names} is based on.** {basis}",
                icon=":material/info:")
    for c in curves:
        if c.flat_note:
            st.warning(f"**{key_title(c.mechanism)}: a flat prediction.** {c.flat_note}",
                       icon=":material/trending_flat:")
        for f in c.failures:
            st.warning(f"{key_title(c.mechanism)}, {f}")
    ranking = ranking_note(shown)
    if ranking:
        st.warning(f"**Ranking mechanisms on this stand-in.** {ranking}",
                   icon=":material/swap_vert:")
    if any(c.domain_warning for c in curves):
        st.warning(curves[0].domain_warning or "", icon=":material/warning:")
    st.success("No privacy budget was spent: these predictions used public information only "
               "(the session's total is unchanged).", icon=":material/savings:")
