"""The Data page's total privacy budget of the loaded table (synth_core.budget).

The account belongs to the table (its content's fingerprint), not to the
session: every session and every restart that loads the same table finds it.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app_pages.common import attempt, budget_text, flash, show_error, sync_widgets
from synth_core.privacy import cdp_epsilon
from synth_core.workbench import DELTA_GRID


def budget_section(wb) -> None:
    st.subheader("Total privacy budget of this table")
    st.caption("Every run on this table (Run page, each Compare run) is charged to its account "
               "before it starts and refused once the total would be passed. Runs compose by "
               "adding ρ (zCDP), released or not: picking the best of several runs is itself a "
               "use of the private data. What-if previews read no private value and cost "
               "nothing. The account belongs to this table's records: the same records in "
               "another row or column order or file format find it; a copy with rows added, "
               "removed or changed is another table, with an account of its own.")
    try:
        account = wb.dataset_budget()
    except Exception as exc:  # noqa: BLE001 - e.g. an unreadable account file
        show_error(exc)
        return
    if account is not None:
        st.markdown(f"**{account.label}**: " + budget_text(account, wb.settings.delta))
        history = account.history()
        if history:
            columns = {"run_id": "Run", "what": "What", "rho_reserved": "ρ reserved",
                       "rho_spent": "ρ spent (empty while running)", "time": "Started (UTC)"}
            st.dataframe(pd.DataFrame(history)[list(columns)].rename(columns=columns),
                         hide_index=True, key="budget_history")
        st.caption(f"Kept in `{account.path}` (with a lock file next to it). The total cannot be "
                   "changed from the app: raising it after looking at results would defeat it. "
                   "An open reservation (a run in progress) counts in full.")
        return
    st.info("No total budget is set for this table: each run is capped by its own ε only.",
            icon=":material/account_balance_wallet:")
    spent, _ = wb.table_spent()
    if spent > 0:
        st.warning(f"This session's runs have already spent ρ = {spent:.4g} (ε = "
                   f"{cdp_epsilon(spent, wb.settings.delta):.3g} at δ = {wb.settings.delta:g}) "
                   "on this table. A total counts them, so it must be above that.", icon=":material/history:")
    # a total is set for good: Enter in a field does not submit, no total is proposed, and
    # the button needs the box that says so ticked
    # the label proposed is the table's name, set again for each table loaded: a kept
    # widget value would name the previous table in a total that is never changed
    sync_widgets("budget_label", wb.loads, {"budget_label": wb.data_name or "data"})
    with st.form("budget_form", enter_to_submit=False):
        c1, c2, c3 = st.columns([2, 1, 1])
        label = c1.text_input("Label", value=wb.data_name or "data", key="budget_label",
                              help="The table's name in the history and in release reports "
                                   "(never its file's folders).")
        eps = c2.number_input("Total ε", min_value=0.01, max_value=1000.0, value=None,
                              placeholder="e.g. 3", key="budget_eps")
        delta = c3.selectbox("δ", list(DELTA_GRID), key="budget_delta",
                             index=list(DELTA_GRID).index(wb.settings.delta)
                             if wb.settings.delta in DELTA_GRID else 0)
        sure = st.checkbox("I understand that this total cannot be changed or removed from the "
                           "app once set.", key="budget_sure")
        go = st.form_submit_button("Set total budget")
    if go and eps is None:
        st.error("Type the table's total ε first.", icon=":material/edit:")
    elif go and not sure:
        st.error(f"Tick the box to set ε = {eps:g} at δ = {delta:g} as this table's total for "
                 "good.", icon=":material/lock:")
    elif go and attempt(wb.set_dataset_budget, eps, delta, label=label):
        flash(f"Total budget of '{label}' set: ε = {eps:g} at δ = {delta:g}.")
        st.rerun()
