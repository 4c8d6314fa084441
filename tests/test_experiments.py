"""Experiments API and ``synth sweep``: specs, run ids, the result store,
resume, and nothing lost when a sweep is killed (SIGKILL) mid-run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from conftest import wait_until

from synth_core.api import RunConfig, Synthesizer
from synth_core.errors import ConfigError
from synth_core.experiments import (RUN_COLUMNS, DatasetSpec, MechanismSpec, ResultStore, Sweep,
                                    pending_jobs, run_sweep)
from synth_core.version import code_fingerprint, source_files, source_fingerprint

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data" / "titanic"
FAST = {"rounds": 2, "fit_iters": 10, "final_fit_iters": 20, "workload": "all-2way"}


def _spec_text(name="t", mechanisms='["jam-pgm", "public-only"]', epsilons="[0.5, 2.0]",
               seeds="[0]", extra_dataset="") -> str:
    settings = "\n".join(f"{k} = {json.dumps(v)}" for k, v in FAST.items())
    return (f'name = "{name}"\nmechanisms = {mechanisms}\nepsilons = {epsilons}\nseeds = {seeds}\n'
            f'[settings]\n{settings}\n[[datasets]]\nname = "titanic"\nsample = "titanic"\n'
            f"{extra_dataset}")


def test_spec_file_builds_the_full_grid_with_stable_run_ids(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text(
        mechanisms='["jam-pgm", {label = "cond-aim", mechanism = "aim", options = {conditional = true}}, "vjam-pgm"]',
        epsilons="[0.1, 1, 10]", seeds="[0, 1]", extra_dataset='public_columns = ["sex", "pclass"]\n'))
    sweep = Sweep.from_file(tmp_path / "s.toml")
    jobs = sweep.jobs()
    assert len(jobs) == sweep.size == 3 * 3 * 2
    assert len({j.run_id for j in jobs}) == len(jobs)
    assert [j.run_id for j in Sweep.from_file(tmp_path / "s.toml").jobs()] == [j.run_id for j in jobs]
    by_label = {j.mechanism.label: j for j in jobs}
    # public columns go to the mechanisms that use them, not to plain jam-pgm
    assert by_label["cond-aim"].public_columns == ("sex", "pclass")
    assert by_label["vjam-pgm"].public_columns == ("sex", "pclass")
    assert by_label["jam-pgm"].public_columns == ()
    assert all(j.config.mode == "research" and j.config.workload == "all-2way" for j in jobs)
    # the seed comes first: a partial sweep covers whole settings
    assert [j.config.seed for j in jobs[:9]] == [0] * 9
    # a changed setting or changed data gives new run ids
    other = Sweep(sweep.datasets, sweep.mechanisms, sweep.epsilons, sweep.seeds,
                  {**sweep.settings, "delta": 1e-6}, sweep.name)
    assert not {j.run_id for j in other.jobs()} & {j.run_id for j in jobs}
    df = pd.read_csv(SAMPLE / "private.csv")
    a = DatasetSpec("t", df, schema=SAMPLE / "schema.json")
    b = DatasetSpec("t", df.iloc[1:], schema=SAMPLE / "schema.json")
    assert a.fingerprint() != b.fingerprint()


@pytest.mark.parametrize("text, needle", [
    ('name = "x"\nmechanisms = ["nope"]\nepsilons = [1]\n[[datasets]]\nsample = "titanic"\n',
     "Unknown mechanism"),
    ('name = "x"\nmechanisms = [{mechanism = "aim", options = {colour = 1}}]\nepsilons = [1]\n'
     '[[datasets]]\nsample = "titanic"\n', "no option 'colour'"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = []\n[[datasets]]\nsample = "titanic"\n',
     "at least one epsilon"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1]\n[[datasets]]\nname = "d"\n', "lacks 'data'"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1]\n[[datasets]]\ndata = "missing.csv"\n',
     "does not exist"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1]\n[settings]\nseed = 3\n'
     '[[datasets]]\nsample = "titanic"\n', "Unknown sweep setting"),
    ('mechanisms = ["aim"\n', "not valid TOML"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1, "x"]\n[[datasets]]\nsample = "titanic"\n',
     "'epsilons' holds 'x', which is not a number"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1]\nseeds = ["start"]\n[[datasets]]\n'
     'sample = "titanic"\n', "'seeds' holds 'start', which is not a whole number"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = 1\n[[datasets]]\nsample = "titanic"\n',
     "'epsilons' must be a list"),
    ('name = "x"\nmechanisms = ["aim"]\nepsilons = [1]\ndatasets = ["x"]\n',
     "Each dataset of a sweep spec is a table"),
    ("[1, 2]", "not a list"),                       # a JSON spec that is not an object
])
def test_bad_specs_get_specific_errors(tmp_path, text, needle):
    spec = tmp_path / ("s.json" if text.startswith("[") else "s.toml")
    spec.write_text(text)
    with pytest.raises(ConfigError) as info:
        Sweep.from_file(spec).jobs()
    assert needle in str(info.value) and not str(info.value).endswith("..")


def test_sweep_stores_full_config_and_resume_skips_finished_runs(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text())
    sweep = Sweep.from_file(tmp_path / "s.toml")
    store = ResultStore(tmp_path / "store")
    rows = list(run_sweep(sweep, store, quiet=True))
    assert [r["status"] for r in rows] == ["finished"] * 4
    runs = store.runs()
    assert len(runs) == 4 and set(runs.columns) >= set(RUN_COLUMNS)
    # each row names the code that made it
    assert (runs["code"] == code_fingerprint()).all() and len(code_fingerprint()) == 12
    cfg = json.loads(runs.loc[runs["mechanism"] == "jam-pgm", "config"].iloc[0])
    assert cfg["run"]["rounds"] == 2 and cfg["run"]["mode"] == "research"
    assert cfg["dataset"]["public"].endswith("public.csv")
    # the public-only baseline spends nothing; jam-pgm spends within its budget
    assert (runs.loc[runs["mechanism"] == "public-only", "rho_spent"] == 0).all()
    assert (runs["rho_spent"] <= runs["rho"] + 1e-12).all()
    assert len(store.marginals()) == 4 * 15          # 15 two-way marginals of 6 columns
    mtimes = {p.name: p.stat().st_mtime_ns for p in store.runs_dir.iterdir()}
    # resume: nothing left to do, nothing rewritten
    assert pending_jobs(sweep, store) == ([], 4)
    assert list(run_sweep(sweep, store, quiet=True)) == []
    assert {p.name: p.stat().st_mtime_ns for p in store.runs_dir.iterdir()} == mtimes
    # a larger grid runs only what is new
    bigger = Sweep(sweep.datasets, sweep.mechanisms, (0.5, 2.0, 8.0), sweep.seeds,
                   sweep.settings, sweep.name)
    new = list(run_sweep(bigger, store, quiet=True))
    assert sorted((r["mechanism"], r["epsilon"]) for r in new) == [("jam-pgm", 8.0),
                                                                     ("public-only", 8.0)]
    summary = store.summary()
    assert len(summary) == 6 and (summary["runs"] == 1).all()


def test_failed_runs_are_rows_and_are_retried(tmp_path):
    df = pd.read_csv(SAMPLE / "private.csv")
    sweep = Sweep((DatasetSpec("nopub", df, schema=SAMPLE / "schema.json"),),
                  (MechanismSpec("jam-pgm", "jam-pgm"),), (1.0,), (0,), dict(FAST))
    store = ResultStore(tmp_path / "store")
    rows = list(run_sweep(sweep, store))
    assert rows[0]["status"] == "failed" and "public rows" in rows[0]["error"]
    assert len(store.runs()) == 1 and store.finished_ids() == set()
    assert len(pending_jobs(sweep, store)[0]) == 1       # tried again next time


def test_stop_request_stores_nothing_for_the_unfinished_run(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text(mechanisms='["jam-pgm"]', epsilons="[1.0]"))
    store = ResultStore(tmp_path / "store")
    events = []
    rows = list(run_sweep(Sweep.from_file(tmp_path / "s.toml"), store,
                          should_stop=lambda: len(events) >= 1,
                          on_event=lambda job, ev: events.append(ev)))
    assert rows == [] and store.runs().empty and len(events) == 1


def test_isolated_runs_write_their_own_results(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text(mechanisms='["public-only"]', epsilons="[1.0]"))
    store = ResultStore(tmp_path / "store")
    rows = list(run_sweep(Sweep.from_file(tmp_path / "s.toml"), store, isolate=True, quiet=True))
    assert len(rows) == 1 and rows[0]["status"] == "finished" and rows[0]["peak_rss_mb"] > 0
    assert len(store.runs()) == 1 and len(store.marginals()) == 15


def _children_running(module: str) -> list[int]:
    """Process ids of this process's children running ``python -m module``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (stat.parent / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        if ppid == os.getpid() and module.encode() in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_an_isolated_retry_killed_before_writing_is_not_taken_for_the_earlier_attempt(tmp_path):
    """A failed job is retried; when the retry's process died without writing (OOM
    killed), the earlier attempt's row stood for it, and a budget charge was settled
    with that attempt's rho_spent (0), not this one's."""
    import threading
    (tmp_path / "s.toml").write_text(_spec_text(mechanisms='["mwem-pgm"]', epsilons="[1.0]"))
    sweep = Sweep.from_file(tmp_path / "s.toml")
    store = ResultStore(tmp_path / "store")
    [job] = sweep.jobs()
    store.write({"run_id": job.run_id, "sweep": job.sweep, "status": "failed",
                 "error": "the earlier attempt", "rho_spent": 0.0})
    rows = []
    worker = threading.Thread(target=lambda: rows.extend(run_sweep(sweep, store, isolate=True,
                                                                    quiet=True)))
    worker.start()
    wait_until(lambda: _children_running("synth_core.experiments"), 60, "the isolated child")
    for pid in _children_running("synth_core.experiments"):
        os.kill(pid, signal.SIGKILL)
    worker.join(120)
    [row] = rows
    assert row["status"] == "failed" and "exit code -9" in row["error"]
    assert row.get("rho_spent") is None          # unknown: a charge counts the reservation


def test_a_sweep_with_a_label_or_option_it_cannot_run_is_refused_before_any_job(tmp_path):
    """A label reading as a seed stopped the sweep at its job (after the earlier jobs
    were charged), and an option of the wrong type raised a raw TypeError there."""
    for mechanisms, message in (
            ('["mwem-pgm", {label = "mwem seed=1", mechanism = "mwem-pgm"}]',
             "sweep mechanism label 'mwem seed=1' reads as a seed"),
            ('[{label = "pb", mechanism = "privbayes-pgm", options = {degree = "2"}}]',
             "Option degree takes an integer, got '2'")):
        (tmp_path / "s.toml").write_text(_spec_text(mechanisms=mechanisms))
        with pytest.raises(ConfigError, match=message):
            Sweep.from_file(tmp_path / "s.toml")


def _synth(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "synth_core.cli", *args], cwd=kw.pop("cwd"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kw)


@pytest.mark.slow
def test_sigkill_mid_sweep_then_resume_loses_and_duplicates_nothing(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text(name="kill me", mechanisms='["jam-pgm", "mwem-pgm"]',
                                                epsilons="[0.5, 1.0, 2.0]"))
    store = ResultStore(tmp_path / "out" / "sweeps" / "kill-me")
    proc = _synth("sweep", "s.toml", "--quiet", cwd=tmp_path)
    wait_until(lambda: proc.poll() is not None or len(list(store.runs_dir.glob("*.parquet"))) >= 2,
               240, "two stored runs of the sweep")
    assert proc.poll() is None, "the sweep ended before it could be killed: " + proc.stderr.read()
    os.killpg(proc.pid, signal.SIGKILL)                  # no chance to clean up
    proc.wait(30)
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in store.runs_dir.glob("*.parquet")}
    assert 2 <= len(before) < 6
    assert set(store.runs()["status"]) == {"finished"}   # every stored file is a whole result

    out = subprocess.run([sys.executable, "-m", "synth_core.cli", "sweep", "s.toml", "--quiet"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert f"{len(before)} already in" in out.stderr
    new_rows = [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]
    assert len(new_rows) == 6 - len(before)
    runs = store.runs()
    assert len(runs) == 6 and runs["run_id"].is_unique and set(runs["status"]) == {"finished"}
    # the runs finished before the kill were not run again
    after = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in store.runs_dir.glob("*.parquet")}
    assert all(after[name] == stamp for name, stamp in before.items())
    listing = subprocess.run([sys.executable, "-m", "synth_core.cli", "sweep", "s.toml", "--list"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert listing.stdout.count("done ") == 6 and "todo" not in listing.stdout


def test_a_mechanisms_own_rounds_and_model_size_options_become_the_run_settings():
    cfg = RunConfig("jam-pgm", rounds=2, max_model_size=80.0,
                    options={"rounds": 3, "max_model_size": 10.0, "conditional": True})
    resolved = cfg.with_option_overrides()
    assert (resolved.rounds, resolved.max_model_size) == (3, 10.0)
    assert resolved.options == {"conditional": True} and cfg.options["rounds"] == 3
    assert RunConfig("aim", rounds=2).with_option_overrides() == RunConfig("aim", rounds=2)
    synth = Synthesizer.from_config(resolved)
    assert synth.config.rounds == 3 and synth.config.max_model_size == 10.0


def test_a_mechanisms_own_rounds_override_the_shared_setting(tmp_path):
    (tmp_path / "s.toml").write_text(_spec_text(
        mechanisms='["jam-pgm", {label = "jam T=3", mechanism = "jam-pgm", options = {rounds = 3}}]',
        epsilons="[1.0]"))
    rows = {r["mechanism"]: r for r in run_sweep(Sweep.from_file(tmp_path / "s.toml"),
                                                 ResultStore(tmp_path / "store"))}
    assert rows["jam-pgm"]["rounds"] == 2 and rows["jam T=3"]["rounds"] == 3


def test_a_dataset_carries_its_column_choices_to_every_job(tmp_path):
    """``drop_columns`` / ``numeric_columns`` / ``categorical_columns`` of a spec
    dataset reach each run (``Synthesizer.run``'s choices of the same names);
    they identify the data, so they change the run ids."""
    spec = {"name": "kinds", "mechanisms": ["mwem-pgm"], "epsilons": [1.0], "settings": FAST,
            "datasets": [{"name": "own", "data": str(SAMPLE / "private.csv"),
                          "drop_columns": "parch", "numeric_columns": ["sibsp"],
                          "categorical_columns": ["age"]}]}
    sweep = Sweep.from_dict(spec)
    d = sweep.datasets[0]
    assert (d.drop_columns, d.numeric_columns, d.categorical_columns) == (
        ("parch",), ("sibsp",), ("age",))
    assert d.fingerprint() != DatasetSpec("own", SAMPLE / "private.csv").fingerprint()
    store = ResultStore(tmp_path / "store")
    (row,) = list(run_sweep(sweep, store))
    assert row["status"] == "finished", row["error"]
    saved = json.loads(row["config"])["dataset"]
    assert saved["drop_columns"] == ["parch"] and saved["categorical_columns"] == ["age"]
    marginals = store.marginals()["marginal"]
    assert not marginals.str.contains("parch").any() and marginals.str.contains("sibsp").any()


def test_the_code_fingerprint_follows_source_bytes_paths_and_versions(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").write_text("y = 1\n")
    versions = {"numpy": "2.0", "jax": "0.10"}
    first = source_fingerprint(root, versions)
    assert source_fingerprint(root, dict(reversed(versions.items()))) == first
    # not the code: compiled files, data files, hidden entries, an editor's dangling lock link
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0\1")
    (root / "calibration.json").write_text("{}")
    (root / ".ipynb_checkpoints").mkdir()
    (root / ".ipynb_checkpoints" / "a-checkpoint.py").write_text("x = 3\n")
    (root / ".#a.py").symlink_to(root / "gone.py")
    assert source_fingerprint(root, versions) == first
    assert [p.name for p in source_files(root)] == ["a.py", "b.py"]
    (root / "a.py").write_text("x = 2\n")
    changed_source = source_fingerprint(root, versions)
    (root / "a.py").write_text("x = 1\n")
    (root / "sub" / "b.py").rename(root / "sub" / "c.py")
    moved = source_fingerprint(root, versions)
    (root / "sub" / "c.py").rename(root / "sub" / "b.py")
    assert source_fingerprint(root, versions) == first
    other_version = source_fingerprint(root, {**versions, "jax": "0.11"})
    assert len({first, changed_source, moved, other_version}) == 4


def test_two_processes_of_one_checkout_record_the_same_code():
    code = "from synth_core.version import code_fingerprint; print(code_fingerprint())"
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)}
                           ).stdout.strip() for seed in (1, 2)}
    assert outs == {code_fingerprint()}


def test_a_store_written_before_the_code_column_reads_with_it_empty(tmp_path):
    store = ResultStore(tmp_path / "store")
    old = {c: None for c in RUN_COLUMNS if c != "code"} | dict(run_id="old", status="finished",
                                                                workload_error=0.5)
    store.runs_dir.mkdir(parents=True)
    pd.DataFrame([old]).to_parquet(store.runs_dir / "old.parquet", index=False)
    runs = store.runs()
    assert list(runs.columns) == RUN_COLUMNS and runs["code"].isna().all()
    store.write({c: None for c in RUN_COLUMNS} | dict(run_id="new", status="finished",
                                                      code="abc"))
    codes = store.runs().set_index("run_id")["code"]
    assert codes["new"] == "abc" and pd.isna(codes["old"])


def test_the_docs_show_the_example_spec_as_it_is():
    """docs/experiments.md prints docs/examples/titanic_sweep.toml: the reader runs
    the file, so the page must show that file, not an older one."""
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "experiments.md").read_text(encoding="utf-8")
    start = doc.index("`docs/examples/titanic_sweep.toml`:\n\n```toml\n") + \
        len("`docs/examples/titanic_sweep.toml`:\n\n```toml\n")
    shown = doc[start:doc.index("```", start)]
    assert shown == (root / "docs" / "examples" / "titanic_sweep.toml").read_text(encoding="utf-8")
