"""The DP synthetic data workbench: ``streamlit run app.py``.

One Workbench object (synth_core.workbench) in st.session_state carries the
work across pages; the pages in pages/ are thin views over it.
"""

import streamlit as st

from app_pages.common import PAGES, get_wb, reset_stale_widgets, sidebar

st.set_page_config(page_title="DP synthetic data workbench", page_icon=":material/shield_lock:",
                   layout="wide")

wb = get_wb()
wb.collect()  # a run that ended since the last rerun joins the session's runs
reset_stale_widgets(wb)

nav = st.navigation({
    "Workbench": [
        st.Page(PAGES["start"], title="Start", icon=":material/home:", default=True),
        st.Page(PAGES["data"], title="Data", icon=":material/table:"),
        st.Page(PAGES["public"], title="Public information", icon=":material/public:"),
        st.Page(PAGES["workload"], title="Workload and budget", icon=":material/tune:"),
        st.Page(PAGES["run"], title="Run", icon=":material/play_circle:"),
        st.Page(PAGES["release"], title="Release", icon=":material/download:"),
    ],
    "Explore": [
        st.Page(PAGES["compare"], title="Compare", icon=":material/monitoring:"),
    ],
})
sidebar(wb)
nav.run()
