"""The guided mechanism list of the Workload and budget page, and the full
mechanism names on every page.

The list holds every mechanism and the conditional variants (Conditional AIM,
Conditional vJAM-PGM); each entry says what it does with the public
information marked, and entries a run would refuse are marked unavailable
with the reason, which names the control on the pages that changes it.
"""

from __future__ import annotations

import pytest

from test_app_pages import (errors, go, load_titanic, new_app, sidebar_text, texts,
                            wait_for_run)
from synth_core.errors import ConfigError
from synth_core.mechanisms import MECHANISMS
from synth_core.workbench import Workbench, guided_choices, mechanism_choices

KEYS = [c.key for c in mechanism_choices()]
#: the expected verdict per public-information state: the unavailable entries
#: and the short reason of each (the others are available)
NEEDS_COLUMNS = "needs public columns"
NEEDS_ROWS = "needs public rows"
NO_COLUMNS = "does not use public columns"
ONLY_CONDITIONAL = "public columns only with conditional generation"
UNAVAILABLE = {
    "rows": {"aim+conditional": NEEDS_COLUMNS, "vjam-pgm": NEEDS_COLUMNS,
             "vjam-pgm+conditional": NEEDS_COLUMNS, "vpmw": NEEDS_COLUMNS,
             "vgem-pub": NEEDS_COLUMNS},
    "both": {"aim": ONLY_CONDITIONAL, "mwem-pgm": NO_COLUMNS, "pmw-pub": NO_COLUMNS,
             "gem": NO_COLUMNS, "gem-pub": NO_COLUMNS, "public-only": NO_COLUMNS,
             "mst": NO_COLUMNS, "privbayes-pgm": NO_COLUMNS, "independent": NO_COLUMNS},
    "columns": {"aim": ONLY_CONDITIONAL, "jam-pgm": NEEDS_ROWS, "mwem-pgm": NO_COLUMNS,
                "pmw-pub": NEEDS_ROWS, "gem": NO_COLUMNS, "gem-pub": NEEDS_ROWS,
                "public-only": NEEDS_ROWS, "mst": NO_COLUMNS, "privbayes-pgm": NO_COLUMNS,
                "independent": NO_COLUMNS},
    "none": {"jam-pgm": NEEDS_ROWS, "pmw-pub": NEEDS_ROWS, "gem-pub": NEEDS_ROWS,
             "public-only": NEEDS_ROWS, "aim+conditional": NEEDS_COLUMNS,
             "vjam-pgm": NEEDS_COLUMNS, "vjam-pgm+conditional": NEEDS_COLUMNS,
             "vpmw": NEEDS_COLUMNS, "vgem-pub": NEEDS_COLUMNS},
}
STATES = {"rows": (True, False), "both": (True, True), "columns": (False, True),
          "none": (False, False)}


def save(at):
    return at.button[[b.label for b in at.button].index("Save settings")]


def listed(at) -> dict[str, str]:
    """The mechanism list's entries: key -> the text shown."""
    box = at.selectbox(key="mechanism")
    return dict(zip(KEYS, box.options))


def check_list(at, state: str) -> None:
    """The page's list in public-information ``state``: each unavailable entry
    with its reason, each available one with what it does; choosing an
    unavailable one explains it and disables Save."""
    shown = listed(at)
    for key, text in shown.items():
        if key in UNAVAILABLE[state]:
            assert text.endswith(f"(unavailable: {UNAVAILABLE[state][key]})"), (state, text)
        else:
            assert "unavailable" not in text and ": " in text, (state, text)
    assert shown["aim+conditional"].startswith("Conditional AIM")
    assert shown["vjam-pgm+conditional"].startswith("Conditional vJAM-PGM")
    one_per_reason = {reason: key for key, reason in UNAVAILABLE[state].items()}
    for key in one_per_reason.values():
        at.selectbox(key="mechanism").set_value(key).run()
        assert not at.exception and not errors(at)
        reason = " ".join(w.value for w in at.warning)
        assert "Public information page" in reason and "--" not in reason, (state, key, reason)
        assert save(at).disabled
    available = next(k for k in KEYS if k not in UNAVAILABLE[state])
    at.selectbox(key="mechanism").set_value(available).run()
    assert not save(at).disabled


def test_guided_list_in_each_public_information_state():
    at = go(load_titanic(new_app()), "app_pages/workload.py")     # titanic: public rows
    wb = at.session_state["wb"]
    check_list(at, "rows")
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex", "pclass"]).run()
    go(at, "app_pages/workload.py")
    check_list(at, "both")
    go(at, "app_pages/public.py")
    at.radio(key="public_mode").set_value("none").run()
    assert wb.public.kind == "none" and wb.public.columns == ("sex", "pclass")
    go(at, "app_pages/workload.py")
    check_list(at, "columns")
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value([]).run()
    go(at, "app_pages/workload.py")
    check_list(at, "none")


def test_guide_follows_the_declared_capabilities():
    """The verdicts come from each mechanism's Capabilities: the list covers every
    registered mechanism, a variant for each that declares conditional generation."""
    keys = set(KEYS)
    for name, cls in MECHANISMS.items():
        assert name in keys
        assert (f"{name}+conditional" in keys) == cls.capabilities.conditional
    for state, (rows, columns) in STATES.items():
        got = {f.choice.key: f.refusal for f in guided_choices(public_rows=rows,
                                                               public_columns=columns)
               if not f.available}
        assert got == UNAVAILABLE[state], state


def refused_at_start(key: str, rows: bool, columns: bool,
                     neighbours: str = "bounded") -> tuple[bool, list[str]]:
    """Whether the mechanism's own run refuses entry ``key`` with this public
    information (bypassing the guide), and the run's warnings when it ran."""
    from synth_core.workbench import choice_by_key
    choice = choice_by_key(key)
    wb = Workbench()
    wb.load_sample("titanic")
    if not rows:
        wb.clear_public_rows()
    if columns:
        wb.set_public_columns(["sex", "pclass"])
    settings = wb.settings.__class__(choice.mechanism, rounds=8 if key.startswith("aim") else 2,
                                     seed=0, fit_iters=5, final_fit_iters=5, workload="all-2way",
                                     neighbours=neighbours, options=choice.options({}))
    try:
        synth = wb._synthesizer(settings)
        kwargs = wb.run_kwargs()
        for _ in synth.run(kwargs.pop("data"), kwargs.pop("public", None), **kwargs):
            pass
    except ConfigError:
        return True, []
    return False, list(synth.result.warnings)


CHEAP = [k for k in KEYS if not k.startswith(("gem", "vgem"))]


@pytest.mark.filterwarnings("ignore::synth_core.api.RunWarning")   # read from the result
@pytest.mark.parametrize("state", list(STATES))
def test_unavailable_entries_are_those_a_run_refuses(state):
    """An entry a run refuses is marked unavailable; one marked unavailable that
    still runs says in its warnings that it ran as something else (a conditional
    variant or vJAM-PGM without public columns). GEM's entries are checked in
    test_guide_follows_the_declared_capabilities only (a network per run)."""
    rows, columns = STATES[state]
    for key in CHEAP:
        refused, warnings = refused_at_start(key, rows, columns)
        if refused:
            assert key in UNAVAILABLE[state], (state, key)
        elif key in UNAVAILABLE[state]:
            assert any("without public columns" in w for w in warnings), (state, key, warnings)


@pytest.mark.filterwarnings("ignore::synth_core.api.RunWarning")
def test_entries_refused_under_unbounded_neighbours_are_marked():
    """Under unbounded DP, with public information each entry fits: an entry is
    marked unavailable exactly when its run refuses (bounded-only mechanisms,
    and conditional generation, whose records keep their public values)."""
    for key in CHEAP:
        state = next(s for s in STATES if key not in UNAVAILABLE[s])
        rows, columns = STATES[state]
        fits = {f.choice.key: f for f in guided_choices(public_rows=rows, public_columns=columns,
                                                        neighbours="unbounded")}
        refused, _ = refused_at_start(key, rows, columns, "unbounded")
        assert refused == (not fits[key].available), (key, state)
        if refused:
            assert "Neighbouring datasets" in fits[key].reason_in("app")
            assert "--neighbours" in fits[key].reason_in("cli")


def test_run_page_explains_aim_with_public_columns_before_start():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    at.selectbox(key="mechanism").set_value("aim").run()
    save(at).click().run()
    assert wb.settings.mechanism == "aim"
    go(at, "app_pages/public.py")
    at.multiselect(key="public_columns").set_value(["sex"]).run()
    assert any("Conditional AIM" in w.value for w in at.warning)
    go(at, "app_pages/run.py")
    text = " ".join(w.value for w in at.warning)
    assert "AIM cannot run" in text and "Conditional AIM" in text
    assert "Public information page" in text and "--conditional" not in text
    assert at.button(key="start_run").disabled
    with pytest.raises(ConfigError) as refused:
        wb.start_run()
    assert "Conditional AIM" in refused.value.hint
    assert wb.runs == [] and wb.worker is None


def test_save_refuses_an_entry_the_neighbour_relation_rules_out():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    assert wb.settings.mechanism == "jam-pgm"
    at.radio(key="neighbours").set_value("unbounded")
    save(at).click().run()
    assert errors(at) and "Neighbouring datasets" in errors(at)[0]
    assert wb.settings.neighbours == "bounded"          # unchanged
    at.selectbox(key="mechanism").set_value("aim").run()
    at.radio(key="neighbours").set_value("unbounded")
    save(at).click().run()
    assert not errors(at) and (wb.settings.mechanism, wb.settings.neighbours) == ("aim",
                                                                                  "unbounded")


def test_labels_name_the_full_mechanism():
    at = go(load_titanic(new_app()), "app_pages/public.py")
    wb = at.session_state["wb"]
    at.multiselect(key="public_columns").set_value(["sex", "pclass"]).run()
    go(at, "app_pages/workload.py")
    at.selectbox(key="mechanism").set_value("aim+conditional").run()
    at.checkbox(key="rounds_default").uncheck()
    at.number_input(key="rounds").set_value(8)
    at.radio(key="run_mode").set_value("research").run()
    save(at).click().run()
    assert not errors(at) and wb.settings.options == {"conditional": True}
    assert "**Mechanism:** Conditional AIM" in sidebar_text(at)
    assert at.selectbox(key="mechanism").value == "aim+conditional"
    go(at, "app_pages/run.py")
    assert at.markdown[0].value.startswith("**Conditional AIM**")
    wb.update_settings(fit_iters=10, final_fit_iters=20)
    at.button(key="start_run").click().run()
    wait_for_run(at)
    at.run()
    assert not errors(at)
    assert any(h.value.startswith("Run 1: Conditional AIM, ε=1") for h in at.subheader)
    go(at, "app_pages/release.py")
    assert at.selectbox(key="release_run").format_func(1).startswith("Run 1: Conditional AIM")
    assert "aim," not in texts(at)
