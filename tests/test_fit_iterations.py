"""The fit-iterations comparison (benchmarks/fit_iterations.py) and the figures'
CPU cost table (benchmarks/reproduce.py): their summaries on small run tables."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import fit_iterations  # noqa: E402
import reproduce  # noqa: E402


def _runs(errors: dict[tuple[int, int], float], cpu: dict[int, float]) -> pd.DataFrame:
    """Finished Titanic runs at epsilon 1: errors[(fit_iters, seed)], cpu[fit_iters]."""
    rows = [{"dataset": "titanic", "mechanism": "jam-pgm", "epsilon": 1.0, "seed": seed,
             "fit_iters": iters, "workload_error": err, "workload_error_private": None,
             "cpu_seconds": cpu[iters], "status": "finished"}
            for (iters, seed), err in errors.items()]
    return pd.DataFrame(rows)


def test_paired_difference_is_per_seed_with_its_standard_error():
    errors = {(100, 0): 0.50, (100, 1): 0.40, (100, 2): 0.60,
              (1000, 0): 0.45, (1000, 1): 0.36, (1000, 2): 0.54, (1000, 3): 0.10}
    [row] = fit_iterations.paired_rows(_runs(errors, {100: 10.0, 1000: 30.0}))
    assert row["seeds"] == [0, 1, 2]           # seed 3 has no 100-iteration run
    assert row["diffs"] == pytest.approx([-0.05, -0.04, -0.06])
    assert row["diff_mean"] == pytest.approx(-0.05)
    assert row["diff_se"] == pytest.approx(0.01 / math.sqrt(3))
    assert row["beyond_noise"] is True
    assert row["cpu_ratio"] == pytest.approx(3.0)


def test_pooled_row_takes_every_pair_of_a_setting_over_its_epsilons():
    errors = {(100, 0): 0.50, (100, 1): 0.40, (1000, 0): 0.45, (1000, 1): 0.38}
    runs = pd.concat([_runs(errors, {100: 10.0, 1000: 30.0}),
                      _runs(errors, {100: 10.0, 1000: 50.0}).assign(
                          epsilon=10.0, workload_error=lambda r: r["workload_error"] * 2)])
    [row] = fit_iterations.pooled_rows(runs)
    assert row["epsilons"] == [1.0, 10.0] and row["pairs"] == 4
    d = [-0.05, -0.02, -0.10, -0.04]
    assert row["diffs"] == pytest.approx(d)
    assert row["diff_mean"] == pytest.approx(sum(d) / 4)
    assert row["diff_se"] == pytest.approx(pd.Series(d).std() / 2)
    assert row["cpu_ratio"] == pytest.approx((30 + 30 + 50 + 50) / 40)


def test_a_difference_within_seed_noise_is_not_beyond_it():
    errors = {(100, 0): 0.50, (100, 1): 0.40, (1000, 0): 0.55, (1000, 1): 0.35}
    [row] = fit_iterations.paired_rows(_runs(errors, {100: 10.0, 1000: 20.0}))
    assert row["diff_mean"] == pytest.approx(0.0) and row["beyond_noise"] is False


def test_cells_summarise_each_iteration_count_over_seeds():
    errors = {(100, 0): 0.5, (100, 1): 0.7, (1000, 0): 0.4}
    cells = {c["fit_iters"]: c for c in fit_iterations.cell_rows(_runs(errors, {100: 4.0,
                                                                                 1000: 9.0}))}
    assert cells[100]["error_mean"] == pytest.approx(0.6)
    assert cells[100]["error_sd"] == pytest.approx(math.sqrt(0.02))
    assert (cells[100]["error_min"], cells[100]["error_max"]) == (0.5, 0.7)
    assert cells[100]["cpu_total"] == pytest.approx(8.0)
    assert cells[1000]["error_sd"] is None and cells[1000]["setting"] == "titanic"


def test_fit_iters_is_read_from_the_resolved_configuration():
    assert fit_iterations.fit_iters_of(json.dumps({"run": {"fit_iters": 1000}})) == 1000


def _has_data(*names: str) -> bool:
    return all((reproduce.DATA / n).exists() for n in names)


@pytest.mark.skipif(not _has_data("titanic", "adult_pub025", "adult"),
                    reason="../shared/data (the settings' data) is absent")
def test_each_settings_dataset_name_is_the_name_its_dataset_gets():
    # the summaries name a run's setting without reading data; the names must be the runs'
    for setting, (name_in_runs, make, *_) in fit_iterations.SETTINGS.items():
        assert make().name == name_in_runs
        assert fit_iterations.setting_of(name_in_runs) == setting


@pytest.mark.skipif(not _has_data("titanic"), reason="../shared/data/titanic is absent")
def test_sweeps_differ_only_in_fit_iters_and_share_the_titanic_grids_run_ids():
    short, long_ = (fit_iterations.build_sweep("titanic", n, [1.0], [0]) for n in (100, 1000))
    [a], [b] = short.jobs(), long_.jobs()
    assert (a.config.fit_iters, b.config.fit_iters) == (100, 1000)
    assert a.run_id != b.run_id
    grid = [j.run_id for s in reproduce.build_sweeps("jam-titanic", ["jam-pgm"], [0], [1.0],
                                                     setting="paper") for j in s.jobs()]
    assert grid == [a.run_id]


def test_cost_rows_sum_cpu_per_mechanism_and_in_all():
    runs = pd.DataFrame([
        {"mechanism": "aim", "cpu_seconds": 2.0, "status": "finished"},
        {"mechanism": "aim", "cpu_seconds": 4.0, "status": "finished"},
        {"mechanism": "gem", "cpu_seconds": 100.0, "status": "finished"},
        {"mechanism": "gem", "cpu_seconds": 7.0, "status": "failed"}])
    costs = {c["mechanism"]: c for c in reproduce.cost_rows(runs)}
    assert costs["aim"]["runs"] == 2 and costs["aim"]["cpu_total"] == pytest.approx(6.0)
    assert (costs["aim"]["cpu_min"], costs["aim"]["cpu_max"]) == (2.0, 4.0)
    assert costs["gem"]["runs"] == 1                     # the failed run is not counted
    assert costs["all"]["cpu_total"] == pytest.approx(106.0)
    assert costs["all"]["cpu_mean"] == pytest.approx(106.0 / 3)
