"""Shared helpers for the benchmarks: the read-only data beside the checkout,
resource readings, a figure's job with other run fields, and JSON-lines output."""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
DATA = SHARED / "data"
REFERENCE = SHARED / "reference"


def require_shared() -> None:
    if not DATA.exists():
        sys.exit(f"benchmark data not found at {DATA}; the benchmarks need ../shared/data")


def dataset(name: str):
    """(private CSV, public CSV or None, domain JSON) of a shared dataset."""
    folder = DATA / name
    priv = folder / "priv.csv"
    if not priv.exists():
        priv = folder / f"{name}.csv"
    pub = folder / "pub.csv"
    return priv, (pub if pub.exists() else None), folder / "domain.json"


def reference_results() -> list[dict]:
    path = REFERENCE / "results.jsonl"
    return [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.exists() else []


def public_proxy() -> dict[str, float]:
    path = REFERENCE / "public_proxy.jsonl"
    if not path.exists():
        return {}
    rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()]
    return {r["data"]: r["public_proxy_workload_error"] for r in rows}


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds() -> float:
    """User plus system CPU time of this process so far (all threads).

    Wall-clock seconds depend on what else runs on the machine; CPU seconds
    measure the work itself (JAX and numpy use both cores when they can, so
    alone a run takes between half and all of its CPU seconds).
    """
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def with_run_fields(job, **fields):
    """A sweep job (``synth_core.experiments.Job``) with these ``RunConfig`` fields
    changed and all else the same; its ``run_id`` differs, so a store keeps both."""
    return replace(job, config=replace(job.config, **fields))


def emit(**record) -> None:
    print(json.dumps(record), flush=True)


def seed_sd(values) -> float | None:
    """The sample standard deviation of a cell's values over seeds (``None`` for one
    seed): the spread that benchmarks/paper_findings.py's Welch test reads."""
    values = list(values)
    return statistics.stdev(values) if len(values) > 1 else None


def seed_cell(values) -> dict:
    """A figure's cell from its runs' values, one per seed: ``seeds``, ``mean``, ``min``,
    ``max`` and ``sd`` (:func:`seed_sd`), as benchmarks/paper_findings.py reads cells."""
    values = [float(v) for v in values]
    return {"seeds": len(values), "mean": statistics.mean(values), "min": min(values),
            "max": max(values), "sd": seed_sd(values)}
