"""Data page: load a table (upload, sample, or a file on this machine), preview it,
edit its schema."""

import streamlit as st

from app_pages.budget_section import budget_section
from app_pages.schema_review import schema_review_section
from app_pages.common import (PAGES, attempt, flash, get_wb, need_data, new_upload, show_error,
                             show_flashes, sync_widgets)
from synth_core.api import list_samples
from synth_core.disk_table import DATA_ROOTS_ENV, DISK_BACKENDS, PREVIEW_ROWS, data_roots
from synth_core.errors import SynthError
from synth_core.tables import MAX_INPUT_ENV, max_input_mb
from synth_core.workbench import DOMAIN_SOURCE_TEXT, describe_domain


def _upload_box(column, title, caption, label, types, key, action, done) -> None:
    """A bordered box with one file uploader whose new file goes to ``action(name, bytes)``;
    ``done`` (with ``{}`` for the file name) is flashed when it succeeds."""
    with column.container(border=True):
        st.markdown(f"**{title}**")
        st.caption(caption)
        up = st.file_uploader(label, type=types, key=key)
        if new_upload(up, key):
            if attempt(action, up.name, up.getvalue()):
                flash(done.format(up.name))
                st.rerun()


wb = get_wb()
st.title("Data")
show_flashes()

if wb.source is not None and wb.domain.edited:
    st.caption(":material/warning: Loading another table replaces the schema and your edits "
               "of it: download schema.json below first to keep them (declare it again "
               "after loading).")
load_col, sample_col = st.columns(2)
with load_col.container(border=True):
    st.markdown("**Upload a table** (CSV, CSV.GZ or Parquet; limit set in .streamlit/config.toml)")
    try:
        st.caption(f"Input limit: a table (uploaded, or a file on this machine loaded into "
                   f"memory) is refused past {max_input_mb():g} MB once decompressed; set "
                   f"`{MAX_INPUT_ENV}` (MB) where the app starts to change it.")
    except SynthError as exc:
        show_error(exc)
    up = st.file_uploader("Private table", type=["csv", "gz", "parquet", "pq"], key="upload_data",
                          label_visibility="collapsed")
    if new_upload(up, "upload"):
        if attempt(wb.load_upload, up.name, up.getvalue()):
            flash(f"Loaded '{up.name}'. Its domain was read off the table itself: declare a "
                  "schema, or read it off public rows, to protect it.")
            st.rerun()
with sample_col.container(border=True):
    st.markdown("**Or pick a bundled sample**")
    names = [p["name"] for p in list_samples()]
    pick = st.selectbox("Sample", names, index=names.index("titanic") if "titanic" in names else 0,
                        key="sample_pick", label_visibility="collapsed")
    if st.button("Load sample", key="load_sample"):
        if attempt(wb.load_sample, pick):
            flash(f"Loaded sample '{pick}' with its declared schema.")
            st.rerun()

with st.container(border=True):
    st.markdown("**Or use a file on this machine** (nothing is uploaded: the workbench reads the "
                "file where it lies)")
    p1, p2 = st.columns([3, 2])
    disk_path = p1.text_input("Path to a .parquet or .csv file", key="disk_path",
                              placeholder="/data/census.parquet")
    disk_backend = p2.radio("Backend", list(DISK_BACKENDS), format_func=DISK_BACKENDS.get,
                            key="disk_backend")
    st.caption(f"Allowed folders: {', '.join(f'`{r}`' for r in data_roots())} (set "
               f"`{DATA_ROOTS_ENV}`). With DuckDB the file is never loaded into memory: the "
               f"preview is its first {PREVIEW_ROWS} rows, and every count of every run is made "
               "by DuckDB; its domain must then come from a schema file or from public rows.")
    if st.button("Open file", key="open_disk"):
        if attempt(wb.load_disk, disk_path, disk_backend):
            if wb.out_of_core:
                flash(f"Opened '{wb.data_name}' ({wb.n_rows:,} rows) with DuckDB; the file stays "
                      "on disk. Next: give its domain below.")
            else:
                flash(f"Loaded '{wb.data_name}' into memory. Its domain was read off the table "
                      "itself: declare a schema, or read it off public rows, to protect it.")
            st.rerun()

if wb.data is None:
    need_data(wb)
    st.stop()

st.subheader(f"Preview: {wb.data_name}")
if wb.out_of_core:
    st.caption(f"{wb.n_rows:,} rows × {len(wb.data_columns)} columns (counted by DuckDB); the "
               f"first {len(wb.data):,} rows shown (read with LIMIT {PREVIEW_ROWS}). The file "
               f"stays on disk: `{wb.source.path}`.")
else:
    st.caption(f"{wb.n_rows:,} rows × {len(wb.data_columns)} columns; first 100 rows shown.")
st.dataframe(wb.data[wb.data_columns].head(100), height=220)

if wb.needs_domain:
    st.subheader("Schema (the domain)")
    st.warning("**This file has no domain yet.** The workbench does not read it off a file that "
               "stays on disk: that would load the whole file, and the domain (category lists, "
               "numeric bounds) would not be privacy-protected. Give it in one of these ways:",
               icon=":material/shield:")
    d1, d2, d3 = st.columns(3)
    _upload_box(d1, "Declare a schema (JSON)",
                "Category lists and numeric bounds of every column; checked against the "
                "whole file by DuckDB.", "Schema (JSON)", ["json"], "disk_schema",
                wb.load_schema_file, "Schema '{}' declared.")
    _upload_box(d2, "Upload public rows",
                "A public table with the file's columns; the domain is read off it, so every "
                "value of the file must occur in it.", "Public table",
                ["csv", "gz", "parquet", "pq"], "disk_public", wb.set_public_table,
                "Public table '{}' loaded; the domain was read off it.")
    with d3.container(border=True):
        st.markdown("**Rows of this file are public**")
        st.caption("A true/false column of the file flags the public rows; the domain is read "
                   "off them (DuckDB reads only those rows).")
        try:
            flags = wb.flag_candidates()
        except Exception as exc:  # noqa: BLE001
            show_error(exc)
            flags = []
        if flags:
            flag = st.selectbox("Flag column", flags, key="disk_flag")
            if st.button("Use this column", key="disk_flag_apply"):
                if attempt(wb.set_public_flag, flag):
                    flash(f"Rows flagged by '{flag}' are public; the domain was read off them.")
                    st.rerun()
        else:
            st.caption("No column of this file holds only true/false (yes/no, 1/0) values.")
    st.caption("Or open the file with the Memory backend: the domain is then read off the table "
               "itself (not privacy-protected).")
    st.stop()

st.subheader("Schema (the domain)")
src = wb.schema.source
box = st.warning if src == "private" else st.info
box(f"**Domain source: {DOMAIN_SOURCE_TEXT[src]}.** {describe_domain(src)}",
    icon=":material/shield:")
if wb.out_of_core:
    st.caption("The file stays on disk: every schema change is checked against all its rows by "
               "DuckDB (one pass over the columns changed), without loading it.")
b1, b2, b3 = st.columns(3)
with b1:
    schema_up = st.file_uploader("Declare a schema (JSON)", type=["json"], key="upload_schema")
    if new_upload(schema_up, "schema"):
        if attempt(wb.load_schema_file, schema_up.name, schema_up.getvalue()):
            flash(f"Schema '{schema_up.name}' declared.")
            st.rerun()
with b2:
    if wb.public.kind != "none":
        if st.button("Read the domain off the public rows", key="schema_from_public",
                     help="A domain read off public rows costs no privacy."):
            if attempt(wb.infer_schema_from_public):
                flash("The domain now comes from the public rows.")
                st.rerun()
with b3:
    st.download_button("Download schema.json", wb.domain.json_bytes(), file_name="schema.json",
                       mime="application/json", key="dl_schema")

st.dataframe(wb.domain.table(), hide_index=True)
if wb.domain.left_out:
    st.warning("Not in the schema (and so not in the synthetic data): " + "; ".join(
        f"**{c}** ({why})" for c, why in wb.domain.left_out), icon=":material/visibility_off:")
schema_review_section(wb)

st.markdown("**Edit a column**")
if wb.domain.private_columns:
    st.caption("Read off the private table (not protected): "
               + ", ".join(f"**{c}**" for c in wb.schema.names if c in wb.domain.private_columns)
               + ". Edit each with public knowledge and tick the box below it, or leave it out; "
               "once none is left the domain counts as declared.")
# set, not only forgotten, when the table changes: a browser keeps showing a dropped
# widget's last value (another table's column) while the page reads the default
sync_widgets("edit_column", wb.loads, {"edit_column": wb.schema.names[0]})
col = st.selectbox("Column", list(wb.schema.names), key="edit_column")
spec = wb.schema.column(col)
# the form shows the column's domain as it is now: after a load or an applied edit (a
# new domain version), not the values typed for another table's column of that name
sync_widgets(f"edit_form_{col}", (wb.loads, wb.domain.version), {
    f"kind_{col}": spec.kind,
    f"cats_{col}": ", ".join(str(c) for c in spec.categories or ()),
    f"lower_{col}": "" if spec.lower is None else str(spec.lower),
    f"upper_{col}": "" if spec.upper is None else str(spec.upper),
    f"bins_{col}": "" if spec.bins is None else str(spec.bins),
    f"missing_{col}": spec.missing, f"clip_{col}": spec.clip})
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
    clip = st.checkbox("Clip values past the bounds into the first or last bin (numeric)",
                       value=spec.clip, key=f"clip_{col}",
                       help="With bounds from public knowledge (e.g. incomes up to 250,000), a "
                            "few extreme records no longer stretch the bins; clipping each "
                            "record changes no privacy cost.")
    declared = False
    if col in wb.domain.private_columns:
        declared = st.checkbox(
            "These values are public knowledge, not read off the private table", value=False,
            key=f"declared_{col}",
            help="This column's domain was read off the private table, which leaks its values. "
                 "Replace them with what is publicly known (e.g. the full list of categories, "
                 "a published age range) and tick this: the column then counts as declared.")
    applied = st.form_submit_button("Apply to column")
if applied:
    try:
        wb.update_column(col, kind=kind, categories=cats, lower=lower, upper=upper, bins=bins,
                         missing=missing, declared=declared, clip=clip and kind == "numeric")
        flash(f"Column '{col}' updated.")
        st.rerun()
    except SynthError:
        pass  # recorded in wb.domain.errors, shown next to the column below
    except Exception as exc:  # noqa: BLE001
        show_error(exc)
if st.button(f"Leave '{col}' out of the schema", key="drop_column"):
    if attempt(wb.drop_column, col):
        flash(f"Column '{col}' left out of the schema.")
        st.rerun()
if col in wb.domain.errors:
    st.error(wb.domain.errors[col], icon=":material/error:")
    st.caption("The schema was not changed.")

budget_section(wb)

st.page_link(PAGES["public"], label="Next: public information", icon=":material/arrow_forward:")
