"""Real, public and synthetic distributions of a marginal on one chart
(frames and the error-scale text from synth_core.side_by_side)."""

from __future__ import annotations

import streamlit as st

from app_pages.common import CURATOR_PLOT, curator_header, show_error
from synth_core import side_by_side as sbs


def _pick(result, key: str):
    choices = sbs.marginal_choices(result.inputs.schema, result.workload.cliques)
    return st.selectbox("Column or workload marginal", choices, key=key,
                        format_func=lambda cl: " × ".join(cl))


def curator_view(run, key: str) -> None:
    """CURATOR-ONLY: real, public and synthetic shares, and the error scale on this example."""
    result = run.result
    with st.container(border=True):
        curator_header("Real, public and synthetic data side by side")
        clique = _pick(result, f"sbs_{key}")
        try:
            frame = sbs.marginal_frame(result.inputs.schema, clique, sbs.run_tables(result))
        except Exception as exc:  # noqa: BLE001 - shown inline
            show_error(exc)
            return
        st.plotly_chart(sbs.figure(frame), key=f"sbs_chart_{key}", config=CURATOR_PLOT)
        for side in (sbs.SYNTHETIC, sbs.PUBLIC):
            if (frame["table"] == side).any():
                st.caption(sbs.error_scale(frame, side).text())


def release_view(run, key: str) -> None:
    """The releasable view: the synthetic shares (and the public rows'), never the real ones."""
    result = run.result
    clique = _pick(result, f"sbs_release_{key}")
    tables = sbs.run_tables(result, real=False)
    frame = sbs.marginal_frame(result.inputs.schema, clique, tables)
    sbs.check_no_real(frame, "the Release page's chart")
    st.plotly_chart(sbs.figure(frame), key=f"sbs_release_chart_{key}")
