"""The run-time model (synth_core/run_time.py), its calibration, and the cost
previews the Compare page and the what-if section show before Start."""

from __future__ import annotations

import json
import resource
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from synth_core import load_sample, run_time
from synth_core.api import RunConfig, Synthesizer
from synth_core.errors import ConfigError
from synth_core.privacy import rho_from_epsilon_delta
from synth_core.workbench.compare import compare_plan, mechanism_settings
from synth_core.workbench.runs import cost_frame, describe_seconds, describe_total, estimate_seconds
from synth_core.workbench.what_if import fastest_first, what_if_plan

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "benchmarks" / "results" / "runtime_model" / "runs.jsonl"


def measured_runs() -> list[dict]:
    """The committed measurements, as the benchmark fits them."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from runtime_model import with_workload_cells
    return with_workload_cells([r for r in map(json.loads, RUNS.read_text().splitlines())
                                if r.get("bench") == "runtime_model" and r.get("status") == "ok"])


# ---------------------------------------------------------------- fitting


def test_nonnegative_fit_recovers_known_constants():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(20), rng.uniform(1, 50, 20), rng.uniform(0, 300, 20)])
    coef = np.array([1.5, 0.2, 0.0])
    got = run_time.nonnegative_fit(x, x @ coef)
    assert got == pytest.approx(coef, abs=1e-9)
    # a negative least-squares solution is replaced by the best non-negative one
    y = x @ np.array([2.0, 0.1, 0.01]) - 0.05 * x[:, 2]
    assert (run_time.nonnegative_fit(x, y) >= 0).all()


def test_adaptive_rounds_fit_recovers_k_and_p():
    recs = [{"rounds_run": round(2.0 * d * e ** 0.5), "columns": d, "epsilon": e}
            for d in (6, 15) for e in (0.25, 1.0, 4.0)]
    fitted = run_time.fit_rounds(recs)
    assert fitted["rounds_k"] == pytest.approx(2.0, rel=0.05)
    assert fitted["rounds_q"] == pytest.approx(1.0, abs=0.05)
    assert fitted["rounds_p"] == pytest.approx(0.5, abs=0.05)
    # a fixed count (PMW-Pub's 500) is a constant, whatever the table
    fixed = run_time.fit_rounds([{**r, "rounds_run": 500} for r in recs])
    assert fixed["rounds_k"] == pytest.approx(500) and fixed["rounds_q"] == pytest.approx(0, abs=1e-9)
    # one column count: the exponent of the columns is not identified, and is 0
    one = run_time.fit_rounds([r for r in recs if r["columns"] == 6])
    assert one["rounds_q"] == 0.0 and one["rounds_p"] == pytest.approx(0.5, abs=0.05)


def synthetic_run(mechanism: str, rows: int, seconds: float, conditional: bool = False) -> dict:
    """A measured-run record of a fixed-rounds mechanism (what the fit reads)."""
    return {"mechanism": mechanism, "conditional": conditional, "epsilon": 1.0, "rows": rows,
            "columns": 6, "cells": 43, "workload_cells": 5000, "planned_rounds": 30,
            "round_fit_iters": 100, "final_fit_iters": 1000, "rounds_run": 30,
            "run_cpu_s": seconds}


def test_fit_cost_growing_with_epsilon_is_recovered():
    """Runs of a fixed-rounds mechanism whose fits cost ``epsilon ** 1.5`` more at
    more epsilon (larger marginals picked): the fit finds ``g = 1.5`` and predicts
    an epsilon it did not see; at one epsilon ``g`` is not identified and is 0."""
    def run(eps: float, rows: int) -> dict:
        r = synthetic_run("mwem-pgm", rows, 0.0)
        r["epsilon"] = eps
        r["run_cpu_s"] = 0.5 + 0.002 * run_time.term_values(r, 30, 1.0, 1.5)[3]
        return r
    recs = [run(e, n) for e in (0.3, 1.0, 3.0) for n in (1000, 30000)]
    entry = run_time.fit_entry(recs)
    assert entry["epsilon_exponent"] == 1.5 and entry["exponent"] == 1.0
    unseen = run(10.0, 5000)
    calibration = {"models": {"mwem-pgm": entry}}
    assert run_time.estimate_from_features(unseen, calibration) == \
        pytest.approx(unseen["run_cpu_s"], rel=1e-6)
    assert run_time.fit_entry([r for r in recs if r["epsilon"] == 1.0])["epsilon_exponent"] == 0.0


def test_a_variant_measured_on_one_table_takes_the_constants_of_a_family_measured_on_more():
    """vJAM-PGM and its conditional variant measured on one table, JAM-PGM on
    two: both variants use JAM-PGM's constants (the conditional one two steps
    along its family chain), which separate the tables."""
    # JAM-PGM's seconds: 1/30 s per round and 10,000 rows (the rows term alone)
    runs = [synthetic_run("jam-pgm", 1000, 1.1), synthetic_run("jam-pgm", 30000, 4.0),
            synthetic_run("vjam-pgm", 1000, 1.0),
            synthetic_run("vjam-pgm", 1000, 1.0, conditional=True)]
    calibration = run_time.fit_calibration(runs)
    assert set(calibration["models"]) == {"jam-pgm"}
    big = synthetic_run("vjam-pgm", 30000, 0.0, conditional=True)
    assert run_time.estimate_from_features(big, calibration) == pytest.approx(4.0, rel=1e-6)
    # measured on two tables itself: its own constants
    runs.append(synthetic_run("vjam-pgm", 30000, 20.0))
    assert set(run_time.fit_calibration(runs)["models"]) == {"jam-pgm", "vjam-pgm"}


def test_calibration_file_is_the_fit_of_the_committed_runs():
    """The package's calibration is what the benchmark fits on the committed
    measurements (recalibration is the one benchmark command)."""
    fitted = run_time.fit_calibration(measured_runs())
    shipped = run_time.load_calibration()
    assert set(shipped["models"]) == set(fitted["models"])
    for key, entry in fitted["models"].items():
        assert shipped["models"][key]["coef"] == pytest.approx(entry["coef"], rel=1e-6), key


def calibration_keys() -> list[str]:
    """The calibration key of every mechanism in MECHANISMS and of the
    conditional variant of each that declares one."""
    from synth_core.mechanisms import MECHANISMS
    return [run_time.model_key({"mechanism": name, "conditional": conditional})
            for name, cls in MECHANISMS.items()
            for conditional in (False, True)[:1 + bool(cls.capabilities.conditional)]]


def test_calibration_covers_every_mechanism_and_conditional_variant():
    """Every mechanism the app offers has constants, its own or (for a variant
    listed in FAMILY) its family's: a mechanism added to MECHANISMS without
    measured constants fails here."""
    models = run_time.load_calibration()["models"]
    keys = calibration_keys()
    assert {"aim", "aim+conditional", "vjam-pgm+conditional", "gem"} <= set(keys)
    for key in keys:
        mechanism, _, variant = key.partition("+")
        entry = run_time.calibration_entry({"mechanism": mechanism, "conditional": bool(variant)})
        own = [name for name in run_time.family_chain(key, mechanism) if name in models]
        assert entry is models[own[0]], key
        assert len(entry["coef"]) == len(run_time.TERMS) and min(entry["coef"]) >= 0, key
    # a variant without its own constants takes its family's, along the chain
    only_jam = {"models": {"jam-pgm": models["jam-pgm"]}}
    assert run_time.calibration_entry({"mechanism": "vjam-pgm", "conditional": True},
                                      only_jam) is models["jam-pgm"]
    with pytest.raises(ConfigError, match="No run-time calibration"):
        run_time.calibration_entry({"mechanism": "aim"}, {"models": {}})


def test_model_is_within_a_factor_of_two_on_the_measured_runs():
    """On the runs at the default settings (what is fitted); sub-second runs
    count as 0.5 s (the shortest estimate shown)."""
    for r in filter(run_time.at_defaults, measured_runs()):
        est = max(0.5, run_time.estimate_from_features(r))
        actual = max(0.5, r["run_cpu_s"])
        assert max(est, actual) / min(est, actual) <= 2.0, (r["variant"], r["sample"], r["epsilon"])


# ---------------------------------------------------------------- a live run


def cpu_now() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.slow
def test_estimate_is_within_a_factor_of_two_of_a_fresh_run():
    """A measured configuration (vJAM-PGM on Titanic with two public columns,
    epsilon 3) run now: the model's estimate is within a factor of 2 of its
    CPU seconds."""
    sample = load_sample("titanic")
    cfg = RunConfig(mechanism="vjam-pgm", epsilon=3.0, seed=1,
                    options={"public_columns": ["sex", "pclass"]})
    estimate, how = estimate_seconds(cfg, sample.schema, len(sample.private), None, [])
    assert "calibrated" in how
    before = cpu_now()
    synth = Synthesizer.from_config(cfg)
    for _ in synth.run(sample.private, schema=sample.schema):
        pass
    actual = cpu_now() - before
    assert max(estimate, actual) / min(estimate, actual) <= 2.0, (estimate, actual)


# ---------------------------------------------------------------- cost previews


def titanic_settings(**kw) -> RunConfig:
    return replace(RunConfig(mechanism="jam-pgm"), **kw)


def test_compare_plan_charges_each_run_its_rho_and_public_only_nothing():
    sample = load_sample("titanic")
    s = titanic_settings(delta=1e-9)
    jobs = [{"mechanism": m, "epsilon": e, "seed": sd}
            for m in ("jam-pgm", "public-only") for e in (0.5, 4.0) for sd in range(3)]
    estimate = lambda c: estimate_seconds(c, sample.schema, len(sample.private), None, [])  # noqa: E731
    plans = compare_plan(jobs, s, estimate)
    by = {(p.mechanism, p.epsilon): p for p in plans}
    assert by[("jam-pgm", 0.5)].runs == 3
    assert by[("jam-pgm", 0.5)].rho_each == pytest.approx(rho_from_epsilon_delta(0.5, 1e-9))
    assert by[("public-only", 4.0)].rho_each == 0.0
    frame = cost_frame(plans)
    total = frame.iloc[-1]
    assert total["runs"] == 12
    assert total["rho total"] == pytest.approx(
        3 * (rho_from_epsilon_delta(0.5, 1e-9) + rho_from_epsilon_delta(4.0, 1e-9)))
    assert total["seconds total (est.)"] == pytest.approx(
        sum(3 * estimate(replace(s, mechanism=m, epsilon=e))[0]
            for m in ("jam-pgm", "public-only") for e in (0.5, 4.0)), abs=0.2)


def test_what_if_plan_spends_nothing_and_orders_fastest_first():
    sample = load_sample("titanic")
    s = titanic_settings()
    estimate = lambda c: estimate_seconds(c, sample.schema, len(sample.private), None, [])  # noqa: E731
    plans = what_if_plan(["jam-pgm", "mwem-pgm"], [1.0, 0.1], 2, s, estimate)
    assert [(p.mechanism, p.epsilon, p.runs) for p in plans] == [
        ("jam-pgm", 0.1, 2), ("jam-pgm", 1.0, 2), ("mwem-pgm", 0.1, 2), ("mwem-pgm", 1.0, 2)]
    assert all(p.rho_each == 0.0 for p in plans)
    order = fastest_first(["jam-pgm", "mwem-pgm", "public-only"], s, sample.schema,
                          len(sample.private))
    times = [estimate(replace(s, mechanism=m))[0] for m in order]
    assert times == sorted(times)


def test_a_mechanism_without_calibration_keeps_its_runs_and_budget_but_no_time():
    def estimate(c):
        if c.mechanism == "mwem-pgm":
            raise ConfigError("No run-time calibration for mwem-pgm.")
        return 2.0, "model"
    plans = what_if_plan(["jam-pgm", "mwem-pgm"], [1.0], 3, titanic_settings(), estimate)
    frame = cost_frame(plans)
    assert frame.iloc[-1]["runs"] == 6 and frame.iloc[-1]["seconds total (est.)"] == 6.0
    assert describe_total(plans) == "~6 s + mwem-pgm (no estimate)"


def test_estimate_grows_with_rounds_and_the_domain():
    titanic, adult = load_sample("titanic").schema, load_sample("adult-pub025").schema
    s = titanic_settings(rounds=10)
    small = estimate_seconds(s, titanic, 1000, None, [])[0]
    assert estimate_seconds(replace(s, rounds=40), titanic, 1000, None, [])[0] > small
    assert estimate_seconds(s, adult, 1000, None, [])[0] > small


def test_a_finished_run_scales_the_model_by_what_it_took():
    """A run of the same mechanism on the same table that took 3 times the
    model's estimate makes the next estimate 3 times the model's."""
    from synth_core.runner import FINISHED
    from synth_core.workbench.runs import FinishedRun, model_seconds
    sample = load_sample("titanic")
    n = len(sample.private)
    done = titanic_settings(epsilon=1.0, rounds=10)
    took = 3 * model_seconds(done, sample.schema, n)
    run = FinishedRun(number=4, label="", status=FINISHED, settings=done, events=[],
                      rho_spent=0.1, seconds=took, result=object(), data_name="titanic")
    nxt = titanic_settings(epsilon=4.0, rounds=20)
    secs, how = estimate_seconds(nxt, sample.schema, n, "titanic", [run])
    assert secs == pytest.approx(max(0.5, 3 * model_seconds(nxt, sample.schema, n)))
    assert "run 4" in how
    # another table or another mechanism: the model alone
    assert estimate_seconds(nxt, sample.schema, n, "adult", [run])[0] == pytest.approx(
        max(0.5, model_seconds(nxt, sample.schema, n)))


def test_describe_seconds():
    assert describe_seconds(12.4) == "~12 s"
    assert describe_seconds(300) == "~5.0 min"
    assert describe_seconds(5400) == "~90.0 min"
    assert describe_seconds(9000) == "~2.5 h"


# ---------------------------------------------------------------- the pages


def metric(at, label: str) -> str:
    (m,) = [m for m in at.metric if m.label == label]
    return m.value


def choose_on_page(page: str, prefix: str, mechs, eps, seeds: int, monkeypatch, tmp_path):
    """The titanic sample loaded, ``page`` open, and its mechanisms, epsilons and
    seeds (widget keys ``<prefix>_mechs`` ...) chosen, nothing started."""
    from test_app_pages import go, load_titanic, new_app
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    at = load_titanic(new_app())
    go(at, page)
    at.multiselect(key=f"{prefix}_mechs").set_value(list(mechs))
    at.multiselect(key=f"{prefix}_eps").set_value(list(eps))
    at.number_input(key=f"{prefix}_seeds").set_value(seeds).run()
    assert not at.exception
    return at, at.session_state["wb"]


def page_seconds(wb, mechs, eps, seeds: int) -> float:
    """What the run-time model says all these runs take."""
    return sum(seeds * wb.estimate_seconds(mechanism_settings(wb.settings, m, e))[0]
               for m in mechs for e in eps)


def test_compare_page_shows_runs_budget_and_time_before_start(tmp_path, monkeypatch):
    mechs, eps = ("jam-pgm", "public-only"), (0.5, 5.0)
    at, wb = choose_on_page("app_pages/compare.py", "cmp", mechs, eps, 3, monkeypatch, tmp_path)
    assert metric(at, "Runs to start") == "12"
    rho = 3 * (rho_from_epsilon_delta(0.5, wb.settings.delta)
               + rho_from_epsilon_delta(5.0, wb.settings.delta))      # public-only: 0
    assert metric(at, "Budget on the private data (rho)") == f"{rho:.4g}"
    assert metric(at, "CPU time estimate") == describe_seconds(page_seconds(wb, mechs, eps, 3))
    assert wb.compare.worker is None           # nothing started
    assert any("Cost before you start: 12 run(s)" in c.value and "no total budget set" in c.value
               for c in at.caption)
    account = wb.set_dataset_budget(20.0, wb.settings.delta)
    at.run()
    assert any(account.left_text(wb.settings.delta) in c.value for c in at.caption)


def test_what_if_section_shows_runs_no_budget_and_time_before_start(tmp_path, monkeypatch):
    mechs, eps = ("jam-pgm", "mwem-pgm"), (0.5, 5.0)
    at, wb = choose_on_page("app_pages/workload.py", "wi", mechs, eps, 2, monkeypatch, tmp_path)
    assert metric(at, "Stand-in runs") == "8"
    assert metric(at, "Budget on the private data") == "none"
    assert metric(at, "CPU time estimate") == describe_seconds(page_seconds(wb, mechs, eps, 2))
    assert wb.whatif.worker is None
