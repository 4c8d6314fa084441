"""benchmarks/vertical_error_parts.py: a run's error on W split into the marginals with a
private column (W') and the public-only ones, per split, from the store's per-marginal
rows; a mechanism that ran once for every split gets each split's own parts."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import vertical_error_parts as parts  # noqa: E402

from synth_core.experiments import (DatasetSpec, MechanismSpec, ResultStore,  # noqa: E402
                                    Sweep, run_sweep)

SAMPLE = ROOT / "sample_data" / "titanic"
FAST = {"rounds": 2, "fit_iters": 10, "final_fit_iters": 20, "workload": "all-2way"}


def test_parts_weigh_back_to_the_error_on_w():
    per = pd.DataFrame({"marginal": ["a × b", "a × c", "c", "a", "b × c"],
                        "error": [0.1, 0.3, 0.5, 0.2, 0.7]})
    got = parts.error_parts(per, ("a", "b"))
    assert (got["marginals_private"], got["marginals_public_only"]) == (3, 2)
    assert got["error_public_only"] == pytest.approx(0.15)
    assert got["error_private"] == pytest.approx(0.5)
    assert got["error_all"] == pytest.approx((3 * 0.5 + 2 * 0.15) / 5)
    # no public column: every marginal is in W', none public-only
    none = parts.error_parts(per, ())
    assert none["error_public_only"] is None and none["error_private"] == pytest.approx(0.36)


def test_a_runs_parts_agree_with_its_stored_errors_and_are_per_split(tmp_path):
    """A real vJAM-PGM run on the Titanic sample: its W' part is the run's own
    ``workload_error_private`` and the parts weigh back to its ``workload_error``; read
    as a run shared by two splits, each split gets parts for its own public columns."""
    pub = ("sex", "pclass")
    split = DatasetSpec("titanic, 2 public", SAMPLE / "private.csv",
                        schema=SAMPLE / "schema.json", public_columns=pub)
    sweep = Sweep((split,), (MechanismSpec("vjam-pgm", "vjam-pgm"),), (1.0,), (0,),
                  dict(FAST), name="parts")
    store = ResultStore(tmp_path / "store")
    (row,) = list(run_sweep(sweep, store, quiet=True))
    assert row["status"] == "finished", row["error"]
    splits = {split.name: pub, "titanic, 1 public": ("sex",)}
    (own,) = parts.run_parts(store, store.runs(), splits, shared=())
    assert own["error_private"] == pytest.approx(row["workload_error_private"])
    n = own["marginals_private"] + own["marginals_public_only"]
    assert own["marginals_public_only"] == 1                   # sex × pclass, in all-2way
    assert (own["marginals_private"] * own["error_private"]
            + own["error_public_only"]) / n == pytest.approx(row["workload_error"])
    shared = {r["dataset"]: r for r in parts.run_parts(store, store.runs(), splits,
                                                       shared=("vjam-pgm",))}
    assert set(shared) == set(splits)
    assert shared[split.name] == own
    one = shared["titanic, 1 public"]
    assert one["marginals_public_only"] == 0 and one["error_public_only"] is None
    assert one["error_private"] == pytest.approx(row["workload_error"])
    (summary,) = parts.summarise([own])
    assert summary["seeds"] == [0] and summary["error_private"] == own["error_private"]
