"""Data page section: a schema proposed for review (synth_core.schema_infer), the
user's overrides of it, and using it."""

import json

import streamlit as st

from app_pages.common import attempt, flash, show_error
from synth_core.errors import SynthError
from synth_core.schema import INFER_MAX_CATEGORIES as LOADER_MAX_CATEGORIES

INTRO = ("The workbench reads the table (and the public rows, if any) and proposes a kind for "
         "every column, with the reason: likely identifiers are left out, whole-number codes "
         "(zip, FIPS) become categories, numbers with empty cells stay numeric with a "
         "missing-value code, and columns mixing numbers and text are explained. Override any "
         "decision below, then use the schema.")


def _overrides(columns: list[str], key: str) -> dict:
    """The user's choices: columns to make numeric or categorical, or to leave out."""
    c1, c2, c3 = st.columns(3)
    return {"numeric": c1.multiselect("Numeric columns", columns, key=f"{key}_numeric"),
            "categorical": c2.multiselect("Categorical columns", columns,
                                          key=f"{key}_categorical"),
            "drop": c3.multiselect("Leave out", columns, key=f"{key}_drop")}


def _show_proposal(proposal, in_use) -> None:
    """The warning, the flagged columns, how the proposal differs from the schema
    ``in_use``, and one row per column."""
    if proposal.read_off_private:
        st.warning(f"**Values read off the private table** (columns "
                   f"{', '.join(proposal.read_off_private)}): the category lists and bounds of "
                   "these columns are a function of the private records that no mechanism "
                   "protects. Replace them with public knowledge (a code list, a known range) "
                   "before a release: download the file, edit it, and declare it.",
                   icon=":material/shield:")
    if proposal.drops:
        st.markdown("**Left out:** " + ", ".join(proposal.drops))
    if proposal.codes:
        st.markdown("**Flagged as codes (categorical):** " + ", ".join(proposal.codes))
    if proposal.one_per_record:
        st.warning("**One category per record** (columns "
                   f"{', '.join(proposal.one_per_record)}): nearly every row has its own value, "
                   "so the category list is almost the column itself, published with a schema "
                   "read off the private table. Keep such a column only if its values are "
                   "public knowledge; else leave it out.", icon=":material/shield:")
    differences = proposal.differences(in_use)
    if differences:
        st.info("**The proposal differs from the schema in use** (nothing changes until you "
                "press Use this schema):\n" + "\n".join(f"- {d}" for d in differences)
                + f"\n\nThe schema in use was read on loading, where a column of numbers "
                f"with at most {LOADER_MAX_CATEGORIES} distinct values keeps one category per "
                f"value; the proposal bins numbers with more than {proposal.bins} distinct "
                "values and leaves likely identifiers out.", icon=":material/compare_arrows:")
    st.dataframe(proposal.table("app"), hide_index=True,
                 column_config={"note": st.column_config.TextColumn(width="large")})


def schema_review_section(wb) -> None:
    """Propose, show, override and use a schema for the table in memory."""
    with st.expander("Review a proposed schema", expanded=wb.schema.source == "private"):
        if wb.out_of_core:
            st.caption("A proposed schema is read off a table in memory; this file stays on "
                       "disk. Open it with the Memory backend, or declare a schema.")
            return
        st.caption(INTRO)
        key = f"review_{wb.loads}"
        choices = _overrides(wb.data_columns, key)
        try:
            proposal = wb.propose_schema(**choices)
        except SynthError as exc:
            show_error(exc)
            return
        _show_proposal(proposal, wb.schema)
        c1, c2 = st.columns(2)
        if c1.button("Use this schema", key=f"{key}_use", type="primary"):
            if attempt(wb.use_proposed_schema, proposal):
                flash("The reviewed schema is in use."
                      + (" Its values were read off the private table: it is not "
                         "privacy-protected." if proposal.read_off_private else ""))
                st.rerun()
        c2.download_button("Download it to edit (schema.json)",
                           json.dumps(proposal.to_json("app"), indent=2) + "\n",
                           file_name="schema.json", mime="application/json",
                           key=f"{key}_download")
