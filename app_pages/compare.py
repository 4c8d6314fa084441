"""Compare page: mechanisms x epsilon grid x seeds in the background.

CURATOR-ONLY: every figure here is a true error computed from the private
data; every comparison run spends privacy budget on the private data.
"""

import streamlit as st

from dataclasses import replace

from app_pages.common import (CURATOR_PLOT, curator_header, data_page, keep_widget, kept_widget,
                              show_error, show_finished_worker)
from app_pages.mechanism_pick import pick_epsilons, pick_mechanisms
from synth_core import charts, explain
from synth_core.privacy import cdp_epsilon
from synth_core.side_by_side import WORKLOAD_ERROR_SCALE
from synth_core.workbench import REFUSED, frame_parquet_bytes
from synth_core.workbench.compare import compare_plan
from synth_core.workbench.guide import key_title
from synth_core.workbench.runs import TIME_NOTE, cost_frame, describe_total

POLL_SECONDS = 1.0

wb = data_page("Compare")
s = wb.settings

st.markdown("Run several mechanisms over a grid of epsilons, a few seeds each, on the same "
            f"data, public information and workload (`{s.workload}`; rounds, fit iterations "
            "and delta from the Workload and budget page). Results are saved as they arrive; "
            "starting the same comparison again resumes it.")
st.warning("Every comparison run uses the private data and spends its own privacy budget (the "
           "sidebar adds them up): each run is charged to the table's total budget (Data page) "
           "before it starts, and a comparison that would pass it is refused. Choosing the best "
           "of these runs is itself a use of the private data. The errors shown are "
           "**curator-only**: for choosing settings, not for release.", icon=":material/warning:")

mechs = pick_mechanisms(wb, "cmp_mechs", extra=("public-only",))
eps = pick_epsilons("cmp_eps")
seeds = st.number_input("Seeds per setting", min_value=1, max_value=20, value=2,
                        key=kept_widget("cmp_seeds"))
keep_widget("cmp_seeds")


def cost_preview() -> None:
    """Before Start: how many runs, the budget they spend on the private data and
    the time estimate of the run-time model, per setting and in all."""
    try:
        jobs, saved = wb.compare_jobs(mechs, eps, seeds)
        plans = [replace(p, mechanism=key_title(p.mechanism))
                 for p in compare_plan(jobs, wb.settings, wb.estimate_seconds)]
        account = wb.dataset_budget()
    except Exception as exc:  # noqa: BLE001  (the choice is checked again on Start)
        st.caption(f"No cost preview yet: {exc}")
        return
    frame = cost_frame(plans)
    total = frame.iloc[-1]
    rho = float(total["rho total"])
    delta = wb.settings.delta
    c1, c2, c3 = st.columns(3)
    c1.metric("Runs to start", len(jobs),
              help=f"{len(mechs)} mechanism(s) x {len(eps)} epsilon(s) x {seeds} seed(s)"
                   + (f"; {saved} already saved, not run again" if saved else ""))
    c2.metric("Budget on the private data (rho)", f"{rho:.4g}",
              help=f"epsilon = {cdp_epsilon(rho, delta):.4g} at delta = {delta:g}" if rho > 0
              else "no private data is read")
    c3.metric("CPU time estimate", describe_total(plans), help=TIME_NOTE)
    left = (f"The table's total budget has {account.left_text(delta)} left."
            if account is not None else "The table has no total budget set (Data page): "
            "runs are not capped, only counted.")
    st.caption(f"**Cost before you start: {len(jobs)} run(s)"
               + (f" ({saved} already saved are not run again)" if saved else "")
               + f", rho = {rho:.4g} in all"
               + (f" (ε = {cdp_epsilon(rho, delta):.3g} at δ = {delta:g}, as runs add up)"
                  if rho > 0 else "")
               + ".** Each run spends its own rho "
               "(rho_from_epsilon_delta(epsilon, delta); 0 for public-only) on the private "
               "data: the comparison is refused up front when together they would pass the "
               "table's total, and each run is charged to it before it reads the data. "
               f"{left} {TIME_NOTE}")
    with st.expander("Cost per setting"):
        st.dataframe(frame, hide_index=True, key="cmp_cost")


cost_preview()
go = st.button("Start comparison", type="primary", disabled=wb.compare.running, key="cmp_go")
if go:
    try:
        jobs, skipped = wb.compare_jobs(mechs, eps, seeds)
        wb.start_compare(mechs, eps, seeds)
        st.toast(f"{len(jobs)} runs started" + (f"; {skipped} already saved" if skipped else ""))
        st.rerun()
    except Exception as exc:  # noqa: BLE001
        show_error(exc)
if st.button("Stop comparison", disabled=not wb.compare.running, key="cmp_stop"):
    wb.compare.stop()
    st.toast("Stopping after the run in progress…")


@st.fragment(run_every=POLL_SECONDS if wb.compare.running else None)
def progress():
    sweep = wb.compare.worker
    if sweep is None:
        return
    if show_finished_worker(sweep, "_cmp_seen", rerun=wb.compare.running is False,
                            stopped="Comparison stopped after {done} of {total} runs; start it "
                                    "again to resume.",
                            finished="Comparison finished: {total} runs."):
        return
    done, total = sweep.progress
    cur = sweep.current or {}
    st.progress(done / max(1, total), text=f"run {done + 1} of {total}: "
                f"{key_title(cur.get('mechanism', '…'))} at ε = {cur.get('epsilon', 0):g}, seed "
                f"{cur.get('seed', 0)}")


progress()

if wb.compare.worker is not None and wb.compare.worker.done:
    refused = [r for r in wb.compare.worker.rows if r.get("status") == REFUSED]
    if refused:
        st.error(f"{len(refused)} run(s) of the last comparison were not run: "
                 f"{refused[0]['error']}", icon=":material/account_balance_wallet:")

try:
    results, marginals = wb.compare_results()
except Exception as exc:  # noqa: BLE001
    show_error(exc)
    st.stop()
if results.empty:
    st.info("No saved results for this setup yet.", icon=":material/info:")
    st.stop()

with st.container(border=True):
    curator_header("Workload error against epsilon")
    try:
        ref = wb.public_reference_error()
    except Exception:  # noqa: BLE001
        ref = None
    labels = {m: key_title(m) for m in {*results["mechanism"], *marginals["mechanism"]}}
    st.plotly_chart(charts.compare_figure(results, ref, labels), key="cmp_fig",
                    config=CURATOR_PLOT)
    st.caption(WORKLOAD_ERROR_SCALE + " Bars run from the smallest to the largest seed. The "
               "public-only baseline is the public rows rescaled to n records by randomised "
               "rounding, so it sits near, not on, the grey line of the public rows "
               "themselves (each seed rounds differently); it spends no budget, so epsilon "
               "does not change it.")
    summary = charts.compare_summary(results)
    note = explain.compare_note(summary, labels, ref)
    if note:
        st.markdown(note)
    shown = summary.assign(mechanism=summary["mechanism"].map(lambda m: labels.get(m, m)))
    if shown["std"].isna().all():       # one run each: no spread to show
        shown = shown.drop(columns="std")
    st.dataframe(shown.rename(columns={"mechanism": "Mechanism", "epsilon": "ε",
                                       "mean": "mean error", "min": "lowest", "max": "highest",
                                       "std": "sd over seeds", "runs": "runs",
                                       "rounds": "rounds run (most)"}),
                 hide_index=True)
    failed = results[results["status"] == "failed"]
    if len(failed):
        st.caption(f"{len(failed)} run(s) failed: " + "; ".join(
            f"{labels.get(m, m)} ε={e:g}: {err}" for m, e, err in
            zip(failed["mechanism"], failed["epsilon"], failed["error"])))
    if not marginals.empty:
        grid = sorted(marginals["epsilon"].astype(float).unique())
        at = st.select_slider("Per-marginal view at epsilon", grid, value=grid[-1],
                              key="cmp_marg_eps")
        st.plotly_chart(charts.per_marginal_figure(marginals, at, labels=labels),
                        key="cmp_marg_fig", config=CURATOR_PLOT)
    store = wb.compare_store()
    st.caption(f"Saved in `{store.root}` (one file per run; `synth sweep` uses the same store "
               "format).")
    c1, c2 = st.columns(2)
    c1.download_button("CURATOR-ONLY results (Parquet)", frame_parquet_bytes(results),
                       file_name=f"curator-only-{store.root.name}.parquet",
                       mime="application/octet-stream", key="cmp_dl")
    if not marginals.empty:
        c2.download_button("CURATOR-ONLY per-marginal errors (Parquet)",
                           frame_parquet_bytes(marginals),
                           file_name=f"curator-only-{store.root.name}-marginals.parquet",
                           mime="application/octet-stream", key="cmp_dl_marg")
