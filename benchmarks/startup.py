"""Start-up cost of the entry points, each in a fresh Python process.

For each source tree ("before": another checkout, by default /work/main;
"after": this one) and each entry point, runs a new interpreter ``--repeats``
times (the trees interleaved, so a change of machine load hits both alike)
and prints one JSON line with the median wall seconds and the median CPU
seconds (user + system of the child process), the load average
(/proc/loadavg) before and after, and the heavy packages the entry point
imported (read in one more, untimed, run).

Entry points:

* ``import``: ``import synth_core``;
* ``help``: ``synth --help`` (``python -m synth_core.cli --help``);
* ``run_help``: ``synth run --help`` (lists every mechanism's options);
* ``app_imports``: the imports of the workbench's first page (``app.py`` and
  ``app_pages/start.py``: Streamlit, the pages' helpers, the session, the API);
* ``app_render``: the first page rendered by Streamlit's ``AppTest`` (with
  ``--render``; some seconds each).

    PYTHONPATH=$PWD python benchmarks/startup.py [--before /work/main] [--repeats 5] [--render]
        [--only help import] [--tree LABEL=PATH ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit  # noqa: E402

#: entry point -> the Python code a fresh interpreter runs (from the tree's root)
ENTRY_POINTS = {
    "import": "import synth_core",
    "help": "import sys; from synth_core.cli import main; sys.argv[0] = 'synth'\n"
            "try:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "run_help": "import sys; from synth_core.cli import main; sys.argv[0] = 'synth'\n"
                "try:\n    main(['run', '--help'])\nexcept SystemExit:\n    pass",
    "app_imports": "import streamlit, app_pages.common, app_pages.sessions, synth_core.api",
}
RENDER = ("from streamlit.testing.v1 import AppTest\n"
          "at = AppTest.from_file('app.py', default_timeout=300).run()\n"
          "assert not at.exception and at.title, at.exception")

#: packages whose import an entry point should avoid (reported when it does not)
HEAVY = ("jax", "mbi", "torch", "pyspark", "duckdb", "plotly", "opendp", "scipy", "pandas",
         "numpy", "streamlit")
REPORT = ("\nimport sys\nprint('HEAVY', ' '.join(sorted({m.split('.')[0] for m in sys.modules"
          f" if m.split('.')[0] in {HEAVY!r}}})))")


def loadavg() -> str:
    """The first three fields of /proc/loadavg (1, 5 and 15 minutes)."""
    with open("/proc/loadavg") as fh:
        return " ".join(fh.read().split()[:3])


def children_cpu() -> float:
    """User plus system CPU seconds of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(tree: Path, code: str) -> tuple[float, float, str]:
    """Run ``code`` in a fresh interpreter from ``tree``: (wall s, CPU s, its stdout)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, wall = children_cpu(), time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True,
                         text=True, timeout=600)
    wall, cpu = time.perf_counter() - wall, children_cpu() - cpu
    if out.returncode != 0:
        raise SystemExit(f"{tree}: {code!r} failed:\n{out.stderr[-2000:]}")
    return wall, cpu, out.stdout


def heavy_imports(tree: Path, code: str) -> list[str]:
    """The :data:`HEAVY` packages ``code`` imports, from one untimed run."""
    line = run(tree, code + REPORT)[2].strip().splitlines()[-1]
    return line.split()[1:]


def measure(trees: dict[str, Path], entries: dict[str, str], repeats: int) -> None:
    """Time every entry point in every tree, ``repeats`` fresh processes each; emit the medians."""
    for entry, code in entries.items():
        load_before = loadavg()
        samples: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
        for _ in range(repeats):
            for label, tree in trees.items():
                samples[label].append(run(tree, code)[:2])
        load_after = loadavg()
        for label, tree in trees.items():
            walls = [w for w, _ in samples[label]]
            cpus = [c for _, c in samples[label]]
            emit(bench="startup", entry=entry, tree=label, path=str(tree),
                 wall_s=round(statistics.median(walls), 3),
                 cpu_s=round(statistics.median(cpus), 3), repeats=repeats,
                 walls=[round(w, 3) for w in walls], cpus=[round(c, 3) for c in cpus],
                 heavy=heavy_imports(tree, code), loadavg_before=load_before,
                 loadavg_after=load_after, cpus_online=os.cpu_count())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default="/work/main",
                        help="the checkout to compare with (default: /work/main; '' for none)")
    parser.add_argument("--repeats", type=int, default=5, help="fresh processes per point")
    parser.add_argument("--render", action="store_true",
                        help="also time the first page rendered by AppTest")
    parser.add_argument("--only", nargs="*", help="entry points to time (default: all)")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH",
                        help="another checkout to time, under LABEL (repeatable)")
    args = parser.parse_args(argv)
    trees = {"after": ROOT}
    if args.before and Path(args.before).resolve() != ROOT:
        trees = {"before": Path(args.before).resolve(), **trees}
    for item in args.tree:
        label, _, path = item.partition("=")
        trees[label] = Path(path).resolve()
    entries = dict(ENTRY_POINTS, **({"app_render": RENDER} if args.render else {}))
    if args.only:
        entries = {k: v for k, v in entries.items() if k in args.only}
    measure(trees, entries, args.repeats)


if __name__ == "__main__":
    main()
