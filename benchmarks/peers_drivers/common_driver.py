"""What every peer driver shares: arguments, the domain, codes <-> labels, rho matching.

Runs inside a peer's scratch venv (no synth_core there): numpy and pandas only.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd


def arguments(description: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--data", required=True, help="labelled private CSV")
    ap.add_argument("--schema", required=True, help="categorical schema JSON (synth_core's)")
    ap.add_argument("--epsilon", type=float, required=True)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--rho", type=float, required=True, help="the rho every library is given")
    ap.add_argument("--max-model-size", type=float, required=True, help="MB")
    ap.add_argument("--degree", type=int, required=True, help="workload: all k-way marginals")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True, help="synthetic CSV (labels)")
    ap.add_argument("--info", required=True, help="JSON: what the driver passed the library")
    return ap.parse_args()


def categories(schema_path: str) -> dict[str, list[str]]:
    """``{column: [category, ...]}``; a value's code is its position in the list."""
    schema = json.loads(Path(schema_path).read_text())
    return {c["name"]: [str(v) for v in c["categories"]] for c in schema["columns"]}


def to_codes(frame: pd.DataFrame, cats: dict[str, list[str]]) -> pd.DataFrame:
    """Labels to integer codes 0..size-1 (a label outside the domain fails loudly)."""
    out = {}
    for col, values in cats.items():
        index = {v: k for k, v in enumerate(values)}
        mapped = frame[col].astype(str).map(index)
        if mapped.isna().any():
            raise ValueError(f"column {col!r}: labels outside the domain")
        out[col] = mapped.astype("int64")
    return pd.DataFrame(out)


def to_labels(codes: pd.DataFrame, cats: dict[str, list[str]]) -> pd.DataFrame:
    """Integer codes back to the domain's labels."""
    return pd.DataFrame({col: [values[int(k)] for k in codes[col]] for col, values in cats.items()})


def matching_epsilon(convert, rho: float, epsilon: float, delta: float) -> float:
    """The epsilon (same delta) whose conversion by the library's ``convert`` gives ``rho``.

    ``epsilon`` itself when ``convert(epsilon, delta)`` already equals rho to
    1e-12 relative; otherwise bisection on the increasing map epsilon -> rho.
    """
    if abs(convert(epsilon, delta) - rho) <= 1e-12 * rho:
        return epsilon
    lo, hi = 0.0, epsilon
    while convert(hi, delta) < rho:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        lo, hi = (mid, hi) if convert(mid, delta) < rho else (lo, mid)
    return hi


def write_info(path: str, **info) -> None:
    Path(path).write_text(json.dumps(info))
