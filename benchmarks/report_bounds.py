"""CPU seconds of a release report's marginal bounds on wide tables (JSON lines).

After its last round a Private-PGM run puts the section-5 bounds of every workload
marginal into the release report (``synth_core.uncertainty.add_to_report``). This
benchmark times that step against the number of workload marginals: a table of
``--rows`` records over ``--columns`` columns of 2 to 6 values each (independent
uniform draws, deterministic from ``--seed``, a declared schema), MWEM+PGM with
3 rounds at epsilon 1, seed 0, ``--workload`` (default all-2way: C(k, 2)
marginals). One fresh child process per width; each line gives the step's CPU
seconds (``time.process_time`` around it), the whole run's, and the load
average.

Usage::

    PYTHONPATH=. nice -n 5 python benchmarks/report_bounds.py [--columns 50 100 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "report_bounds"

CHILD = r"""
import json, os, sys, time
import numpy as np, pandas as pd
sys.path.insert(0, sys.argv[1])
from synth_core import Synthesizer
from synth_core.schema import Schema
import synth_core.api as api
k, rows, seed, workload = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(seed)
sizes = [2 + (i % 5) for i in range(k)]
frame = pd.DataFrame({f"c{i:03d}": rng.integers(0, s, rows) for i, s in enumerate(sizes)})
schema = Schema.from_json({"columns": [{"name": f"c{i:03d}", "kind": "categorical",
                                        "categories": list(range(s))}
                                       for i, s in enumerate(sizes)]})
step = {}
inner = api.add_marginal_bounds
def timed(*a, **kw):
    t = time.process_time(); inner(*a, **kw); step["cpu"] = time.process_time() - t
api.add_marginal_bounds = timed
t = time.process_time()
result = Synthesizer("mwem-pgm", epsilon=1.0, rounds=3, workload=workload, fit_iters=20,
                     final_fit_iters=50, seed=0).fit(frame, schema=schema)
print(json.dumps({"marginals": len(result.workload.cliques), "report_cpu_seconds": step["cpu"],
                  "run_cpu_seconds": time.process_time() - t,
                  "bounds": len(result.report["marginal_bounds"]["bounds"])}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--columns", type=int, nargs="+", default=[50, 100, 200])
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workload", default="all-2way")
    ap.add_argument("--record", action="store_true",
                    help=f"also append the lines to {RESULTS.relative_to(ROOT)}/runs.jsonl")
    args = ap.parse_args()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    for k in args.columns:
        wall = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), str(k), str(args.rows),
                              str(args.seed), args.workload], capture_output=True, text=True)
        if out.returncode != 0:
            raise SystemExit(out.stderr[-2000:])
        line = {"bench": "report-bounds", "columns": k, "rows": args.rows,
                "workload": args.workload, **json.loads(out.stdout.strip().splitlines()[-1]),
                "wall_seconds": time.perf_counter() - wall,
                "load_average": os.getloadavg()[0], "commit": commit}
        print(json.dumps(line), flush=True)
        if args.record:
            RESULTS.mkdir(parents=True, exist_ok=True)
            with open(RESULTS / "runs.jsonl", "a") as f:
                f.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    main()
