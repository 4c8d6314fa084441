"""The reproduce script is inert: whatever the table's file, column and category
names hold (newlines, ``$(...)``, backticks, quotes, semicolons, ``#``), bash
runs exactly one command, ``synth run``, with the arguments the workbench meant.

The scripts run under bash in a scratch folder where ``synth`` is a small
program on PATH that records its argv (one NUL-terminated argument each), so
the argv is checked as bash hands it over, and any injected ``touch pwned``
would leave a file behind.
"""

from __future__ import annotations

import io
import os
import shlex
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from synth_core.cli import _parse_columns, _parse_options, build_parser
from synth_core.workbench import Workbench

#: names that would run ``touch pwned...`` if they reached bash unquoted
EVIL = ["a\ntouch pwned1", "$(touch pwned2)", "`touch pwned3`", "x'; touch pwned4; echo '",
        'q"u;o"te # touch pwned5', "semi;touch pwned6", "#hash\r\ntouch pwned7", "-dash"]
EVIL_VALUES = ["v\ntouch pwned8", "$(touch pwned9)", "`touch pwned10`", "it's; touch pwned11"]
FLAG = "flag\n$(touch pwned12)"

STUB = '#!/bin/bash\nprintf \'%s\\0\' "$@" >> "$SYNTH_ARGV_FILE"\nprintf \'\\n\' >> "$SYNTH_CALLS"\n'


def hostile_csv(n: int = 60, seed: int = 0) -> bytes:
    """A table whose column names and category values are all shell code."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({name: rng.choice(EVIL_VALUES, n) for name in EVIL})
    df[FLAG] = np.arange(n) % 3 == 0
    return df.to_csv(index=False).encode()


def hostile_workbench(filename: str = "$(touch pwned13)`x`'q\";#.csv") -> Workbench:
    w = Workbench()
    w.load_upload(filename, hostile_csv())
    assert list(w.data.columns) == EVIL + [FLAG]
    return w


def run_script(script_text: str, tmp_path: Path) -> tuple[list[str], set[str]]:
    """Run ``script_text`` with bash in an empty scratch folder; return the argv
    the ``synth`` stub received and the files left in the folder."""
    scratch, bin_dir = tmp_path / "scratch", tmp_path / "bin"
    scratch.mkdir(parents=True)
    bin_dir.mkdir()
    (bin_dir / "synth").write_text(STUB)
    (bin_dir / "synth").chmod(0o755)
    script = tmp_path / "reproduce.sh"
    script.write_text(script_text)
    check = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SYNTH_ARGV_FILE": str(tmp_path / "argv"),
           "SYNTH_CALLS": str(tmp_path / "calls")}
    out = subprocess.run(["bash", str(script)], cwd=scratch, env=env, capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "calls").read_text() == "\n"          # synth ran once
    raw = (tmp_path / "argv").read_bytes().decode()
    assert raw.endswith("\0")
    return raw[:-1].split("\0"), set(os.listdir(scratch))


def words(command: str) -> list[str]:
    """The arguments after ``synth`` of a printed command (its comments and
    line continuations dropped), as a POSIX shell splits them."""
    return shlex.split(command.replace(" \\\n  ", " "), comments=True)[1:]


def release_script(w: Workbench) -> str:
    """The script as the Release page offers it (``release_files``' header and
    the run's command, made when the run starts)."""
    return "#!/usr/bin/env bash\n" + w.reproduce_command() + "\n"


def check_inert(w: Workbench, tmp_path: Path, text: str | None = None):
    """Run the workbench's script (or ``text``); nothing but ``synth`` ran,
    nothing was created, no seed, and the argv is the command's own words.
    Returns the CLI's reading of that argv."""
    text = text or release_script(w)
    assert "--seed" not in text
    argv, left = run_script(text, tmp_path)
    assert left == set() and not any(Path(tmp_path, "scratch").glob("pwned*"))
    command = text.split("\n", 1)[1]
    assert argv == words(command)
    assert argv[0] == "run"
    return build_parser().parse_args(argv)


def test_a_hostile_row_filter_stays_in_its_comment(tmp_path):
    w = hostile_workbench()
    w.update_settings(seed=3)
    w.set_public_filter(EVIL[0], [EVIL_VALUES[0], EVIL_VALUES[3]])
    args = check_inert(w, tmp_path)
    assert args.data == w.data_name and args.public_flag == "is_public"
    comments = [line for line in release_script(w).splitlines()[1:] if line.startswith("#")]
    assert any("a\\ntouch pwned1" in line and "v\\ntouch pwned8" in line for line in comments)
    assert any("exact repeat needs its seed" in line for line in comments)
    assert args.mode == "research"


def test_the_released_script_of_a_finished_run_is_inert(tmp_path):
    """The file the Release page offers, from a run on a hostile table."""
    w = hostile_workbench()
    w.set_public_filter(EVIL[3], [EVIL_VALUES[1]])
    w.update_settings(mechanism="public-only", seed=1)
    w.start_run()
    assert w.worker.wait(120)
    run = w.collect()
    assert run.ok, run.failure
    text = w.release_files(run)["reproduce.sh"].decode()
    assert text.startswith("#!/usr/bin/env bash\n")
    args = check_inert(w, tmp_path, text)
    assert args.mechanism == "public-only" and args.public_flag == "is_public"
    assert any(line.startswith("# add a column is_public to the table: true where "
                               "x'; touch pwned4; echo ' is one of $(touch pwned9)")
               for line in text.splitlines())


def test_a_hostile_flag_column_and_public_columns_reach_the_cli_exactly(tmp_path):
    w = hostile_workbench()
    w.set_public_flag(FLAG)
    w.set_public_columns([EVIL[1], EVIL[2], EVIL[7]])
    args = check_inert(w, tmp_path)
    assert args.public_flag == FLAG
    assert _parse_columns(args.public_columns) == (EVIL[1], EVIL[2], EVIL[7])
    assert args.data == "$(touch pwned13)`x`'q\";#.csv"


def test_a_flag_column_named_like_an_option_is_its_value(tmp_path):
    w = Workbench()
    df = pd.read_csv(io.BytesIO(hostile_csv())).rename(columns={FLAG: "--out"})
    w.load_upload("-t.csv", df.to_csv(index=False).encode())
    w.set_public_flag("--out")
    args = check_inert(w, tmp_path)
    assert args.public_flag == "--out" and args.out == "synthetic.csv" and args.data == "-t.csv"


def test_a_hostile_public_table_name_is_quoted(tmp_path):
    w = hostile_workbench()
    public = pd.read_csv(io.BytesIO(hostile_csv(20, seed=1)))
    name = "pub\n$(touch pwned14)';`touch pwned15`.csv"
    w.set_public_table(name, public.to_csv(index=False).encode())
    args = check_inert(w, tmp_path)
    assert args.public == name


def test_a_hostile_file_on_disk_is_quoted(tmp_path, monkeypatch):
    folder = tmp_path / "data $(touch pwned16) `x`;'q'"
    folder.mkdir()
    (folder / "t;#.csv").write_bytes(hostile_csv())
    monkeypatch.setenv("SYNTH_WORKBENCH_DATA_ROOTS", str(folder))
    w = Workbench()
    w.load_disk(str(folder / "t;#.csv"), "memory")
    w.set_public_flag(FLAG)
    args = check_inert(w, tmp_path / "run")
    assert args.data == str((folder / "t;#.csv").resolve())


def test_mechanism_options_become_cli_arguments(tmp_path):
    w = Workbench()
    w.load_sample("titanic")
    w.update_settings(mechanism="gem", options={"hidden": (64, 32), "alpha": 0.5,
                                                 "inner_steps": 7}, seed=None)
    args = check_inert(w, tmp_path)
    assert _parse_options(args.option) == {"hidden": "64,32", "alpha": 0.5, "inner_steps": 7}
    assert args.mode is None and not args.conditional


def test_a_conditional_run_command_parses_with_the_real_cli():
    """The command for Conditional AIM names --conditional and the conditioning
    bound, and parses with ``synth run``'s own parser back to the run's settings."""
    w = Workbench()
    w.load_sample("titanic")
    w.set_public_columns(["pclass", "sex"])
    w.update_settings(mechanism="aim", epsilon=0.123456789, seed=5,
                      options={"conditional": True, "condition_max_mb": 2.5})
    command = w.reproduce_command()
    assert "are not CLI options" not in command and "--seed" not in command
    args = build_parser().parse_args(words(command))
    assert args.mechanism == "aim" and args.conditional and args.condition_max_mb == 2.5
    assert _parse_columns(args.public_columns) == ("pclass", "sex")
    assert args.epsilon == 0.123456789 and args.seed is None and args.mode == "research"


def test_a_condition_bound_without_conditional_is_left_out_with_a_note():
    w = Workbench()
    w.load_sample("titanic")
    w.update_settings(mechanism="aim", options={"condition_max_mb": 2.5})
    command = w.reproduce_command()
    args = build_parser().parse_args(words(command))
    assert args.condition_max_mb is None and not args.conditional
    assert "# option condition_max_mb=2.5 left out" in command


@pytest.mark.parametrize("text", ["a\nrm -rf x", "a\rb", "a\u2028b", "a\x1bb", "a\x00b"])
def test_comments_never_break_their_line(text):
    from synth_core.workbench import _comment
    line = _comment(text)
    assert line.startswith("# ") and len(line.splitlines()) == 1 and line.isprintable()
