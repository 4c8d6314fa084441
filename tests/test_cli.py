"""The command line, run as a user would: a real process on the bundled sample."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def synth(*args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "synth_core.cli", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=timeout)


def test_help_documents_every_option():
    out = synth("run", "--help")
    assert out.returncode == 0
    for option in ("--data", "--sample", "--public", "--public-flag", "--schema", "--mechanism",
                   "--epsilon", "--delta", "--neighbours", "--workload", "--rounds", "--seed",
                   "--max-model-size", "--out", "--report", "--diagnostics", "--fit-iters"):
        assert option in out.stdout
    for mech in ("aim", "jam-pgm", "public-only"):
        assert mech in out.stdout


def test_samples_are_listed():
    out = synth("samples")
    assert out.returncode == 0
    assert "adult-pub025" in out.stdout and "titanic" in out.stdout


def test_run_on_sample_writes_release_files(tmp_path):
    out, report, diag = tmp_path / "s.parquet", tmp_path / "r.json", tmp_path / "d.json"
    res = synth("run", "--sample", "titanic", "--mechanism", "jam-pgm", "--epsilon", "1",
                "--rounds", "3", "--workload", "all-2way", "--seed", "0", "--fit-iters", "100",
                "--out", str(out), "--report", str(report), "--diagnostics", str(diag))
    assert res.returncode == 0, res.stderr
    lines = [l for l in res.stdout.splitlines() if l.startswith("round")]
    assert len(lines) == 3  # one line per round, printed as it happens
    import pandas as pd
    df = pd.read_parquet(out)
    assert list(df.columns) == ["pclass", "survived", "sex", "age", "sibsp", "parch"]
    assert set(df["sex"].dropna()) <= {"female", "male"}
    rep = json.loads(report.read_text())
    assert rep["privacy"]["rho_spent"] <= rep["privacy"]["rho"] * (1 + 1e-12)
    assert rep["domain"]["source"] == "declared"
    assert len(rep["rounds"]) == 3 and all("curator" not in r for r in rep["rounds"])
    assert "workload_error" not in report.read_text()
    assert json.loads(diag.read_text())["label"].startswith("CURATOR-ONLY")


def test_private_domain_is_flagged(tmp_path):
    data = tmp_path / "t.csv"
    data.write_text("a,b\n" + "\n".join(f"{i % 3},{(i * 7) % 2}" for i in range(200)) + "\n")
    res = synth("run", "--data", str(data), "--mechanism", "aim", "--epsilon", "1", "--rounds", "4",
                "--workload", "all-2way", "--seed", "0", "--fit-iters", "50",
                "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json"))
    assert res.returncode == 0, res.stderr
    assert "NOT privacy-protected" in res.stdout
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["domain"]["protected"] is False and "WARNING" in rep["domain"]["note"]
    assert "not privacy-protected" in rep["privacy"]["statement"]


@pytest.mark.parametrize("args,expected", [
    (["--data", "missing.csv"], "missing.csv' not found"),
    (["--sample", "nope"], "Unknown sample 'nope'"),
    (["--sample", "titanic", "--epsilon", "-1"], "epsilon must be a positive number"),
    (["--sample", "titanic", "--workload", "age,colour"], "'colour'"),
    (["--sample", "titanic", "--delta", "2"], "delta must lie strictly between 0 and 1"),
    (["--sample", "titanic", "--no-public"], "JAM-PGM needs public rows"),
])
def test_bad_input_gives_a_specific_error(args, expected, tmp_path):
    res = synth("run", *args, "--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json"))
    assert res.returncode == 2
    assert expected in res.stderr
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "s.csv").exists()


def test_public_table_that_does_not_fit_the_schema(tmp_path):
    pub = tmp_path / "pub.csv"
    pub.write_text("pclass,survived,sex,age,sibsp,parch\n1st,survived,F,30,0,0\n")
    res = synth("run", "--sample", "titanic", "--public", str(pub), "--out", str(tmp_path / "s.csv"))
    assert res.returncode == 2
    assert "public table 'pub.csv'" in res.stderr and "'sex'" in res.stderr and "'F'" in res.stderr
