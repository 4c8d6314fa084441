"""The Release page's repeat command repeats the run, for every entry of the
mechanism list (each mechanism and each conditional variant) with options.

A research-mode run in the workbench, then its command through the CLI with
the same seed given separately (the command itself carries none): the CLI's
run must measure the same marginals in the same order, from the same sources.
"""

from __future__ import annotations

import json
import shlex

import pytest

from synth_core.cli import main
from synth_core.mechanisms import MECHANISMS
from synth_core.workbench import Workbench, mechanism_choices

SEED = 3
#: a GEM network small enough for a test (the tuple option ``hidden`` goes
#: through ``--option hidden=16,16``)
GEM_TINY = dict(hidden=(16, 16), noise_dim=8, batch=16, inner_steps=3, max_queries=5,
                pretrain_max_steps=3, lr=0.001)
#: a few cheap rounds per mechanism, and an option of each kind where it has one
SMALL = {"aim": dict(rounds=8), "jam-pgm": dict(rounds=3, alpha=0.7),
         "vjam-pgm": dict(rounds=3, alpha=0.7), "mwem-pgm": dict(rounds=3),
         "pmw-pub": dict(rounds=3), "vpmw": dict(rounds=3, support_size=400),
         "gem": dict(rounds=2, **GEM_TINY), "gem-pub": dict(rounds=2, **GEM_TINY),
         "vgem-pub": dict(rounds=2, **GEM_TINY), "public-only": {}, "mst": {},
         "privbayes-pgm": dict(degree=1), "independent": {}}
CHOICES = [c.key for c in mechanism_choices()]


def test_every_mechanism_has_small_settings_here():
    assert set(SMALL) == set(MECHANISMS)


def command_args(command: str) -> list[str]:
    """The ``synth`` arguments of a reproduce command (comments and line
    continuations dropped, shell-unquoted)."""
    lines = [line for line in command.splitlines() if not line.startswith("#")]
    words = shlex.split(" ".join(line.rstrip("\\") for line in lines))
    assert words[:2] == ["synth", "run"]
    return words[1:]


def workbench_run(key: str):
    """A seeded research run of list entry ``key`` on titanic, with public
    columns where the entry uses them; the finished run."""
    from synth_core.workbench import choice_by_key
    choice = choice_by_key(key)
    wb = Workbench()
    wb.load_sample("titanic")
    caps = choice.capabilities
    if caps.uses_public_columns and (caps.needs_public_columns or choice.conditional):
        wb.set_public_columns(["sex", "pclass"])
    small = dict(SMALL[choice.mechanism])
    rounds = small.pop("rounds", None)
    options = choice.options({**small, "condition_max_mb": 5.0} if choice.conditional else small)
    wb.update_settings(mechanism=choice.mechanism, rounds=rounds, workload="all-2way",
                       fit_iters=10, final_fit_iters=20, seed=SEED, mode="research",
                       options=options)
    assert wb.mechanism_fit().available, wb.mechanism_fit().reason
    wb.start_run()
    assert wb.worker.wait(300), "the run did not finish in time"
    run = wb.collect()
    assert run.ok, run.failure
    return run


def config(report: dict) -> dict:
    """The run's configuration; its public columns are compared with the public
    information (the command gives them with ``--public-columns``)."""
    cfg = dict(report["config"])
    cfg["options"] = {k: v for k, v in cfg["options"].items() if k != "public_columns"}
    return json.loads(json.dumps(cfg))      # lists, as the report file holds them


def plan(report: dict) -> list[tuple]:
    return [(m["round"], tuple(m["clique"]), m["source"]) for m in report["measurements"]]


@pytest.mark.parametrize("key", CHOICES)
def test_repeat_command_repeats_the_measurement_plan(key, tmp_path, monkeypatch):
    run = workbench_run(key)
    command = run.reproduce
    assert "--seed" not in command                 # the release command carries no seed
    assert "no command-line form" not in command and "not CLI options" not in command
    if key.endswith("+conditional"):
        assert "--conditional" in command and "--condition-max-mb 5" in command
    monkeypatch.chdir(tmp_path)
    assert main(command_args(command) + ["--seed", str(SEED), "--quiet"]) == 0
    repeated = json.loads((tmp_path / "report.json").read_text())
    assert plan(repeated) == plan(run.result.report)
    assert repeated["privacy"]["rho"] == pytest.approx(run.result.report["privacy"]["rho"])
    assert config(repeated) == config(run.result.report)
    assert repeated["public_information"] == run.result.report["public_information"]
