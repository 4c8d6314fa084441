"""Research or release mode on the Workload and budget page.

A new app session defaults to release mode (unseeded: OpenDP's discrete
Gaussian, secure randomness); research mode takes a seed. AppTest of the real
app, no mocks.
"""

from __future__ import annotations

import json

from synth_core.workbench import Workbench
from test_app_pages import errors, go, load_titanic, new_app, sidebar_text, texts, wait_for_run


def save(at):
    at.button[[b.label for b in at.button].index("Save settings")].click().run()
    assert not at.exception and not errors(at)


def test_a_new_session_defaults_to_release_and_the_seed_needs_research_mode():
    at = go(load_titanic(new_app()), "app_pages/workload.py")
    wb = at.session_state["wb"]
    assert wb.settings.seed is None and wb.settings.run_mode == "release"
    assert Workbench().settings.run_mode == "release"      # the library defaults to release too
    mode = at.radio(key="run_mode")
    assert mode.value == "release" and mode.options[0].startswith("Release (discrete Gaussian")
    assert at.number_input(key="seed").disabled
    assert "Mode:** release" in sidebar_text(at)

    mode.set_value("research").run()
    assert not at.number_input(key="seed").disabled
    assert "Press *Save settings* to switch to research mode" in texts(at)
    assert wb.settings.run_mode == "release"                # only Save changes the settings
    at.number_input(key="seed").set_value(7)
    save(at)
    assert (wb.settings.seed, wb.settings.run_mode) == (7, "research")
    assert "Mode:** research (seed 7)" in sidebar_text(at)
    go(at, "app_pages/run.py")
    assert "mode: research (seed 7: reproducible)" in texts(at)

    go(at, "app_pages/workload.py")
    assert at.radio(key="run_mode").value == "research" and at.number_input(key="seed").value == 7
    at.radio(key="run_mode").set_value("release").run()
    save(at)
    assert wb.settings.seed is None and wb.settings.mode is None
    assert wb.settings.run_mode == "release"
    assert "--seed" not in wb.reproduce_command()


def test_a_release_mode_run_reports_release_mode_and_no_seed():
    at = load_titanic(new_app())
    wb = at.session_state["wb"]
    wb.update_settings(workload="all-2way", rounds=2, fit_iters=10, final_fit_iters=20)
    go(at, "app_pages/run.py")
    assert "mode: release (OpenDP discrete Gaussian" in texts(at)
    at.button(key="start_run").click().run()
    assert not at.exception and not errors(at)
    wait_for_run(at)
    at.run()
    assert len(wb.runs) == 1 and wb.runs[0].status == "finished"
    report = json.loads(wb.release_files(wb.runs[0])["report.json"])
    assert report["privacy"]["mode"] == "release" and "seed" not in report["config"]
    assert report["config"]["mode"] == "release"
    assert any(c.value.startswith("Mode: release") for c in at.caption), texts(at)
    go(at, "app_pages/release.py")                          # publishable: no warning
    assert not errors(at)
    assert not any("Not fit for publication" in w.value for w in at.warning)
