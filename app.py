"""The DP synthetic data workbench: ``streamlit run app.py``.

One Workbench object (synth_core.workbench) carries the work across pages; the
pages in app_pages/ are thin views over it. It is kept in a process-wide
registry under a random token in the URL (app_pages/sessions.py), so a reload
or a reconnect finds it again.
"""

import streamlit as st

from app_pages.common import PAGES, get_wb, reset_stale_widgets, sidebar
from app_pages.sessions import show_session_notice, workbench_lock

st.set_page_config(page_title="DP synthetic data workbench", page_icon=":material/shield_lock:",
                   layout="wide")

wb = get_wb()
with workbench_lock(wb):  # sessions that share a Workbench (same link) take turns
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
    show_session_notice()
    sidebar(wb)
    nav.run()
