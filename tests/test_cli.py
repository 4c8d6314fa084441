"""The command line, run as a user would: a real process on the bundled sample."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def synth(*args, cwd=None, timeout=600):
    return subprocess.run([sys.executable, "-m", "synth_core.cli", *args], capture_output=True,
                          text=True, cwd=cwd or ROOT, timeout=timeout)


def _options(command: str) -> set[str]:
    """The long options of ``synth <command>``, read off the argparse parser."""
    from synth_core.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return {o for a in sub.choices[command]._actions for o in a.option_strings
            if o.startswith("--")}


def _documented_commands():
    """``(file, command, options)`` of every ``synth run``/``sweep``/``whatif`` command
    line in README.md and docs/*.md (continuation lines joined, comments cut)."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"\\\n", " ", path.read_text())
        for match in re.finditer(r"\bsynth (run|sweep|whatif)\b([^`\n]*)", text):
            words = match.group(2).split(" #")[0]
            yield path.name, match.group(1), re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", words)


@pytest.mark.parametrize("command", ["run", "sweep", "whatif"])
def test_help_lists_every_option_and_the_docs_use_only_real_ones(command):
    options = _options(command)
    out = synth(command, "--help")
    assert out.returncode == 0, out.stderr
    listed = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", out.stdout))
    assert options - listed == set(), "options missing from --help"
    documented = [(f, opts) for f, cmd, opts in _documented_commands() if cmd == command]
    assert documented, f"no 'synth {command}' command line in README.md or docs/"
    stale = {(f, o) for f, opts in documented for o in opts if o not in options}
    assert stale == set(), "options in the docs that 'synth %s' does not have" % command


def test_option_help_lists_the_declared_options():
    from synth_core.mechanisms import MECHANISMS

    out = " ".join(synth("run", "--help").stdout.split())
    for opt in MECHANISMS["gem"].options:
        if opt.name not in ("rounds", "max_model_size"):   # these have their own flags
            assert opt.name in out


def test_the_help_states_the_conditional_bound_the_code_uses():
    """cli_parser imports nothing heavy, so the default is written out: it must follow
    the constant."""
    from synth_core.conditional import CONDITION_MAX_MB
    out = " ".join(synth("run", "--help").stdout.split())
    stated = re.search(r"--condition-max-mb MB with --conditional: .*?\(default: ([0-9.]+)", out)
    assert stated and float(stated.group(1)) == CONDITION_MAX_MB


def test_unknown_or_flagged_mechanism_options_are_refused_by_name():
    res = synth("run", "--sample", "titanic", "--mechanism", "mwem-pgm", "--epsilon", "1",
                "--option", "colour=red")
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert "mwem-pgm has no option 'colour'" in res.stderr
    assert "Its options: rounds, max_model_size" in res.stderr
    res = synth("run", "--sample", "titanic", "--mechanism", "aim", "--epsilon", "1",
                "--option", "rounds=3")
    assert res.returncode == 2 and "Use --rounds" in res.stderr
    res = synth("run", "--sample", "titanic", "--mechanism", "gem", "--epsilon", "1",
                "--option", "inner_steps=lots")
    assert res.returncode == 2 and "inner_steps takes an integer" in res.stderr


def test_options_are_read_as_their_declared_type():
    from synth_core.cli import _parse_options

    assert _parse_options(["alpha=1", "hidden=64", "ema_beta=0.5"], "gem") == \
        {"alpha": 1.0, "hidden": (64,), "ema_beta": 0.5}
    assert isinstance(_parse_options(["alpha=1"], "gem")["alpha"], float)
    assert _parse_options(["support_size=2000"], "vpmw") == {"support_size": 2000}


def test_samples_are_listed():
    out = synth("samples")
    assert out.returncode == 0
    assert "adult-pub025" in out.stdout and "titanic" in out.stdout


def test_a_run_warning_is_printed_once_as_a_synth_warning(tmp_path):
    res = synth("run", "--sample", "titanic", "--mechanism", "vjam-pgm", "--epsilon", "1",
                "--rounds", "2", "--out", str(tmp_path / "s.csv"),
                "--report", str(tmp_path / "r.json"))
    assert res.returncode == 0, res.stderr
    assert res.stderr.count("without public columns") == 1, res.stderr
    assert "synth: warning: vJAM-PGM ran without public columns" in res.stderr
    assert "RunWarning" not in res.stderr and "cli.py" not in res.stderr


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


@pytest.mark.slow
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
    pytest.param(["--sample", "nope"], "Unknown sample 'nope'", marks=pytest.mark.slow),
    pytest.param(["--sample", "titanic", "--epsilon", "-1"], "epsilon must be a positive number",
                 marks=pytest.mark.slow),
    pytest.param(["--sample", "titanic", "--workload", "age,colour"], "'colour'",
                 marks=pytest.mark.slow),
    pytest.param(["--sample", "titanic", "--delta", "2"],
                 "delta must lie strictly between 0 and 1", marks=pytest.mark.slow),
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


# -- outputs: checked before any budget is spent, written all or nothing ------------------

def run_main(*args):
    """``synth run`` in this process (no budget spent by the checks under test)."""
    from synth_core.cli import main
    return main(["run", *args])


QUICK = ("--sample", "titanic", "--mechanism", "mwem-pgm", "--rounds", "1", "--workload",
         "all-1way", "--fit-iters", "5", "--final-fit-iters", "5", "--seed", "0", "--quiet")


def test_a_run_that_leaves_budget_unspent_says_why(tmp_path, capsys):
    """JAM-PGM's last round on Titanic at seed 1 picks a public marginal: the run
    spends less than its rho, and says why in one line instead of leaving the
    user to wonder (seed 0 spends it all and says nothing)."""
    out = ["--out", str(tmp_path / "s.csv"), "--report", str(tmp_path / "r.json")]
    common = ("--sample", "titanic", "--mechanism", "jam-pgm", "--epsilon", "1")
    assert run_main(*common, "--seed", "1", *out) == 0
    lines = capsys.readouterr().out.splitlines()
    spent = float(re.search(r"spent rho=([0-9.e-]+) of ([0-9.e-]+)", "\n".join(lines)).group(1))
    note = [line for line in lines if "was left unspent" in line]
    assert spent < json.loads((tmp_path / "r.json").read_text())["privacy"]["rho"]
    assert len(note) == 1 and "the last round (round 30)" in note[0]
    assert "'Unspent budget'" in note[0] and "round 1 (" not in note[0]     # one line, no list
    assert run_main(*common, "--seed", "0", *out) == 0
    assert "unspent" not in capsys.readouterr().out


@pytest.mark.parametrize("which,name,expected", [
    ("--out", "s.xlsx", "unsupported file type"),
    ("--out", "s", "unsupported file type"),
    ("--report", "r.txt", "unsupported file type"),
    ("--diagnostics", "d.csv", "unsupported file type"),
    ("--report", "folder.json", "it is a folder"),
    ("--report", "afile.json/r.json", "is not a folder"),
])
def test_a_bad_output_path_fails_before_the_run(which, name, expected, tmp_path, capsys):
    (tmp_path / "folder.json").mkdir()
    (tmp_path / "afile.json").write_text("{}")
    paths = {"--out": tmp_path / "s.csv", "--report": tmp_path / "r.json"}
    paths[which] = tmp_path / name
    args = [a for k, v in paths.items() for a in (k, str(v))]
    assert run_main(*QUICK, *args) == 2
    err = capsys.readouterr()
    assert expected in err.err and str(tmp_path / name) in err.err
    assert "round" not in err.out        # nothing ran: no budget spent
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile.json", "folder.json"]


def test_two_outputs_on_one_path_are_refused(tmp_path, capsys):
    same = str(tmp_path / "r.json")
    assert run_main(*QUICK, "--out", str(tmp_path / "s.csv"), "--report", same,
                    "--diagnostics", same) == 2
    assert "Two outputs" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_missing_output_folders_are_created_and_all_files_written(tmp_path, capsys):
    out, report, diag = (tmp_path / "a" / "b" / "s.csv", tmp_path / "c" / "r.json",
                         tmp_path / "d.json")
    assert run_main(*QUICK, "--out", str(out), "--report", str(report),
                    "--diagnostics", str(diag)) == 0
    assert out.exists() and report.exists() and diag.exists()
    assert [p.name for p in (tmp_path / "a" / "b").iterdir()] == ["s.csv"]  # no temp files left
    assert "seed" not in json.loads(report.read_text())["config"]
    # the seed lives in the curator-only file, and the report's statement warns
    assert json.loads(diag.read_text())["run"]["seed"] == 0
    assert "not fit for publication" in json.loads(report.read_text())["privacy"]["statement"]
    assert "not fit for publication" in capsys.readouterr().err   # warned even with --quiet


@pytest.mark.slow
def test_a_failing_report_write_leaves_no_synthetic_file_and_no_temp_file(tmp_path):
    """A real write failure: the process may write at most ``limit`` bytes per file
    (RLIMIT_FSIZE), enough for the Parquet synthetic data (about 7 kB) but not for
    the report (about 20 kB with the 2-way workload)."""
    limit = 12_000
    script = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
              f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit})); "
              "from synth_core.cli import main; sys.exit(main(sys.argv[1:]))")
    out, report = tmp_path / "s.parquet", tmp_path / "r.json"
    res = subprocess.run([sys.executable, "-c", script, "run", *QUICK, "--workload", "all-2way",
                          "--out", str(out), "--report", str(report)],
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(report) in lines[0] and "Traceback" not in res.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_absurd_epsilon_is_a_config_error(tmp_path, capsys):
    assert run_main(*QUICK, "--epsilon", "1e300", "--out", str(tmp_path / "s.csv"),
                    "--report", str(tmp_path / "r.json")) == 2
    err = capsys.readouterr().err
    assert "epsilon must be at most" in err and "Traceback" not in err


# -- no silent column loss ------------------------------------------------------------------

TITANIC = ROOT / "sample_data" / "titanic"


def _public_without(tmp_path, column, keep=None):
    """The Titanic public table without ``column`` (and only the columns ``keep``)."""
    import pandas as pd
    path = tmp_path / "pub.csv"
    public = pd.read_csv(TITANIC / "public.csv")
    public[keep or list(public.columns)].drop(columns=[column]).to_csv(path, index=False)
    return path


#: Titanic's categorical columns: a domain read off the public rows covers them
CATEGORICAL = ["pclass", "survived", "sex"]


def test_a_column_missing_from_the_public_table_is_an_error(tmp_path, capsys):
    pub = _public_without(tmp_path, "parch")
    code = run_main("--data", str(TITANIC / "private.csv"), "--public", str(pub),
                    "--mechanism", "jam-pgm", "--out", str(tmp_path / "s.csv"),
                    "--report", str(tmp_path / "r.json"), "--quiet")
    assert code == 2
    err = capsys.readouterr().err
    assert "'parch'" in err and "--drop parch" in err and "public" in err
    assert not (tmp_path / "s.csv").exists()


def test_a_partial_schema_is_an_error(tmp_path, capsys):
    schema = json.loads((TITANIC / "schema.json").read_text())
    schema["columns"] = [c for c in schema["columns"] if c["name"] not in ("age", "sibsp")]
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    code = run_main("--data", str(TITANIC / "private.csv"), "--schema", str(path),
                    "--mechanism", "aim", "--out", str(tmp_path / "s.csv"),
                    "--report", str(tmp_path / "r.json"), "--quiet")
    assert code == 2
    err = capsys.readouterr().err
    assert "'age'" in err and "'sibsp'" in err and "not in the schema" in err
    assert "--drop age,sibsp" in err


def test_columns_are_dropped_only_when_asked_and_the_report_lists_them(tmp_path):
    import pandas as pd
    pub = _public_without(tmp_path, "sex", keep=CATEGORICAL)
    data = tmp_path / "private.csv"
    pd.read_csv(TITANIC / "private.csv")[CATEGORICAL].to_csv(data, index=False)
    out, report = tmp_path / "s.csv", tmp_path / "r.json"
    code = run_main("--data", str(data), "--public", str(pub),
                    "--drop-columns", "sex", "--mechanism", "jam-pgm", "--rounds", "2",
                    "--workload", "all-1way", "--fit-iters", "5", "--final-fit-iters", "5",
                    "--seed", "0", "--quiet", "--out", str(out), "--report", str(report))
    assert code == 0
    rep = json.loads(report.read_text())
    assert rep["data"]["dropped_columns"] == ["sex"]
    assert list(pd.read_csv(out).columns) == ["pclass", "survived"]
    assert rep["synthetic"]["columns"] == ["pclass", "survived"]


def test_the_public_flag_column_is_not_a_dropped_column(tmp_path):
    import pandas as pd
    data = pd.read_csv(TITANIC / "titanic.csv")[CATEGORICAL]
    data["is_public"] = np.arange(len(data)) % 4 == 0
    path = tmp_path / "flagged.csv"
    data.to_csv(path, index=False)
    report = tmp_path / "r.json"
    code = run_main("--data", str(path), "--public-flag", "is_public", "--mechanism", "jam-pgm",
                    "--rounds", "2", "--workload", "all-1way", "--fit-iters", "5",
                    "--final-fit-iters", "5", "--seed", "0", "--quiet",
                    "--out", str(tmp_path / "s.csv"), "--report", str(report))
    assert code == 0
    assert json.loads(report.read_text())["data"]["dropped_columns"] == []


def test_an_unknown_column_to_drop_is_named(tmp_path, capsys):
    assert run_main(*QUICK, "--drop-columns", "parch,colour", "--out", str(tmp_path / "s.csv"),
                    "--report", str(tmp_path / "r.json")) == 2
    assert "'colour'" in capsys.readouterr().err
