"""Release hygiene: reports carry only releasable values; exports are safe."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from synth_core import Synthesizer
from synth_core.errors import ConfigError
from synth_core.report import CURATOR_ONLY_KEYS, check_release, write_table
from conftest import all_keys


def test_check_release_refuses_curator_values():
    with pytest.raises(ConfigError, match="workload_error"):
        check_release({"rounds": [{"round": 1}], "x": {"workload_error": 0.1}})
    with pytest.raises(ConfigError, match="curator"):
        check_release({"rounds": [{"round": 1, "curator": {}}]})
    with pytest.raises(ConfigError, match="warning"):
        check_release({"domain": {"source": "private", "note": "fine"}})
    check_release({"domain": {"source": "declared", "note": ""}, "rounds": [{"round": 1}]})


@pytest.mark.parametrize("mechanism", ["jam-pgm", "aim", "public-only"])
def test_every_release_report_is_clean(mechanism, small_private, small_public, small_schema, tmp_path):
    synth = Synthesizer(mechanism, epsilon=1.0, rounds=5 if mechanism != "public-only" else None,
                        workload="all-2way", seed=0, fit_iters=50, final_fit_iters=100)
    res = synth.fit(small_private, None if mechanism == "aim" else small_public, schema=small_schema)
    assert not set(all_keys(res.report)) & CURATOR_ONLY_KEYS
    res.write(tmp_path / "s.csv", tmp_path / "r.json")
    on_disk = json.loads((tmp_path / "r.json").read_text())
    assert on_disk["privacy"]["rho_spent"] <= on_disk["privacy"]["rho"] * (1 + 1e-12)
    assert on_disk["ledger"]["spent_rho"] == pytest.approx(sum(c["rho"] for c in on_disk["ledger"]["charges"]))
    assert [m["clique"] for m in on_disk["measurements"]] == [list(m.clique) for m in res.measurements]
    assert "statement" in on_disk["privacy"] and "zCDP" in on_disk["privacy"]["statement"]
    # the statement describes what happened: a run that spent nothing measured nothing
    statement = on_disk["privacy"]["statement"]
    spent_nothing = on_disk["privacy"]["rho_spent"] == 0
    assert (mechanism == "public-only") == spent_nothing
    assert ("Nothing was measured or selected from the private table" in statement) == \
        spent_nothing
    assert ("every marginal was measured" in statement) is False   # research mode here
    assert ("Research mode" in statement) == (not spent_nothing)
    # curator-only diagnostics exist, but only through their own, labelled call
    assert res.curator_diagnostics().to_json()["label"].startswith("CURATOR-ONLY")


def test_csv_export_neutralises_formulas(tmp_path):
    df = pd.DataFrame({"a": ["=cmd|' /C calc'!A0", "+1+1", "-2", "@SUM(A1)", "plain"], "b": [1, 2, 3, 4, 5]})
    write_table(tmp_path / "x.csv", df)
    back = pd.read_csv(tmp_path / "x.csv")
    assert back["a"].tolist() == ["'=cmd|' /C calc'!A0", "'+1+1", "-2", "'@SUM(A1)", "plain"]
    write_table(tmp_path / "x.parquet", df)
    assert pd.read_parquet(tmp_path / "x.parquet").equals(df)
    from synth_core.errors import DataError
    with pytest.raises(DataError, match="unsupported"):
        write_table(tmp_path / "x.xlsx", df)


def test_unused_public_rows_are_not_claimed(small_private, small_public, small_schema):
    synth = Synthesizer("aim", epsilon=1.0, rounds=5, workload="all-2way", seed=0, fit_iters=50,
                        final_fit_iters=100)
    res = synth.fit(small_private, small_public, schema=small_schema)
    assert res.report["public_information"]["rows"] is None
    assert "public rows" not in res.report["privacy"]["statement"]
