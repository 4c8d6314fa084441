"""Plain-language notes beside a run's numbers (text from synth_core.explain)."""

from __future__ import annotations

import streamlit as st

from synth_core import explain
from synth_core.api import PRIVATE_DOMAIN_WARNING
from synth_core.privacy import rho_from_epsilon_delta
from synth_core.workbench import mechanism_title

NOTE_TITLES = {"epsilon": "ε (epsilon)", "delta": "δ (delta)", "rho": "ρ (rho, zCDP)",
               "neighbours": "Neighbour relation"}


def privacy_notes(notes: dict, title: str) -> None:
    """An expander with one note per privacy figure."""
    with st.expander(title, icon=":material/help:"):
        for key, text in notes.items():
            st.markdown(f"**{NOTE_TITLES[key]}.** {text}")


def settings_notes(s) -> None:
    """The notes for the settings of the next run (nothing spent yet; n is known once
    the run has split off any public rows)."""
    try:
        rho = rho_from_epsilon_delta(s.epsilon, s.delta)
    except Exception:  # noqa: BLE001 - the Start button reports bad settings
        return
    privacy_notes(explain.setting_notes(s.epsilon, s.delta, rho, s.neighbours, None),
                  "What ε, δ, ρ and the neighbour relation mean here")


def run_notes(run) -> None:
    """After a finished run: the privacy figures with what it spent, and unspent budget."""
    result = run.result
    privacy_notes(explain.number_notes(result.report),
                  f"What run {run.number}'s ε, δ, ρ and neighbour relation mean")
    note = explain.unspent_note(result.events, result.ledger.total, result.ledger.spent)
    if note:
        st.info(note, icon=":material/savings:")


def baseline(run, workload_error: float, proxy_error: float | None) -> None:
    """CURATOR-ONLY: whether the run beat the public rows alone, inside the curator box."""
    s = run.settings
    out = explain.baseline_note(s.mechanism, s.epsilon, workload_error, proxy_error,
                                title=mechanism_title(s.mechanism, s.options))
    if out is not None:
        beats, text = out
        (st.success if beats else st.warning)(text, icon=":material/balance:")


def pool_table(event, table, key: str) -> None:
    """CURATOR-ONLY: the pool's exact scores and selection probabilities."""
    note = explain.selection_note(event)
    if note:
        st.caption(note)
    st.dataframe(table, hide_index=True, key=f"pool_table_{key}", height=240,
                 column_config={"probability": st.column_config.NumberColumn(
                     "probability", format="%.4f",
                     help="Chance of being chosen by the noisy selection, "
                          "softmax(ε_sel · score / (2 · sensitivity)); sums to 1 over the pool."),
                     "score": st.column_config.NumberColumn(
                         "score (exact)", format="%.4g",
                         help="Exact score from the private data (curator-only).")})


def bounds_table(report) -> None:
    """The release's bounds, a vacuous one reading "no information", under a line
    that counts them and says why the others have none."""
    st.markdown(explain.bounds_summary(report))
    st.dataframe(explain.bounds_display_frame(report), hide_index=True)


def report_warnings(report, *, skip_domain: bool = False) -> None:
    """The report's warnings (what the run ignored or could not protect, a
    mechanism's own notes), one box each; ``skip_domain`` leaves out the one on a
    domain read off the private table where the page already shows its note."""
    for message in report.get("warnings", []):
        if skip_domain and message == PRIVATE_DOMAIN_WARNING:
            continue
        st.warning(message, icon=":material/info:")
