"""The workbench's session state (synth_core.workbench), as plain Python."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from conftest import all_keys
from synth_core.budget import BudgetAccount
from synth_core.errors import ConfigError, DataError, SchemaError, SynthError, WorkloadError
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core.workbench import (RunSettings, Workbench, candidates_frame,
                                  events_frame, mechanism_parameters, supports_public_columns,
                                  workload_spec)

FAST = dict(rounds=3, fit_iters=20, final_fit_iters=50, seed=0)


def flagged_csv(n=400, seed=0) -> bytes:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "sex": rng.choice(["F", "M"], n),
        "age": rng.integers(18, 80, n),
        "edu": rng.choice(["low", "mid", "high"], n),
        "is_public": np.where(rng.random(n) < 0.25, "yes", "no"),
    })
    return df.to_csv(index=False).encode()


@pytest.fixture
def wb():
    w = Workbench()
    w.load_sample("titanic")
    return w


@pytest.fixture(scope="module")
def finished():
    w = Workbench()
    w.load_sample("titanic")
    w.update_settings(**FAST)
    w.start_run()
    assert w.worker.wait(120)
    run = w.collect()
    assert run is not None and run.ok, run.failure
    return w, run


def test_load_sample_sets_everything(wb):
    assert wb.has_data and wb.data_name == "titanic:private"
    assert wb.schema.source == "declared"
    assert wb.public.kind == "table" and len(wb.public.rows.table) == 301
    assert wb.settings.mechanism == "jam-pgm"
    assert "301 rows" in wb.public_summary()
    w = Workbench()
    w.load_sample("titanic-full")
    assert w.public.kind == "none" and w.settings.mechanism == "aim"


def test_bad_sample_or_upload_keeps_what_was_loaded(wb):
    before = wb.data
    with pytest.raises(SynthError):
        wb.load_sample("nope")
    with pytest.raises(DataError):
        wb.load_upload("table.txt", b"a,b\n1,2\n")
    with pytest.raises(SynthError):
        wb.load_upload("broken.parquet", b"not parquet at all")
    assert wb.data is before and wb.public.kind == "table"


def test_upload_infers_a_private_domain():
    w = Workbench()
    w.load_upload("people.csv", flagged_csv())
    assert w.data_name == "people.csv" and len(w.data) == 400
    assert w.schema.source == "private"
    assert set(w.schema.names) == {"sex", "age", "edu", "is_public"}
    assert w.settings.mechanism == "aim"
    table = w.domain.table()
    assert list(table["column"]) == list(w.schema.names)


def test_schema_edit_validation_names_the_column(wb):
    schema = wb.schema
    with pytest.raises(SchemaError) as exc:
        wb.update_column("age", kind="numeric", lower=50, upper=10, bins=4, missing=True)
    assert exc.value.column == "age"
    assert "age" in wb.domain.errors and "lower" in wb.domain.errors["age"]
    assert wb.schema is schema                      # unchanged
    with pytest.raises(DataError) as exc:           # the data do not fit the new bounds
        wb.update_column("age", kind="numeric", lower=0, upper=10, bins=4, missing=True)
    assert exc.value.column == "age" and "outside the bounds" in exc.value.message
    # the same bounds, clipped: the values past them go to the last bin
    wb.update_column("age", kind="numeric", lower=0, upper=10, bins=4, missing=True, clip=True)
    assert wb.schema.column("age").clip and "age" not in wb.domain.errors
    table = wb.domain.table().set_index("column")
    assert table.loc["age", "domain"].endswith("values past the bounds clipped into the end bins")
    assert wb.schema.encode(wb.data)["age"].max() == 3 + 1      # last bin, then missing code
    with pytest.raises(DataError):                  # a category is missing
        wb.update_column("sex", kind="categorical", categories="female")
    assert "sex" in wb.domain.errors
    wb.update_column("age", kind="numeric", lower=0, upper=80, bins=8, missing=True)
    assert wb.schema.column("age").bins == 8 and wb.domain.edited
    assert "age" not in wb.domain.errors
    wb.update_column("sex", kind="categorical", categories="female, male")
    assert wb.schema.column("sex").categories == ("female", "male")
    assert json.loads(wb.domain.json_bytes())["columns"][3]["bins"] == 8


def test_schema_file_declares_the_domain():
    w = Workbench()
    w.load_upload("people.csv", flagged_csv())
    w.set_public_flag("is_public")
    schema = {"columns": [
        {"name": "sex", "kind": "categorical", "categories": ["F", "M"]},
        {"name": "age", "kind": "numeric", "lower": 0, "upper": 100, "bins": 10},
        {"name": "edu", "kind": "categorical", "categories": ["low", "mid", "high"]}]}
    w.load_schema_file("s.json", json.dumps(schema).encode())
    assert w.schema.source == "declared"
    with pytest.raises(SchemaError):
        w.load_schema_file("bad.json", b"{not json")
    bad = dict(columns=schema["columns"][:2] + [
        {"name": "edu", "kind": "categorical", "categories": ["low"]}])
    with pytest.raises(DataError) as exc:
        w.load_schema_file("narrow.json", json.dumps(bad).encode())
    assert exc.value.column == "edu"
    assert w.schema.source == "declared" and len(w.schema.column("edu").categories) == 3


def test_public_flag_filter_and_table():
    w = Workbench()
    w.load_upload("people.csv", flagged_csv())
    assert w.flag_candidates() == ["is_public"]
    with pytest.raises(DataError):
        w.set_public_flag("sex")                    # not true/false
    w.set_public_flag("is_public")
    assert w.public.kind == "flag" and "is_public" not in w.schema.names
    n_pub = len(w.public_rows_frame())
    assert 0 < n_pub < 400 and f"{n_pub:,} rows flagged" in w.public_summary()
    kw = w.run_kwargs()
    assert kw["public_flag"] == "is_public"
    inputs = w.prepare()
    assert inputs.data.public.n == n_pub and inputs.data.private.n == 400 - n_pub

    w.set_public_filter("sex", ["F"])
    assert w.public.kind == "filter" and "public if sex in F" in w.data.columns
    assert w.data_columns == ["sex", "age", "edu", "is_public"]
    assert w.prepare().public_label == \
        "rows of the private table flagged by column 'public if sex in F'"
    assert (w.public_rows_frame()["sex"] == "F").all()
    with pytest.raises(DataError):
        w.set_public_filter("sex", ["F", "M"])      # nothing private left
    with pytest.raises(DataError):
        w.set_public_filter("sex", [])
    assert w.public.kind == "filter"                # unchanged by the errors

    w.clear_public_rows()
    assert w.public.kind == "none" and list(w.data.columns) == ["sex", "age", "edu", "is_public"]
    assert "is_public" in w.schema.names            # the flag column is back in the schema
    with pytest.raises(DataError):
        w.set_public_table("pub.csv", b"sex,age,edu,is_public\nX,20,low,no\n")
    w.set_public_table("pub.csv", b"sex,age,edu,is_public\nF,20,low,no\nM,30,mid,yes\n")
    assert w.public.kind == "table" and w.public.rows.name == "pub.csv"


def test_public_columns_and_unsupported_mechanism(wb):
    with pytest.raises(SchemaError):
        wb.set_public_columns(["nope"])
    with pytest.raises(SchemaError):
        wb.set_public_columns(list(wb.schema.names))
    wb.set_public_columns(["sex"])
    assert wb.public.columns == ("sex",)
    assert not supports_public_columns("mwem-pgm") and not supports_public_columns("public-only")
    assert supports_public_columns("aim") and supports_public_columns("jam-pgm")
    wb.update_settings(**FAST)
    wb.update_settings(mechanism="public-only")
    with pytest.raises(ConfigError, match="does not use public columns"):
        wb.start_run()
    assert wb.worker is None
    wb.update_settings(mechanism="aim", rounds=None)
    with pytest.raises(ConfigError, match="only with conditional generation") as refused:
        wb.start_run()                              # refused before it starts, with the way
    assert "Conditional AIM" in refused.value.hint and wb.worker is None
    # with conditional generation on, AIM runs and every record keeps its public value
    # (the records in a random order: docs/trust.md, "Record order")
    wb.update_settings(mechanism="aim", rounds=8, options={"conditional": True})
    worker = wb.start_run()
    assert worker.wait(120)
    run = wb.collect()
    assert run.ok, run.failure
    assert sorted(run.result.synthetic["sex"]) == sorted(wb.data["sex"])
    assert run.result.report["conditional_generation"]["conditioned_on"] == ["sex"]


def test_public_proxy_error_is_curator_only(wb):
    overall, table = wb.public_proxy_errors()
    assert 0 < overall < 2 and len(table) == 20     # all 3-way of 6 columns
    assert table["public proxy error"].is_monotonic_decreasing
    assert overall == pytest.approx(table["public proxy error"].mean())
    wb.clear_public_rows()
    assert wb.public_proxy_errors() is None


def test_workload_spec_builder(wb):
    assert workload_spec("all", k=2) == "all-2way"
    assert workload_spec("target", k=2, targets=["survived", "sex"]) == "target:survived+sex:2"
    spec = workload_spec("custom", custom=[(["age", "sex"], 1), (["pclass", "survived"], 2.5)])
    assert spec == "age,sex;pclass,survived*2.5"
    with pytest.raises(WorkloadError):
        workload_spec("custom", custom=[])
    with pytest.raises(WorkloadError):
        workload_spec("custom", custom=[(["age"], -1)])
    with pytest.raises(WorkloadError):
        workload_spec("target", targets=[])
    wb.update_settings(workload=spec)
    assert len(wb.workload()) == 2 and wb.workload().weights == (1.0, 2.5)
    with pytest.raises(WorkloadError):
        wb.update_settings(workload="age,height")
    assert wb.settings.workload == spec


def test_settings_validation_and_budget(wb):
    with pytest.raises(SynthError):
        wb.update_settings(epsilon=-1)
    with pytest.raises(SynthError):
        wb.update_settings(mechanism="nope")
    with pytest.raises(SynthError):
        wb.update_settings(seed=-3)
    assert wb.settings == RunSettings(mechanism="jam-pgm")
    b = wb.budget_summary()
    assert b["rho"] > 0 and b["session_rho"] == 0
    wb.update_settings(mechanism="public-only")         # spends none: its budget shows 0
    assert wb.budget_summary()["rho"] == 0
    wb.update_settings(mechanism="jam-pgm")
    secs, how = wb.estimate_seconds()
    assert secs > 0 and how
    assert wb.planned_rounds() == 30
    assert mechanism_parameters("jam-pgm")["rounds"] == 30


def test_finished_run_release_has_no_curator_values(finished):
    w, run = finished
    assert run.status == "finished" and [e.round for e in run.events] == [1, 2, 3]
    assert w.session_rho_spent() == pytest.approx(run.result.ledger.total)
    files = w.release_files(run)
    assert set(files) == {"synthetic.csv", "synthetic.parquet", "report.json", "schema.json",
                          "reproduce.sh"}
    report = json.loads(files["report.json"])
    check_release(report)
    assert not CURATOR_ONLY_KEYS & set(all_keys(report))
    for name in ("synthetic.csv", "reproduce.sh", "schema.json"):
        text = files[name].decode()
        if name == "reproduce.sh":   # its comments may say where the seed is kept
            text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        for key in ("curator", "workload_error", "public_proxy", "scores"):
            assert key not in text
    csv = pd.read_csv(io.BytesIO(files["synthetic.csv"]))
    pq = pd.read_parquet(io.BytesIO(files["synthetic.parquet"]))
    assert len(csv) == len(pq) == 1008 and list(csv.columns) == list(w.schema.names)
    assert "--sample titanic" in run.reproduce and "--rounds 3" in run.reproduce
    assert "--schema" not in run.reproduce
    # the releasable round table and the curator-only candidate pool
    table = events_frame(run.events)
    assert list(table["round"]) == [1, 2, 3] and "score" not in table.columns
    pool = candidates_frame(run.events[-1])
    assert pool["chosen"].sum() == 1 and set(pool["source"]) == {"public", "private"}
    # a second estimate uses the measured run
    assert "run 1" in w.estimate_seconds()[1]


@pytest.mark.slow
def test_reproduce_script_reruns_the_cli(finished, tmp_path):
    """The script carries no seed; with the run's seed added (a curator who holds
    it: here a ``synth`` on PATH that appends ``--seed 0`` before calling the
    real CLI) it repeats the run exactly."""
    import os
    import subprocess
    import sys
    w, run = finished
    text = w.release_files(run)["reproduce.sh"].decode()
    assert "--seed" not in text and "--mode research" in text
    assert "an exact repeat needs its seed" in text
    script = tmp_path / "reproduce.sh"
    script.write_text(text)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    real = Path(sys.executable).parent / "synth"
    (bin_dir / "synth").write_text(f'#!/bin/sh\nexec "{real}" "$@" --seed {run.settings.seed}\n')
    (bin_dir / "synth").chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    out = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    cli = json.loads((tmp_path / "report.json").read_text())
    assert cli["measurements"] == run.result.report["measurements"]
    assert cli["config"] == run.result.report["config"]


def test_release_refuses_unfinished_runs(finished):
    w, run = finished
    from dataclasses import replace
    with pytest.raises(ConfigError):
        w.release_files(replace(run, status="stopped", result=None))


def test_compare_sweep_saves_and_resumes(tmp_path, monkeypatch):
    from synth_core import charts
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    w = Workbench()
    w.load_sample("titanic")
    w.update_settings(**FAST)
    with pytest.raises(ConfigError):
        w.compare_jobs([], [1.0], 1)
    with pytest.raises(ConfigError):
        w.compare_jobs(["nope"], [1.0], 1)
    with pytest.raises(ConfigError):
        w.compare_jobs(["jam-pgm"], [1.0], 0)
    jobs, skipped = w.compare_jobs(["jam-pgm", "public-only"], [0.5, 4.0], 1)
    assert len(jobs) == 4 and skipped == 0
    sweep = w.start_compare(["jam-pgm", "public-only"], [0.5, 4.0], 1)
    with pytest.raises(ConfigError):                 # one background job at a time
        w.start_run()
    assert sweep.wait(240) and sweep.status == "finished", sweep.failure
    results, marginals = w.compare_results()
    assert len(results) == 4 and set(results["status"]) == {"finished"}
    assert len(marginals) == 4 * 20
    store = w.compare_store()
    assert store.root.parent == tmp_path / "compare" and len(list(store.runs_dir.glob("*.parquet"))) == 4
    # the full configuration of each run is stored with it
    cfg = json.loads(results["config"].iloc[0])
    assert cfg["run"]["workload"] == w.settings.workload and cfg["dataset"]["name"] == w.data_name
    assert w.session_rho_spent() == pytest.approx(results["rho_spent"].sum())
    # the public-only baseline is the public rows rescaled: its error is the proxy error
    pub = results[results["mechanism"] == "public-only"]["workload_error"].astype(float)
    assert np.allclose(pub, w.public_reference_error(), atol=0.02)
    # resume: saved jobs are skipped
    jobs, skipped = w.compare_jobs(["jam-pgm", "public-only"], [0.5, 4.0, 8.0], 1)
    assert skipped == 4 and [j["epsilon"] for j in jobs] == [8.0, 8.0]
    # figures
    summary = charts.compare_summary(results)
    assert len(summary) == 4 and (summary["runs"] == 1).all()
    fig = charts.compare_figure(results, w.public_reference_error())
    assert fig.layout.xaxis.type == "log" and len(fig.data) == 2
    assert len(charts.per_marginal_figure(marginals, 4.0).data) == 2


def test_compare_failures_are_rows_not_crashes(tmp_path, monkeypatch):
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path))
    w = Workbench()
    w.load_sample("titanic-full")
    w.update_settings(**FAST)
    # no public rows: jam-pgm is not in the list, refused up front with the reason
    with pytest.raises(ConfigError, match="JAM-PGM is built on public rows"):
        w.start_compare(["jam-pgm"], [1.0], 1)
    assert w.compare.worker is None and w.compare_results()[0].empty
    # AIM with fewer rounds than columns fails when it starts: a failed row, and the
    # table's account is charged what it measured, nothing (it was charged the whole
    # reservation)
    account = w.set_dataset_budget(5.0, 1e-9)
    w.update_settings(rounds=2)
    sweep = w.start_compare(["aim"], [1.0], 1)
    assert sweep.wait(60) and sweep.status == "finished"
    results, _ = w.compare_results()
    assert list(results["status"]) == ["failed"]
    assert "smaller than the number of (private) columns" in results["error"][0]
    [charge] = BudgetAccount.open(account.path).charges
    assert charge.rho_spent == 0 and charge.failed and w.dataset_budget().spent == 0


def test_charts_build_from_events(finished):
    from synth_core import charts
    _, run = finished
    assert len(charts.rounds_figure(run.events, 3).data) >= 1
    budget = charts.budget_figure(run.events)
    assert [t.name for t in budget.data] == ["selection", "measurement", "this run's budget"]
    assert len(charts.sigma_size_figure(run.events).data) == 2
    pool = candidates_frame(run.events[-1])
    fig = charts.candidates_figure(pool)
    assert "CURATOR-ONLY" in fig.layout.title.text
    colors = set(fig.data[0].marker.color)
    assert colors <= {charts.PUBLIC_COLOR, charts.PRIVATE_COLOR}


def test_reproduce_command_names_the_schema_when_the_cli_would_differ():
    w = Workbench()
    df = pd.read_csv(io.BytesIO(flagged_csv())).drop(columns=["age"])
    w.load_upload("people.csv", df.to_csv(index=False).encode())
    cmd = w.reproduce_command()
    assert "--data people.csv" in cmd and "--schema" not in cmd   # the CLI infers the same
    w.set_public_flag("is_public")                                # domain still private-read
    cmd = w.reproduce_command()
    assert "--public-flag is_public" in cmd and "--schema schema.json" in cmd
    assert "schema.json says so in its 'review' block" in cmd   # still not protected
    w.infer_schema_from_public()
    assert w.schema.source == "public" and w.schema.names == ("sex", "edu")
    assert "--schema" not in w.reproduce_command()
    w.set_public_filter("sex", ["F"])
    cmd = w.reproduce_command()
    assert "add a column is_public_row to the table: true where sex is one of F" in cmd
    assert "--public-flag is_public_row" in cmd
    assert w.schema.source == "private"             # is_public's domain came back from the data


def test_synth_core_never_imports_streamlit():
    import subprocess
    import sys
    code = ("import sys, synth_core, synth_core.workbench, synth_core.runner, synth_core.charts; "
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_upload_leaves_out_columns_without_a_domain_and_drop_column():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"name": [f"person {i}" for i in range(300)],
                       "sex": rng.choice(["F", "M"], 300), "empty": [None] * 300,
                       "edu": rng.choice(["a", "b"], 300)})
    w = Workbench()
    w.load_upload("names.csv", df.to_csv(index=False).encode())
    assert w.schema.names == ("sex", "edu")
    assert [c for c, _ in w.domain.left_out] == ["name", "empty"]
    assert "distinct values" in w.domain.left_out[0][1]
    w.drop_column("edu")
    assert w.schema.names == ("sex",)
    with pytest.raises(SchemaError):
        w.drop_column("sex")
    assert w.schema.names == ("sex",)
    with pytest.raises(DataError):                  # nothing usable at all
        Workbench().load_upload("e.csv", b"a\n")


def test_parquet_upload_and_public_table():
    df = pd.read_csv(io.BytesIO(flagged_csv()))
    buf = io.BytesIO()
    df.to_parquet(buf, index=False)
    w = Workbench()
    w.load_upload("people.parquet", buf.getvalue())
    assert w.data_name == "people.parquet" and len(w.data) == 400
    assert w.schema.names == ("sex", "age", "edu", "is_public")
    pub = io.BytesIO()
    df.head(50).to_parquet(pub, index=False)
    w.set_public_table("pub.parquet", pub.getvalue())
    assert w.public.kind == "table" and len(w.public.rows.table) == 50


def test_a_domain_read_off_the_private_table_stays_so_through_its_schema_file():
    """Downloading the schema of an uploaded table and declaring it again does not
    make it protected: the file carries a review block naming every column, and the
    run's report (and the CLI's, which reads the same file) says not protected."""
    w = Workbench()
    w.load_upload("mine.csv", flagged_csv())
    assert w.schema.source == "private"
    text = w.domain.json_bytes()
    spec = json.loads(text)
    assert spec["review"]["read_off_private"] == list(w.schema.names)
    w.load_schema_file("schema.json", text)
    assert w.schema.source == "private"
    from synth_core.schema import Schema
    assert Schema.from_json(spec).source == "private"
    # the review block deleted (values reviewed): declared
    del spec["review"]
    w.load_schema_file("schema.json", json.dumps(spec).encode())
    assert w.schema.source == "declared"
    assert "review" not in json.loads(w.domain.json_bytes())


def test_a_column_left_out_at_upload_says_what_to_do_in_the_app():
    """The reason names the Data page's controls, not the API's arguments."""
    w = Workbench()
    df = pd.DataFrame({"note": [f"text {i}" for i in range(3000)], "b": ["x", "y"] * 1500})
    w.load_upload("t.csv", df.to_csv(index=False).encode())
    ((column, why),) = w.domain.left_out
    assert column == "note" and "on the Data page" in why
    assert "categorical_columns=" not in why and "drop_columns=" not in why


def test_columns_read_off_the_private_table_are_declared_one_by_one():
    """An edit leaves a column read off the private table as it was unless the
    user states the new values are public knowledge; once no such column is
    left, the domain counts as declared (so the report says protected)."""
    w = Workbench()
    w.load_upload("people.csv", flagged_csv())
    assert w.schema.source == "private"
    assert w.domain.private_columns == set(w.schema.names)
    w.update_column("sex", kind="categorical", categories="F, M")          # not stated
    assert "sex" in w.domain.private_columns and w.schema.source == "private"
    w.update_column("sex", kind="categorical", categories="F, M, X", declared=True)
    assert "sex" not in w.domain.private_columns and w.schema.source == "private"
    w.update_column("age", kind="numeric", lower=0, upper=120, bins=12, declared=True)
    w.drop_column("is_public")
    assert w.domain.private_columns == {"edu"} and w.schema.source == "private"
    # the downloaded file lists only the column still read off the private table (it
    # listed every column, contradicting the page)
    assert json.loads(w.domain.json_bytes())["review"]["read_off_private"] == ["edu"]
    w.update_column("edu", kind="categorical", categories="low, mid, high", declared=True)
    assert not w.domain.private_columns and w.schema.source == "declared"
    assert "review" not in json.loads(w.domain.json_bytes())
    w.update_settings(mechanism="mwem-pgm", **FAST)
    w.start_run()
    assert w.worker.wait(120)
    run = w.collect()
    assert run.ok and run.result.report["domain"]["protected"]


def test_the_data_page_declares_a_column_with_its_box():
    from test_app_pages import go, new_app
    at = new_app()
    wb = at.session_state["wb"]
    wb.load_upload("people.csv", flagged_csv())
    go(at, "app_pages/data.py")
    at.selectbox(key="edit_column").set_value("sex").run()
    assert "Read off the private table (not protected)" in "".join(c.value for c in at.caption)
    at.text_input(key="cats_sex").set_value("F, M, X")
    at.checkbox(key="declared_sex").check()
    at.button[[b.label for b in at.button].index("Apply to column")].click().run()
    assert not at.exception
    assert "sex" not in wb.domain.private_columns and "age" in wb.domain.private_columns
