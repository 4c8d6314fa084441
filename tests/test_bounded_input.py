"""Table loads are bounded: a small file that expands past the input limit is
refused with one line naming the file, the limit and how to raise it, after at
most one streaming pass, without holding the decompressed bytes."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from synth_core.errors import ConfigError, DataError
from synth_core.tables import (MAX_INPUT_ENV, _first_undecodable_line, load_table,
                               max_input_mb, set_max_input_mb)
from synth_core.workbench import Workbench

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from bounded_input import HEADER, ROW, load_in_child, write_gzip_bomb  # noqa: E402


@pytest.fixture(autouse=True)
def default_limit(monkeypatch):
    monkeypatch.delenv(MAX_INPUT_ENV, raising=False)
    set_max_input_mb(None)
    yield
    set_max_input_mb(None)


def test_a_gzip_bomb_is_refused_in_a_bounded_pass(tmp_path):
    """400 MB of CSV in about 0.4 MB of gzip, limit 50 MB: refused, and the
    loading process (a fresh Python) never grows anywhere near 400 MB."""
    bomb = tmp_path / "bomb.csv.gz"
    size = write_gzip_bomb(bomb, 400 * 2**20)
    assert bomb.stat().st_size < 2**20 and size >= 400 * 2**20
    out = load_in_child(bomb, limit_mb=50)
    assert out["refused"], out
    assert out["message"] == (
        f"'{bomb}' is larger than the input limit of 50 MB decompressed; it was not loaded. "
        "Raise the limit with 'synth run --max-input-mb MB' or the SYNTH_MAX_INPUT_MB "
        "environment variable (read by the command line and the app; set it where the app "
        "starts), or load a smaller file.")
    assert out["peak_rss_mb"] - out["import_rss_mb"] < 100, out   # the load's own memory
    assert out["seconds"] < 30, out


def test_the_cli_refuses_a_bomb_with_one_line_and_exit_2(tmp_path):
    bomb = tmp_path / "bomb.csv.gz"
    write_gzip_bomb(bomb, 100 * 2**20)
    out = subprocess.run([sys.executable, "-m", "synth_core.cli", "run", "--data", str(bomb),
                          "--max-input-mb", "20", "--out", str(tmp_path / "s.csv"),
                          "--report", str(tmp_path / "r.json"), "--quiet"],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "input limit of 20 MB" in lines[0] and "--max-input-mb" in lines[0]
    assert not (tmp_path / "s.csv").exists()


def test_within_the_limit_the_same_kind_of_file_loads(tmp_path):
    small = tmp_path / "small.csv.gz"
    size = write_gzip_bomb(small, 2 * 2**20)
    set_max_input_mb(3)
    df = load_table(small)
    assert list(df.columns) == ["age", "sex", "city"]
    assert len(HEADER) + len(df) * len(ROW) == size


def test_a_plain_csv_is_bounded_by_its_size_on_disk(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n" + "1,x\n" * 300_000)              # 1.2 MB
    set_max_input_mb(1)
    with pytest.raises(DataError, match=r"'t.csv' is larger than the input limit of 1 MB on disk"):
        load_table(path, name="t.csv")
    set_max_input_mb(2)
    assert len(load_table(path)) == 300_000


def test_the_app_reads_its_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv(MAX_INPUT_ENV, "1")
    assert max_input_mb() == 1.0
    content = gzip.compress(b"a,b\n" + b"1,x\n" * 600_000)   # 2.4 MB once decompressed
    w = Workbench()
    with pytest.raises(DataError, match=r"'up.csv.gz' is larger than the input limit of 1 MB"):
        w.load_upload("up.csv.gz", content)
    assert w.data is None
    monkeypatch.setenv(MAX_INPUT_ENV, "lots")
    with pytest.raises(ConfigError, match="SYNTH_MAX_INPUT_MB must be a positive number"):
        max_input_mb()
    with pytest.raises(ConfigError):
        set_max_input_mb(0)


def test_an_undecodable_line_is_found_across_chunks(tmp_path):
    """A character split between two 1 MB chunks is not an error; the first
    bad byte's line is counted across chunks, gzip or not."""
    row = "é,x\n".encode()                                       # 5 bytes, 'é' is 2
    head = b"ab,c\n" + row * (2**20 // 5)                        # 'é' spans the 1 MB boundary
    assert head[2**20 - 1:2**20 + 1] == "é".encode()
    data = head + b"1,\xff\n" + row * 10
    (tmp_path / "t.csv").write_bytes(data)
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(data))
    line = 2 + 2**20 // 5
    for name in ("t.csv", "t.csv.gz"):
        assert _first_undecodable_line(tmp_path / name, name) == line
        with pytest.raises(DataError, match=rf"cannot decode '{name}' \(line {line}\)"):
            load_table(tmp_path / name, name=name)
    (tmp_path / "ok.csv").write_bytes(head)
    assert _first_undecodable_line(tmp_path / "ok.csv", "ok.csv") is None


def test_a_parquet_file_is_refused_by_its_footer(tmp_path):
    """Ten million equal values run-length encode to a few kB; in memory they
    take 80 MB: the footer's row count refuses them before any read."""
    path = tmp_path / "rle.parquet"
    pq.write_table(pa.table({"x": np.zeros(10_000_000, dtype=np.int8)}), path)
    assert path.stat().st_size < 2**20
    set_max_input_mb(50)
    with pytest.raises(DataError, match=r"'rle.parquet' is larger than the input limit of 50 MB "
                                        r"decoded \(from its footer\)"):
        load_table(path, name="rle.parquet")


def test_a_parquet_file_is_refused_while_it_is_read(tmp_path):
    """One long text repeated: dictionary encoded its footer is small, read as
    text it is 12 MB; the batches' sizes refuse it."""
    path = tmp_path / "dict.parquet"
    pq.write_table(pa.table({"x": ["y" * 1200] * 10_000, "n": np.arange(10_000)}), path)
    set_max_input_mb(5)
    with pytest.raises(DataError, match=r"'dict.parquet' is larger than the input limit of 5 MB "
                                        r"decoded; it was not loaded"):
        load_table(path, name="dict.parquet")
    set_max_input_mb(50)
    df = load_table(path)
    assert df.shape == (10_000, 2) and df["x"].str.len().eq(1200).all()


@pytest.mark.slow
def test_the_benchmark_prints_one_json_line(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks/bounded_input.py"),
                          "--size-mb", "64", "--limit-mb", "16", "--dir", str(tmp_path)],
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout.strip().splitlines()[-1])
    assert row["refused"] and row["decompressed_mb"] >= 64 and row["limit_mb"] == 16
    assert set(row) >= {"seconds", "cpu_seconds", "peak_rss_mb", "load_average", "file_mb"}


def test_the_data_page_shows_the_limit_and_refuses_a_bomb(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(MAX_INPUT_ENV, "8")
    bomb = tmp_path / "bomb.csv.gz"
    write_gzip_bomb(bomb, 64 * 2**20)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("app_pages/data.py").run()
    assert any("refused past 8 MB once decompressed" in c.value for c in at.caption)
    at.file_uploader(key="upload_data").set_value(("bomb.csv.gz", bomb.read_bytes(),
                                                   "application/gzip"))
    at.run()
    assert not at.exception
    shown = [e.value for e in at.error]
    assert any("'bomb.csv.gz' is larger than the input limit of 8 MB" in e for e in shown), shown
    assert at.session_state["wb"].data is None
