"""Data page: load a table (upload or sample), preview it, edit its schema."""

import streamlit as st

from app_pages.common import PAGES, attempt, flash, get_wb, need_data, show_error, show_flashes
from synth_core.errors import SynthError
from synth_core.workbench import DOMAIN_SOURCE_TEXT, describe_domain

wb = get_wb()
st.title("Data")
show_flashes()

load_col, sample_col = st.columns(2)
with load_col.container(border=True):
    st.markdown("**Upload a table** (CSV, CSV.GZ or Parquet; limit set in .streamlit/config.toml)")
    up = st.file_uploader("Private table", type=["csv", "gz", "parquet", "pq"], key="upload_data",
                          label_visibility="collapsed")
    if up is not None and st.session_state.get("_loaded_upload") != (up.name, up.size):
        st.session_state["_loaded_upload"] = (up.name, up.size)
        if attempt(wb.load_upload, up.name, up.getvalue()):
            flash(f"Loaded '{up.name}'. Its domain was read off the table itself: declare a "
                  "schema, or read it off public rows, to protect it.")
            st.rerun()
with sample_col.container(border=True):
    st.markdown("**Or pick a bundled sample**")
    names = [p["name"] for p in wb.samples()]
    pick = st.selectbox("Sample", names, index=names.index("titanic") if "titanic" in names else 0,
                        key="sample_pick", label_visibility="collapsed")
    if st.button("Load sample", key="load_sample"):
        if attempt(wb.load_sample, pick):
            flash(f"Loaded sample '{pick}' with its declared schema.")
            st.rerun()

if not need_data(wb):
    st.stop()

st.subheader(f"Preview: {wb.data_name}")
st.caption(f"{len(wb.data):,} rows × {len(wb.data_columns)} columns; first 100 rows shown.")
st.dataframe(wb.data[wb.data_columns].head(100), height=220)

st.subheader("Schema (the domain)")
src = wb.schema.source
box = st.warning if src == "private" else st.info
box(f"**Domain source: {DOMAIN_SOURCE_TEXT[src]}.** {describe_domain(src)}",
    icon=":material/shield:")
b1, b2, b3 = st.columns(3)
with b1:
    schema_up = st.file_uploader("Declare a schema (JSON)", type=["json"], key="upload_schema")
    if schema_up is not None and st.session_state.get("_loaded_schema") != (schema_up.name, schema_up.size):
        st.session_state["_loaded_schema"] = (schema_up.name, schema_up.size)
        if attempt(wb.load_schema_file, schema_up.name, schema_up.getvalue()):
            flash(f"Schema '{schema_up.name}' declared.")
            st.rerun()
with b2:
    if wb.public_mode != "none":
        if st.button("Read the domain off the public rows", key="schema_from_public",
                     help="A domain read off public rows costs no privacy."):
            if attempt(wb.infer_schema_from_public):
                flash("The domain now comes from the public rows.")
                st.rerun()
with b3:
    st.download_button("Download schema.json", wb.schema_json(), file_name="schema.json",
                       mime="application/json", key="dl_schema")

st.dataframe(wb.schema_table(), hide_index=True)
if wb.left_out:
    st.warning("Not in the schema (and so not in the synthetic data): " + "; ".join(
        f"**{c}** ({why})" for c, why in wb.left_out), icon=":material/visibility_off:")

st.markdown("**Edit a column**")
col = st.selectbox("Column", list(wb.schema.names), key="edit_column")
spec = wb.column_spec(col)
with st.form(f"edit_{col}", border=True):
    kind = st.radio("Kind", ["categorical", "numeric"], horizontal=True,
                    index=0 if spec.kind == "categorical" else 1, key=f"kind_{col}")
    cats = st.text_input("Categories (comma-separated; categorical columns)",
                         value=", ".join(str(c) for c in spec.categories or ()), key=f"cats_{col}")
    c1, c2, c3 = st.columns(3)
    lower = c1.text_input("Lower bound (numeric)",
                          value="" if spec.lower is None else str(spec.lower), key=f"lower_{col}")
    upper = c2.text_input("Upper bound (numeric)",
                          value="" if spec.upper is None else str(spec.upper), key=f"upper_{col}")
    bins = c3.text_input("Bins (numeric)", value="" if spec.bins is None else str(spec.bins),
                         key=f"bins_{col}")
    missing = st.checkbox("Has a missing-value code (empty cells allowed)", value=spec.missing,
                          key=f"missing_{col}")
    applied = st.form_submit_button("Apply to column")
if applied:
    try:
        wb.update_column(col, kind=kind, categories=cats, lower=lower, upper=upper, bins=bins,
                         missing=missing)
        flash(f"Column '{col}' updated.")
        st.rerun()
    except SynthError:
        pass  # recorded in wb.schema_errors, shown next to the column below
    except Exception as exc:  # noqa: BLE001
        show_error(exc)
if st.button(f"Leave '{col}' out of the schema", key="drop_column"):
    if attempt(wb.drop_column, col):
        flash(f"Column '{col}' left out of the schema.")
        st.rerun()
if col in wb.schema_errors:
    st.error(wb.schema_errors[col], icon=":material/error:")
    st.caption("The schema was not changed.")

st.page_link(PAGES["public"], label="Next: public information", icon=":material/arrow_forward:")
