"""Fuzz the table loaders with generated hostile CSV and Parquet files.

Each generated file goes through ``synth_core.tables.load_table``, then
``synth_core.schema.infer_schema`` and ``synth_core.api.prepare_inputs`` (the
path a CLI run or an upload takes). Every step must either succeed or raise a
user-facing ``SynthError`` (``DataError``, ``SchemaError``, ``ConfigError``)
with a message that names the file (loading) or is non-empty (later steps);
anything else (another exception type, a message without the file, or more
than the time limit) counts as a crash. Files are checked in a worker process
that is killed and restarted on a hang.

    nice -n 10 .venv/bin/python benchmarks/fuzz_loaders.py --inputs 10000

prints one JSON line per loader (csv, parquet) with counts of accepted,
rejected-with-clear-error and crashed inputs, the error kinds and seconds,
and one line per crash. ``tests/test_fuzz_loaders.py`` runs a few hundred.
"""

from __future__ import annotations

import argparse
import gzip
import io
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: seconds one input may take through all three steps
TIME_LIMIT = 20.0

FORMULAS = ["=cmd|' /C calc'!A0", "+1+1", "-2+3", "@SUM(A1:A9)", "=HYPERLINK(\"x\")",
            "\t=1", "\r=1", "-3.5", "+7", "=1e3"]
WEIRD_NUMBERS = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1e400", "1e-400",
                 "99999999999999999999999999", "0x1F", "1_000", "١٢٣", "1,5", " 3 ", "+4",
                 "NA", "N/A", "null", "None", "?", "", "True", "false", "1.0.0", "--1"]


# ------------------------------------------------------------------ generators

def _cell(rng: np.random.Generator) -> str:
    r = rng.random()
    if r < 0.25:
        return str(int(rng.integers(-5, 50)))
    if r < 0.35:
        return f"{rng.normal():.3f}"
    if r < 0.5:
        return str(rng.choice(["a", "b", "c", "é", "Ω", "x y", "日本"]))
    if r < 0.65:
        return str(rng.choice(WEIRD_NUMBERS))
    if r < 0.75:
        return str(rng.choice(FORMULAS))
    if r < 0.8:
        return "\"quoted, comma\""
    if r < 0.85:
        return "\"a \"\"b\"\" c\""
    if r < 0.9:
        return "x" * int(rng.integers(1000, 20000))
    return ""


def _join(rows) -> str:
    return "".join(",".join(r) + "\n" for r in rows)


def _table_text(rng, rows: int, cols: int, header=None) -> str:
    header = header or [f"c{i}" for i in range(cols)]
    body = [[_cell(rng) for _ in range(cols)] for _ in range(rows)]
    return _join([header] + body)


def _csv_cases():
    """(name, function rng -> (bytes, suffix)) of the CSV generators."""

    def valid(rng):
        return _table_text(rng, int(rng.integers(1, 40)), int(rng.integers(1, 6))).encode(), ".csv"

    def latin1(rng):
        text = "name,city\n" + "".join(f"{rng.choice(['José', 'Zoë', 'Ærø'])},{rng.choice(['Köln', 'Malmö'])}\n"
                                       for _ in range(int(rng.integers(1, 20))))
        return text.encode("latin-1"), ".csv"

    def utf16(rng):
        return _table_text(rng, int(rng.integers(1, 20)), 3).encode(
            str(rng.choice(["utf-16", "utf-16-le", "utf-32"]))), ".csv"

    def garbage(rng):
        return rng.bytes(int(rng.integers(1, 5000))), str(rng.choice([".csv", ".csv.gz"]))

    def gz_garbage(rng):
        raw = gzip.compress(_table_text(rng, 10, 3).encode())
        cut = int(rng.integers(1, len(raw)))
        return raw[:cut], ".csv.gz"

    def gz_valid(rng):
        return gzip.compress(_table_text(rng, int(rng.integers(1, 20)), 3).encode()), ".csv.gz"

    def ragged(rng):
        rows = [["a", "b", "c"]] + [[_cell(rng) for _ in range(int(rng.integers(1, 6)))]
                                    for _ in range(int(rng.integers(1, 20)))]
        return _join(rows).encode(), ".csv"

    def empty(rng):
        return str(rng.choice(["", "\n", "\n\n\n", "   ", "\r\n", ",", ",,,\n", "\ufeff"])).encode(), ".csv"

    def header_only(rng):
        return (",".join(f"h{i}" for i in range(int(rng.integers(1, 10)))) +
                str(rng.choice(["", "\n", "\n\n"]))).encode(), ".csv"

    def one_column(rng):
        return _table_text(rng, int(rng.integers(1, 50)), 1).encode(), ".csv"

    def many_columns(rng):
        cols = int(rng.integers(1000, 3000))
        header = [f"c{i}" for i in range(cols)]
        rows = [[str(int(v)) for v in rng.integers(0, 3, cols)] for _ in range(int(rng.integers(1, 5)))]
        return _join([header] + rows).encode(), ".csv"

    def many_categories(rng):
        n = int(rng.integers(200, 5000))
        vals = rng.choice([f"cat{i}" for i in range(n)], size=n)
        nums = rng.integers(0, 10 ** 9, n)
        return _join([["id", "k"]] + [[str(a), str(b)] for a, b in zip(vals, nums)]).encode(), ".csv"

    def nan_inf(rng):
        rows = [["x", "y"]] + [[str(rng.choice(WEIRD_NUMBERS)), str(rng.choice(WEIRD_NUMBERS))]
                               for _ in range(int(rng.integers(1, 30)))]
        return _join(rows).encode(), ".csv"

    def dup_headers(rng):
        header = [str(rng.choice(["a", "b", "A", " a", "a ", "", "1", "a.1"])) for _ in range(int(rng.integers(2, 6)))]
        return _table_text(rng, int(rng.integers(1, 10)), len(header), header).encode(), ".csv"

    def formulas(rng):
        rows = [[str(rng.choice(FORMULAS)) for _ in range(2)] for _ in range(int(rng.integers(1, 20)))]
        return _join([["=A1", "@b"]] + rows).encode(), ".csv"

    def long_cells(rng):
        return ("a,b\n" + "x" * int(rng.integers(10 ** 5, 10 ** 6)) + ",1\n").encode(), ".csv"

    def quotes(rng):
        return str(rng.choice(["a,b\n\"unterminated,1\n2,3\n", "a,b\n\"x\"y,1\n", "\"a\nb\",c\n1,2\n",
                               "a,b\n1,\"2\n", "a;b;c\n1;2;3\n", "a\tb\n1\t2\n",
                               "a,b\r1,2\r3,4\r", "a,b\n1,2\x00\n", "\x00\x00,\x00\n1,2\n",
                               "#comment\na,b\n1,2\n", "a,b\n1,2,,,\n"])).encode(), ".csv"

    def bom(rng):
        return "\ufeff".encode() + _table_text(rng, 5, 3).encode(), ".csv"

    def mixed_bytes(rng):
        text = bytearray(_table_text(rng, int(rng.integers(2, 20)), 3).encode())
        for _ in range(int(rng.integers(1, 10))):
            text[int(rng.integers(0, len(text)))] = int(rng.integers(128, 256))
        return bytes(text), ".csv"

    def wrong_suffix(rng):
        return _table_text(rng, 3, 2).encode(), str(rng.choice([".txt", ".xlsx", "", ".CSV", ".Csv.GZ"]))

    return [valid, latin1, utf16, garbage, gz_garbage, gz_valid, ragged, empty, header_only,
            one_column, many_columns, many_categories, nan_inf, dup_headers, formulas,
            long_cells, quotes, bom, mixed_bytes, wrong_suffix]


def _parquet_bytes(table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _parquet_cases():
    import pyarrow as pa

    def valid(rng):
        n = int(rng.integers(1, 50))
        return _parquet_bytes(pa.table({"a": rng.integers(0, 3, n), "b": rng.choice(["x", "y"], n)})), ".parquet"

    def floats(rng):
        n = int(rng.integers(1, 40))
        v = rng.normal(size=n)
        v[rng.random(n) < 0.3] = rng.choice([np.nan, np.inf, -np.inf, 1e308])
        return _parquet_bytes(pa.table({"v": v, "w": rng.integers(0, 2, n)})), ".parquet"

    def types(rng):
        n = int(rng.integers(1, 20))
        kind = str(rng.choice(["date", "timestamp", "duration", "binary", "list", "struct", "bool",
                               "dict", "decimal", "null", "int8", "uint64", "large_string",
                               "float16", "map", "time"]))
        if kind == "date":
            col = pa.array(np.arange(n).astype("datetime64[D]"))
        elif kind == "timestamp":
            col = pa.array(np.arange(n).astype("datetime64[ns]"))
        elif kind == "duration":
            col = pa.array(np.arange(n).astype("timedelta64[s]"))
        elif kind == "binary":
            col = pa.array([rng.bytes(5) for _ in range(n)], type=pa.binary())
        elif kind == "list":
            col = pa.array([[1, 2]] * n)
        elif kind == "struct":
            col = pa.array([{"x": 1, "y": "a"}] * n)
        elif kind == "bool":
            col = pa.array(rng.random(n) < 0.5)
        elif kind == "dict":
            col = pa.array(rng.choice(["u", "v"], n)).dictionary_encode()
        elif kind == "decimal":
            import decimal
            col = pa.array([decimal.Decimal("1.25")] * n)
        elif kind == "null":
            col = pa.nulls(n)
        elif kind == "int8":
            col = pa.array(rng.integers(-100, 100, n).astype(np.int8))
        elif kind == "uint64":
            col = pa.array(np.full(n, 2 ** 64 - 1, dtype=np.uint64))
        elif kind == "large_string":
            col = pa.array(["=cmd"] * n, type=pa.large_string())
        elif kind == "float16":
            col = pa.array(rng.normal(size=n).astype(np.float16))
        elif kind == "map":
            col = pa.array([[("k", 1)]] * n, type=pa.map_(pa.string(), pa.int64()))
        else:
            import datetime
            col = pa.array([datetime.time(1, 2)] * n)
        return _parquet_bytes(pa.table({"k": col, "z": pa.array(np.zeros(n, dtype=np.int64))})), ".parquet"

    def empty_rows(rng):
        return _parquet_bytes(pa.table({"a": pa.array([], type=pa.int64())})), ".parquet"

    def no_columns(rng):
        return _parquet_bytes(pa.table({})), ".parquet"

    def dup_names(rng):
        t = pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"])
        return _parquet_bytes(t), ".parquet"

    def odd_names(rng):
        names = [str(rng.choice(["", " ", "a", "=1", "x" * 500, "\x00", "é"])) for _ in range(3)]
        t = pa.Table.from_arrays([pa.array([1, 2])] * 3, names=names)
        return _parquet_bytes(t), ".parquet"

    def many_columns(rng):
        cols = int(rng.integers(1000, 3000))
        t = pa.table({f"c{i}": rng.integers(0, 3, 3) for i in range(cols)})
        return _parquet_bytes(t), ".parquet"

    def many_categories(rng):
        n = int(rng.integers(200, 5000))
        return _parquet_bytes(pa.table({"id": [f"v{i}" for i in range(n)],
                                        "x": rng.normal(size=n)})), ".parquet"

    def pandas_index(rng):
        import pandas as pd
        df = pd.DataFrame({"a": [1, 2, 3]}, index=pd.Index(["x", "y", "z"], name="a"))
        buf = io.BytesIO()
        df.to_parquet(buf)
        return buf.getvalue(), ".parquet"

    def truncated(rng):
        raw = _parquet_bytes(pa.table({"a": rng.integers(0, 3, 30)}))
        return raw[:int(rng.integers(0, len(raw)))], ".parquet"

    def corrupted(rng):
        raw = bytearray(_parquet_bytes(pa.table({"a": rng.integers(0, 3, 30), "b": ["q"] * 30})))
        for _ in range(int(rng.integers(1, 20))):
            raw[int(rng.integers(0, len(raw)))] = int(rng.integers(0, 256))
        return bytes(raw), ".parquet"

    def garbage(rng):
        return (b"PAR1" + rng.bytes(int(rng.integers(0, 3000))) + b"PAR1"
                if rng.random() < 0.5 else rng.bytes(int(rng.integers(0, 3000)))), \
            str(rng.choice([".parquet", ".pq"]))

    def csv_as_parquet(rng):
        return _table_text(rng, 5, 2).encode(), ".parquet"

    def long_strings(rng):
        return _parquet_bytes(pa.table({"s": ["=" + "y" * 10 ** 6, "b"]})), ".parquet"

    return [valid, floats, types, empty_rows, no_columns, dup_names, odd_names, many_columns,
            many_categories, pandas_index, truncated, corrupted, garbage, csv_as_parquet,
            long_strings]


def generate(loader: str, index: int, seed: int = 0) -> tuple[str, bytes, str]:
    """The ``index``-th generated input of a loader: (generator name, bytes, suffix)."""
    cases = _csv_cases() if loader == "csv" else _parquet_cases()
    rng = np.random.default_rng([seed, index, 0 if loader == "csv" else 1])
    case = cases[index % len(cases)]
    data, suffix = case(rng)
    return case.__name__, data, suffix


# ------------------------------------------------------------------ the check

def check_file(path: str, label: str) -> dict:
    """Run one file through load_table, infer_schema and prepare_inputs.

    Returns ``{"outcome": "accepted" | "rejected" | "crashed", "step", "error", "message"}``.
    """
    import pandas as pd

    from synth_core.api import prepare_inputs
    from synth_core.errors import SynthError
    from synth_core.schema import infer_schema
    from synth_core.tables import load_table

    step = "load_table"
    try:
        df = load_table(path, name=label)
        if not isinstance(df, pd.DataFrame) or len(df) == 0 or len(df.columns) == 0:
            return {"outcome": "crashed", "step": step, "error": "bad result",
                    "message": f"load_table returned {type(df).__name__} of shape "
                               f"{getattr(df, 'shape', None)}"}
        step = "infer_schema"
        infer_schema(df, source="private")
        step = "prepare_inputs"
        prepare_inputs(path, data_name=label)
        return {"outcome": "accepted", "step": step, "error": "", "message": ""}
    except SynthError as exc:
        message = str(exc)
        clear = bool(message.strip()) and (step != "load_table" or label in message)
        return {"outcome": "rejected" if clear else "crashed", "step": step,
                "error": type(exc).__name__, "message": message[:300]}
    except Exception as exc:  # noqa: BLE001 - the point: anything else is a crash
        return {"outcome": "crashed", "step": step, "error": type(exc).__name__,
                "message": (str(exc)[:300] + " | " + traceback.format_exc(limit=-3)[-600:])}


def _worker(conn) -> None:
    import warnings
    warnings.simplefilter("ignore")
    while True:
        job = conn.recv()
        if job is None:
            return
        conn.send(check_file(*job))


class Checker:
    """Checks files in a worker process, killed and restarted after ``limit`` seconds."""

    def __init__(self, limit: float = TIME_LIMIT):
        self.limit = limit
        self.ctx = mp.get_context("spawn")
        self._start()

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        # the worker's first check also pays for imports: warm it up
        self.conn.send(("/nonexistent.csv", "warmup.csv"))
        if not self.conn.poll(120):
            raise RuntimeError("the fuzz worker did not start")
        self.conn.recv()

    def check(self, path: str, label: str) -> dict:
        self.conn.send((path, label))
        if self.conn.poll(self.limit):
            return self.conn.recv()
        self.proc.kill()
        self.proc.join()
        self._start()
        return {"outcome": "crashed", "step": "?", "error": "timeout",
                "message": f"no answer within {self.limit:g} s"}

    def close(self) -> None:
        try:
            self.conn.send(None)
            self.proc.join(5)
        finally:
            if self.proc.is_alive():
                self.proc.kill()


def fuzz(loader: str, inputs: int, *, seed: int = 0, checker: Checker | None = None,
         folder: str | None = None) -> dict:
    """Generate and check ``inputs`` files; returns counts, kinds and the crashes."""
    own = checker is None
    checker = checker or Checker()
    counts = {"accepted": 0, "rejected": 0, "crashed": 0}
    errors: dict[str, int] = {}
    crashes = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        try:
            for i in range(inputs):
                case, data, suffix = generate(loader, i, seed)
                label = f"fuzz-{loader}-{i}{suffix}"
                path = os.path.join(tmp, label)
                with open(path, "wb") as fh:
                    fh.write(data)
                result = checker.check(path, label)
                counts[result["outcome"]] += 1
                key = f"{result['step']}:{result['error']}" if result["error"] else "ok"
                errors[key] = errors.get(key, 0) + 1
                if result["outcome"] == "crashed":
                    crashes.append({"index": i, "case": case, **result})
                os.unlink(path)
        finally:
            if own:
                checker.close()
    return {"loader": loader, "inputs": inputs, **counts, "outcomes": errors,
            "seconds": round(time.perf_counter() - started, 1), "crashes": crashes}


def main(argv=None) -> int:
    from common import emit

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=10_000, help="inputs per loader")
    ap.add_argument("--loaders", nargs="+", default=["csv", "parquet"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=TIME_LIMIT, help="seconds per input")
    args = ap.parse_args(argv)
    checker = Checker(args.limit)
    try:
        for loader in args.loaders:
            result = fuzz(loader, args.inputs, seed=args.seed, checker=checker)
            crashes = result.pop("crashes")
            for c in crashes[:50]:
                emit(loader=loader, crash=c)
            emit(**result)
    finally:
        checker.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
