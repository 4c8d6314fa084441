"""``Synthesizer.run``/``fit``'s ``numeric_columns`` and ``categorical_columns``:
the same choices, the same domain and the same errors as ``synth run
--numeric/--categorical`` (one code path, ``synth_core.api.domain_choices``)."""

from __future__ import annotations

import json

import pytest

from synth_core import Synthesizer
from synth_core.cli import main
from synth_core.errors import ConfigError, SynthError
from test_schema_infer import FAST, ZIPS, files  # noqa: F401  (the fixture)

#: FAST's run settings as keyword arguments
SETTINGS = dict(rounds=2, workload="all-1way", fit_iters=5, final_fit_iters=5, seed=0)


def api_run(data, **kwargs):
    return Synthesizer("mwem-pgm", epsilon=1.0, **SETTINGS).fit(data, **kwargs)


def test_api_kind_choices_give_the_cli_domain_and_release(files):
    out, report = files / "s.csv", files / "r.json"
    assert main(["run", "--data", str(files / "table.csv"), "--mechanism", "mwem-pgm", *FAST,
                 "--categorical", "zip", "--numeric", "age", "--drop", "row",
                 "--out", str(out), "--report", str(report)]) == 0
    cli = json.loads(report.read_text())
    res = api_run(files / "table.csv", categorical_columns=["zip"], numeric_columns="age",
                  drop_columns="row")
    kinds = {c["name"]: c["kind"] for c in res.report["schema"]["columns"]}
    assert kinds["zip"] == "categorical" and kinds["age"] == "numeric" and "row" not in kinds
    assert res.report["schema"] == cli["schema"]
    assert res.report["data"]["dropped_columns"] == ["row"]
    # same domain, seed and settings: the same synthetic table as the CLI's
    res.write(files / "api.csv")
    assert (files / "api.csv").read_bytes() == out.read_bytes()
    assert set(res.synthetic["zip"].dropna()) <= set(ZIPS)


def test_without_choices_the_kinds_are_the_inferred_ones(files):
    """Whole-number ages read off data become one category per value; the
    choice bins them as numbers."""
    chosen = api_run(files / "table.csv", numeric_columns="age", drop_columns=["row"])
    plain = api_run(files / "table.csv", drop_columns=["row"])
    assert chosen.inputs.schema.column("age").kind == "numeric"
    assert plain.inputs.schema.column("age").kind == "categorical"


def test_kind_choices_are_refused_as_the_cli_refuses_them(files, capsys):
    from synth_core import load_sample
    sample = load_sample("titanic")
    with pytest.raises(ConfigError) as declared:
        api_run(sample.private, schema=sample.schema, numeric_columns=["age"])
    assert "declared schema" in str(declared.value) and "schema=" in str(declared.value)
    assert "--schema FILE" in declared.value.text("cli")
    with pytest.raises(ConfigError) as engine:
        api_run(files / "table.csv", numeric_columns=["age"], backend="duckdb")
    assert "duckdb backend needs a declared schema" in str(engine.value)
    with pytest.raises(ConfigError, match="listed twice"):
        api_run(files / "table.csv", numeric_columns="age,age")
    with pytest.raises(ConfigError, match="every data column .* is dropped"):
        api_run(sample.private, schema=sample.schema, drop_columns=list(sample.private.columns))
    with pytest.raises(SynthError) as unknown:
        api_run(files / "table.csv", numeric_columns=["nope"], drop_columns=["row"])
    assert "'nope'" in str(unknown.value)
    assert main(["run", "--sample", "titanic", "--mechanism", "mwem-pgm", *FAST, "--numeric",
                 "age", "--out", str(files / "t.csv"), "--report", str(files / "t.json")]) == 2
    err = capsys.readouterr().err
    assert "declared schema" in err and "--schema FILE" in err and "schema=" not in err
