"""The seed papers' findings as benchmarks/reproduce.py checks them on a figure's means."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import reproduce  # noqa: E402

SPLITS = ("adult_pub025", "adult_pub100")


def rows_from(means: dict) -> list[dict]:
    return [{"dataset": d, "mechanism": m, "epsilon": e, "mean": v}
            for (d, m, e), v in means.items()]


def adult_means(changes: dict | None = None) -> dict:
    means = {}
    for d in SPLITS:
        for e in (0.1, 10.0):
            means[(d, "jam-pgm", e)] = 0.10
            means[(d, "gem-pub", e)] = 0.30
            means[(d, "pmw-pub", e)] = 0.80 if d == "adult_pub100" else 0.20
            means[(d, "aim", e)] = 0.105
    means.update(changes or {})
    return means


def by_name(checks: list[dict]) -> dict:
    return {c["finding"].split(" (")[0]: c for c in checks}


def test_jam_adult_findings_hold_and_fail_on_the_means():
    ok = by_name(reproduce.findings("jam-adult", rows_from(adult_means())))
    assert [c["holds"] for c in ok.values()] == [True, True, True]
    assert ok["JAM-PGM below PMW-Pub and GEM-Pub at almost every point"]["points"] == 4
    # one point above is "almost every"; two are not
    one = adult_means({("adult_pub025", "jam-pgm", 0.1): 0.25})
    two = adult_means({("adult_pub025", "jam-pgm", 0.1): 0.25,
                         ("adult_pub100", "jam-pgm", 0.1): 0.9})
    assert by_name(reproduce.findings("jam-adult", rows_from(one)))[
        "JAM-PGM below PMW-Pub and GEM-Pub at almost every point"]["holds"] is True
    failed = by_name(reproduce.findings("jam-adult", rows_from(two)))
    assert failed["JAM-PGM below PMW-Pub and GEM-Pub at almost every point"]["not_below"] == [
        "adult_pub025 eps 0.1", "adult_pub100 eps 0.1"]
    assert failed["PMW-Pub much worse with the 100%-female public data"]["holds"] is False
    far = adult_means({("adult_pub100", "aim", 10.0): 0.2})
    assert by_name(reproduce.findings("jam-adult", rows_from(far)))[
        "AIM close to JAM-PGM at epsilon 10"]["holds"] is False


def test_a_missing_cell_leaves_the_finding_open():
    means = adult_means()
    del means[("adult_pub100", "gem-pub", 10.0)]
    check = by_name(reproduce.findings("jam-adult", rows_from(means)))[
        "JAM-PGM below PMW-Pub and GEM-Pub at almost every point"]
    assert check["holds"] is None and check["missing"] == ["adult_pub100 eps 10"]


def test_titanic_public_data_methods_against_private_only_ones():
    means = {("titanic", m, e): v for e in (0.1, 1.0, 10.0) for m, v in
             {"jam-pgm": 0.5, "pmw-pub": 0.5, "public-only": 0.47, "gem-pub": 1.2,
              "aim": 0.9 if e < 10 else 0.3, "gem": 1.3}.items()}
    checks = reproduce.findings("jam-titanic", rows_from(means))
    assert len(checks) == 2 and all(c["holds"] for c in checks)   # epsilon 10 is not checked
    assert checks[1]["not_beating"] == ["gem-pub"]
    means[("titanic", "aim", 1.0)] = 0.4
    assert reproduce.findings("jam-titanic", rows_from(means))[1]["holds"] is False


def test_worst_seed_margin_is_the_closest_gap_between_seed_ranges():
    rows = rows_from(adult_means())
    for r in rows:
        r["min"], r["max"] = r["mean"] - 0.01, r["mean"] + 0.01
    rows[0]["max"] = 0.195          # adult_pub025, JAM-PGM, epsilon 0.1: worst seed near PMW-Pub's
    check = by_name(reproduce.findings("jam-adult", rows))[
        "JAM-PGM below PMW-Pub and GEM-Pub at almost every point"]
    (point, margin), = check["worst_seed_margin"].items()
    assert rows[0]["dataset"] == "adult_pub025" and rows[0]["epsilon"] == 0.1
    assert point == "adult_pub025 eps 0.1" and margin == pytest.approx(0.19 - 0.195)
