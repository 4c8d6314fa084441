"""Start page: what the workbench does, and the bundled samples in one click."""

import streamlit as st

from app_pages.common import PAGES, attempt, flash, get_wb, show_flashes
from synth_core.api import list_samples

wb = get_wb()
st.title("Differentially private synthetic data")
show_flashes()
st.markdown(
    "Make a synthetic copy of a sensitive table with a **differential privacy** guarantee, "
    "using **public data** (rows or columns that are not sensitive) to get more accuracy "
    "from the same privacy budget.")

st.markdown("""
**The flow, one page each (left):**

1. **Data**: upload a CSV/Parquet table or pick a sample; check the schema (the domain).
2. **Public information**: public rows (a second table, or rows of this one) and public columns.
3. **Workload and budget**: which marginals must be accurate; epsilon and delta; the mechanism.
4. **Run**: watch the mechanism choose, round by round, what to measure (public or private).
5. **Release**: download the synthetic data, the privacy report and a command that repeats the run.
""")

st.subheader("Start from a bundled sample")
samples = list_samples()
if not samples:
    st.warning("The bundled samples (sample_data/) are missing; upload a table on the Data page.")
#: the small sample a first run should take (seconds, not minutes), shown first
FIRST_SAMPLE = "titanic"
samples = sorted(samples, key=lambda p: p["name"] != FIRST_SAMPLE)
if any(p["name"] == FIRST_SAMPLE for p in samples):
    st.caption("New here? Start with **Titanic** (1,008 private rows, runs take seconds); the "
               "Adult samples (32,384 rows) reproduce the JAM-PGM paper's splits and take "
               "minutes.")
cols = st.columns(2)
for i, p in enumerate(samples):
    with cols[i % 2].container(border=True):
        st.markdown(f"**{p.get('title', p['name'])}**")
        st.caption(p.get("description", ""))
        if st.button(f"Load {p['name']}", key=f"sample_{p['name']}",
                     type="primary" if p["name"] == FIRST_SAMPLE else "secondary"):
            if attempt(wb.load_sample, p["name"]):
                flash(f"Loaded sample '{p['name']}'. Next: check the Data page, or go straight "
                      "to Run.")
                st.rerun()

if wb.has_data:
    st.divider()
    st.markdown(f"Loaded: **{wb.data_name}**. Continue:")
    c1, c2, c3 = st.columns(3)
    c1.page_link(PAGES["data"], label="Data", icon=":material/table:")
    c2.page_link(PAGES["workload"], label="Workload and budget", icon=":material/tune:")
    c3.page_link(PAGES["run"], label="Run", icon=":material/play_circle:")
