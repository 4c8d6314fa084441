"""Release page: the synthetic data, the report, the privacy statement and
the command that repeats the run. Nothing curator-only appears here."""

import streamlit as st

from app_pages import explain as notes, side_by_side
from app_pages.common import PAGES, get_wb, show_error, show_flashes
from synth_core.workbench import ledger_frame, measurements_frame
from synth_core.workbench.command import reproduce_notebook

wb = get_wb()
st.title("Release")
show_flashes()
ok_runs = [r for r in wb.runs if r.ok]
if not ok_runs:
    st.info("No finished run yet. Start one on the Run page.", icon=":material/info:")
    st.page_link(PAGES["run"], label="Go to Run", icon=":material/play_circle:")
    st.stop()

labels = {r.number: f"Run {r.number}: {r.label}" for r in ok_runs}
number = st.selectbox("Run", list(labels)[::-1], format_func=labels.get, key="release_run")
run = wb.run_by_number(number)
try:
    files = wb.release_files(run)
except Exception as exc:  # noqa: BLE001
    show_error(exc)
    st.stop()
report = run.result.report
if report["privacy"].get("seeded"):
    st.warning("Not fit for publication: this research-mode run was seeded, and anyone who learns "
               "or guesses the seed can regenerate its noise and remove it. Publish a release-mode "
               "run (Workload and budget page: mode Release).", icon=":material/gpp_bad:")

st.subheader("Downloads")
st.caption("These files hold only releasable values (checked: no curator-only field). Their "
           f"names start with `run{run.number}-`, so the files of two runs stay apart.")
d = st.columns(3) + st.columns(3)   # two rows: the labels fit their buttons
prefix = f"run{run.number}-"
d[0].download_button("Synthetic data (CSV)", files["synthetic.csv"],
                     file_name=prefix + "synthetic.csv", mime="text/csv", type="primary",
                     key="dl_csv")
d[1].download_button("Synthetic data (Parquet)", files["synthetic.parquet"],
                     file_name=prefix + "synthetic.parquet", mime="application/octet-stream",
                     key="dl_parquet")
d[2].download_button("Report (JSON)", files["report.json"], file_name=prefix + "report.json",
                     mime="application/json", key="dl_report")
d[3].download_button("Schema (JSON)", files["schema.json"], file_name=prefix + "schema.json",
                     mime="application/json", key="dl_schema_release")
d[4].download_button("Reproduce (shell)", files["reproduce.sh"], file_name=prefix + "reproduce.sh",
                     mime="text/x-shellscript", key="dl_script")
try:
    notebook = reproduce_notebook(run.reproduce, run.result.report)
except Exception as exc:  # noqa: BLE001
    show_error(exc)
else:
    d[5].download_button("Reproduce (notebook)", notebook, file_name=prefix + "reproduce.ipynb",
                         mime="application/x-ipynb+json", key="dl_notebook")

st.subheader("Privacy statement")
st.info(report["privacy"]["statement"], icon=":material/shield_lock:")
selection = wb.release_selection(run)
if selection is not None:
    st.warning(selection["statement"] + " The downloaded report says so too "
               "(`release_selection`).", icon=":material/stacks:")
if not report["domain"]["protected"]:
    st.warning(report["domain"]["note"], icon=":material/warning:")
notes.report_warnings(report, skip_domain=True)   # the domain's note is just above
pub = report["public_information"]
st.markdown(f"**Mechanism:** {run.label}  \n**Public rows:** {pub['rows'] or 'none'}  \n"
            "**Public columns:** "
            f"{', '.join(pub['columns']) or 'none'}  \n**Workload:** "
            f"{report['workload']['description']} ({len(report['workload']['cliques'])} marginals)")

st.subheader("Synthetic data (first 50 rows)")
st.dataframe(run.result.synthetic.head(50), height=220)
st.markdown("**Distribution of the synthetic data** (beside the public rows, if any)")
side_by_side.release_view(run, str(run.number))

left, right = st.columns(2)
with left:
    st.markdown("**Ledger** (every privacy charge, rho-zCDP)")
    st.dataframe(ledger_frame(report), hide_index=True)
with right:
    st.markdown("**Measurements** (released with their noisy answers in the report)")
    st.dataframe(measurements_frame(report), hide_index=True)

st.subheader("Uncertainty of released marginals (95% bounds, computed from released values only)")
bounds = report.get("marginal_bounds") or {}
if bounds.get("available"):
    st.caption("Each bound: with probability at least 95% (each marginal on its own), the "
               "synthetic marginal is within this L1 distance of the true one, in counts and "
               "divided by n (AIM paper, section 5; docs/uncertainty.md). A marginal without a "
               "bound says why; public rows never count (their bias is unknown).")
    notes.bounds_table(report)
else:
    st.info(bounds.get("note", "No bounds in this report."), icon=":material/info:")

st.subheader("Repeat this run from the command line")
st.code(run.reproduce, language="bash")
