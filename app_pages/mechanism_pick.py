"""The several-mechanism pick of the Compare page and the what-if preview: the
entries of the Workload page's guided list (synth_core.workbench.guide) that
the public information marked allows, each under its full name; the others
named beside the list with their reasons (a multiselect cannot disable single
options)."""

from __future__ import annotations

from typing import Mapping

import streamlit as st

from app_pages.common import keep_widget, kept_widget, sync_widgets
from synth_core.privacy import MAX_EPSILON, MIN_RUN_EPSILON
from synth_core.workbench import EPSILON_GRID, parse_epsilons
from synth_core.workbench.guide import ChoiceList, choice_list, choice_of


def session_choices(wb) -> ChoiceList:
    """The entries the session's public information and neighbour relation allow."""
    return choice_list(public_rows=wb.public.has_rows, public_columns=bool(wb.public.columns),
                       neighbours=wb.settings.neighbours)


def pick_mechanisms(wb, key: str, extra: tuple[str, ...] = (), container=st,
                    note=st, not_offered: Mapping[str, str] | None = None) -> list[str]:
    """A multiselect of the available entries (their keys, shown by full name) in
    ``container``, by default the saved run's entry and ``extra`` where
    available (again whenever the saved mechanism or the entries change), and in
    ``note`` a caption naming the entries left out and why (``not_offered``:
    entry key -> why this widget does not offer it)."""
    choices = session_choices(wb)
    s = wb.settings
    not_offered = dict(not_offered or {})
    keys = [k for k in choices.keys if k not in not_offered]
    preferred = (choice_of(s.mechanism, s.options).key, *extra)
    defaults = [k for k in choices.defaults(preferred) if k in keys]
    kept_widget(key)
    sync_widgets(key, (wb.loads, preferred, tuple(keys)), {key: defaults})
    picked = container.multiselect("Mechanisms", keys, default=defaults,
                                   format_func=choices.title, key=key)
    keep_widget(key)
    left_out = choices.unavailable_text(f"the public information marked ({wb.public_summary()})"
                                        f" and {s.neighbours} neighbours")
    if left_out:
        note.caption(left_out + " What is marked is set on the Public information page, "
                               "the neighbours on the Workload and budget page.")
    for k, why in not_offered.items():
        if k in choices.keys:
            note.caption(f"{choices.title(k)} is not offered here: {why}")
    return picked


def pick_epsilons(key: str, container=st) -> list[float]:
    """A multiselect of epsilons from the grid or typed (e.g. 0.3), in ``container``;
    values that are not positive numbers are named in an error and left out."""
    picked = container.multiselect("Epsilon grid", list(EPSILON_GRID), default=[0.1, 1.0, 10.0],
                                   key=kept_widget(key), accept_new_options=True,
                                   help="Pick values from the list. To add one that is not "
                                        "in it (e.g. 0.5), type it and click it in the list: "
                                        "Enter picks every value that contains what you "
                                        "typed (0.3 also matches 0.03).")
    keep_widget(key)
    eps, not_epsilons = parse_epsilons(picked)
    if not_epsilons:
        container.error(f"Not an epsilon, left out: {', '.join(not_epsilons)}. Type a number "
                        f"from {MIN_RUN_EPSILON:g} to {MAX_EPSILON:,.0f}, such as 0.3.",
                        icon=":material/error:")
    return eps
