"""The several-mechanism pick of the Compare page and the what-if preview: the
entries of the Workload page's guided list (synth_core.workbench.guide) that
the public information marked allows, each under its full name; the others
named beside the list with their reasons (a multiselect cannot disable single
options)."""

from __future__ import annotations

import streamlit as st

from synth_core.workbench.guide import ChoiceList, choice_list, choice_of


def session_choices(wb) -> ChoiceList:
    """The entries the session's public information and neighbour relation allow."""
    return choice_list(public_rows=wb.public.has_rows, public_columns=bool(wb.public.columns),
                       neighbours=wb.settings.neighbours)


def pick_mechanisms(wb, key: str, extra: tuple[str, ...] = (), container=st,
                    note=st) -> list[str]:
    """A multiselect of the available entries (their keys, shown by full name) in
    ``container``, by default the saved run's entry and ``extra`` where
    available, and in ``note`` a caption naming the entries left out and why."""
    choices = session_choices(wb)
    s = wb.settings
    preferred = (choice_of(s.mechanism, s.options).key, *extra)
    picked = container.multiselect("Mechanisms", choices.keys, default=choices.defaults(preferred),
                                   format_func=choices.title, key=key)
    left_out = choices.unavailable_text(f"the public information marked ({wb.public_summary()})"
                                        f" and {s.neighbours} neighbours")
    if left_out:
        note.caption(left_out + " What is marked is set on the Public information page, "
                               "the neighbours on the Workload and budget page.")
    return picked
