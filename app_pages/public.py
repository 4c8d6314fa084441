"""Public information page: public rows, public columns, and the curator-only
public proxy error."""

import streamlit as st

from app_pages.common import (CURATOR_PLOT, PAGES, attempt, curator_header, data_page, flash,
                              new_upload, show_error, sync_widgets)
from synth_core import charts

wb = data_page("Public information")

st.markdown("Public data is used **without privacy protection** and costs no budget to "
            "measure. Only mark data public if it really is (for example a published sample, "
            "an older release, or records whose owners consented).")
st.info(f"Now: **{wb.public_summary()}**", icon=":material/public:")
overlap = wb.public_overlap_note()
if overlap:
    st.warning(overlap, icon=":material/content_copy:")

st.subheader("Public rows")
modes = {"none": "No public rows", "table": "Upload a public table",
         "flag": "A true/false column of the loaded table", "filter": "A filter on the loaded table"}
sync_widgets("public_mode", (wb.loads, wb.public.kind), {"public_mode": wb.public.kind})
mode = st.radio("Where the public rows come from", list(modes), format_func=modes.get,
                index=list(modes).index(wb.public.kind), horizontal=True, key="public_mode")

if mode == "none":
    if wb.public.kind != "none" and attempt(wb.clear_public_rows):   # choosing it takes effect
        flash("Public rows removed: no row is public now.")
        st.rerun()
elif mode == "table":
    if wb.public.kind == "table":
        table = wb.public.rows
        st.caption(f"Current public table: {table.name}, {len(table.table):,} rows.")
    up = st.file_uploader("Public table (same columns as the data)",
                          type=["csv", "gz", "parquet", "pq"], key="upload_public")
    if new_upload(up, "public"):
        if attempt(wb.set_public_table, up.name, up.getvalue()):
            flash(f"Public table '{up.name}' loaded.")
            st.rerun()
elif mode == "flag":
    flags = wb.flag_candidates()
    if not flags:
        st.warning("The loaded table has no column that holds only true/false (yes/no, 1/0) "
                   "values. Use a filter instead, or upload a public table.")
    else:
        current_flag = wb.public.rows.flag_column
        current = flags.index(current_flag) if current_flag in flags else 0
        flag = st.selectbox("Rows where this column is true are public", flags, index=current,
                            key="public_flag")
        if st.button("Use this column", key="apply_flag"):
            if attempt(wb.set_public_flag, flag):
                flash(f"Rows flagged by '{flag}' are public; the column is no longer part of "
                      "the schema.")
                st.rerun()
elif wb.out_of_core:
    st.info("A row filter needs the table in memory, and this file stays on disk (DuckDB). "
            "Open it with the Memory backend on the Data page, or add a true/false column to "
            "the file and use **A true/false column of the loaded table**.",
            icon=":material/info:")
else:
    cols = list(wb.schema.names)
    active = wb.public.rows if wb.public.kind == "filter" else None
    shown = {"filter_column": active.column if active and active.column in cols else cols[0],
             "filter_values": [str(v) for v in active.values] if active else []}
    sync_widgets("public_filter", (wb.loads, wb.public.rows), shown)   # the active filter
    fcol = st.selectbox("Column", cols, index=cols.index(shown["filter_column"]),
                        key="filter_column")
    values = sorted(wb.data[fcol].dropna().astype(str).unique().tolist())[:500]
    kept = [v for v in st.session_state.get("filter_values", []) if v in values]
    st.session_state["filter_values"] = kept    # values of another column are not options
    fvals = st.multiselect("Rows with one of these values are public", values,
                           default=kept, key="filter_values")
    if st.button("Use this filter", key="apply_filter"):
        old_flag = wb.public.rows.flag_column if wb.public.kind == "flag" else None
        if attempt(wb.set_public_filter, fcol, fvals):
            flash(f"Rows where {fcol} is one of {', '.join(fvals)} are public."
                  + (f" The former flag column '{old_flag}' is a data column again (it is in "
                     "the schema and will be synthesised); drop it on the Data page if it "
                     "only marked rows." if old_flag and old_flag in wb.schema.names else ""))
            st.rerun()
    caveat = active.caveat(wb.schema) if active else None
    if caveat:
        st.warning(caveat, icon=":material/filter_alt:")

st.subheader("Public columns")
st.caption("Columns known for every record (e.g. published census attributes). The guarantee "
           "then protects the remaining columns only.")
sync_widgets("public_columns", (wb.loads, wb.public.columns),
             {"public_columns": list(wb.public.columns)})
chosen = st.multiselect("Public columns", list(wb.schema.names),
                        default=[c for c in wb.public.columns if c in wb.schema.names],
                        key="public_columns")
if tuple(chosen) != wb.public.columns:
    if attempt(wb.set_public_columns, chosen):
        st.rerun()
fit = wb.mechanism_fit()
if not fit.available:
    st.warning(f"The chosen mechanism cannot run with this public information "
               f"({fit.refusal}). {fit.reason_in('app')}", icon=":material/warning:")

if wb.public.kind != "none":
    with st.container(border=True):
        curator_header("Public proxy error")
        st.caption("How far the public rows' marginals are from the private ones (JAM-PGM's "
                   "public proxy error: L1 distance of normalised marginals), per workload "
                   f"marginal of `{wb.settings.workload}` and on average. Small values mean "
                   "public measurements are good stand-ins for private ones.")
        try:
            overall, table = wb.public_proxy_errors()
            st.metric("Public proxy workload error (curator-only)", f"{overall:.4f}")
            st.plotly_chart(charts.proxy_error_figure(table), key="proxy_chart",
                            config=CURATOR_PLOT)
            with st.expander("All marginals (curator-only)"):
                st.dataframe(table, hide_index=True)
        except Exception as exc:  # noqa: BLE001
            show_error(exc)

st.page_link(PAGES["workload"], label="Next: workload and budget", icon=":material/arrow_forward:")
