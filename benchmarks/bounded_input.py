"""Benchmark: a small gzip file that expands past the input limit is refused
quickly and in little memory.

Builds a ``.csv.gz`` whose decompressed content is ``--size-mb`` MB of CSV
rows (default 1024: about 1 MB of gzip), then loads it with
``synth_core.tables.load_table`` under ``--limit-mb`` (default 512) in a
fresh Python process, and prints one JSON line: wall seconds, CPU seconds
and peak RSS of that process (``os.wait4``'s resource usage of the child
alone, and its peak once synth_core was imported, before the load), the
load average, and whether the load was refused (with its message).

    nice -n 10 .venv/bin/python benchmarks/bounded_input.py
    nice -n 10 .venv/bin/python benchmarks/bounded_input.py --size-mb 4096 --limit-mb 2048

``tests/test_bounded_input.py`` runs it on a smaller file.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MB = 2 ** 20
#: the bomb's CSV: this header, then this row again and again
HEADER = b"age,sex,city\n"
ROW = b"37,F,Porto\n"

#: what the child process runs: load the file under the limit, print the outcome
CHILD = """
import json, resource, sys
from synth_core.errors import DataError
from synth_core.tables import load_table, set_max_input_mb
out = {"import_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)}
set_max_input_mb(float(sys.argv[2]))
try:
    out.update(refused=False, rows=len(load_table(sys.argv[1])), message="")
except DataError as exc:
    out.update(refused=True, rows=None, message=str(exc))
print(json.dumps(out))
"""


def write_gzip_bomb(path: Path, size: int) -> int:
    """Write a gzip file whose decompressed content is CSV of at least ``size``
    bytes (``HEADER``, then ``ROW`` repeated), streaming: a gzip file may hold
    several members, read one after another, so one 1 MB block of rows is
    compressed once and its member written as often as needed (about 1 kB of
    gzip per MB of CSV). Returns the decompressed size in bytes."""
    rows_per_block = MB // len(ROW)
    block_bytes = rows_per_block * len(ROW)
    member = gzip.compress(ROW * rows_per_block, compresslevel=9, mtime=0)
    blocks = max(1, math.ceil((size - len(HEADER)) / block_bytes))
    with open(path, "wb") as out:
        out.write(gzip.compress(HEADER, mtime=0))
        for _ in range(blocks):
            out.write(member)
    return len(HEADER) + blocks * block_bytes


def load_in_child(path: Path, limit_mb: float) -> dict:
    """Load ``path`` under ``limit_mb`` in a fresh Python process; its outcome
    with wall seconds, CPU seconds (user + system) and peak RSS (MB) of that
    process alone."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(limit_mb)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out, err = child.stdout.read(), child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if child.returncode != 0:
        raise RuntimeError(f"the loading process failed ({child.returncode}): {err.decode()}")
    outcome = json.loads(out.decode().strip().splitlines()[-1])
    return dict(outcome, seconds=round(seconds, 2),
                cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
                peak_rss_mb=round(usage.ru_maxrss / 1024.0, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1024, help="decompressed MB (default 1024)")
    parser.add_argument("--limit-mb", type=float, default=512, help="input limit (default 512)")
    parser.add_argument("--dir", help="folder for the file (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = Path(tmp) / "bomb.csv.gz"
        size = write_gzip_bomb(path, args.size_mb * MB)
        outcome = load_in_child(path, args.limit_mb)
        print(json.dumps(dict(bench="bounded-input", decompressed_mb=round(size / MB),
                              file_mb=round(path.stat().st_size / MB, 3), limit_mb=args.limit_mb,
                              load_average=round(os.getloadavg()[0], 2), **outcome)), flush=True)


if __name__ == "__main__":
    main()
