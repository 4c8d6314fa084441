"""A session's finished runs: what they keep, the tables the Run and Release
pages draw from them, and the files a release holds."""

from __future__ import annotations

import io
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..api import RunResult
from ..engine import RoundEvent
from ..errors import ConfigError
from ..report import check_release, write_table
from ..runner import FINISHED
from ..schema import Schema
from .catalog import RunSettings, planned_rounds


@dataclass
class FinishedRun:
    """A run that ended (finished, stopped or failed) in this session."""

    number: int
    label: str
    status: str
    settings: RunSettings
    events: list
    rho_spent: float
    seconds: float
    result: RunResult | None = None
    failure: object | None = None
    reproduce: str = ""
    data_name: str = ""
    files: dict | None = field(default=None, repr=False)   # release files, made once

    @property
    def ok(self) -> bool:
        return self.status == FINISHED and self.result is not None


@dataclass(frozen=True)
class PendingRun:
    """What a run in progress will keep when it ends: its settings, its
    reproduce command and the name of its table (fixed when it started)."""

    settings: RunSettings
    reproduce: str
    data_name: str


def estimate_seconds(s: RunSettings, schema: Schema, n_rows: int, data_name: str | None,
                     runs: list[FinishedRun]) -> tuple[float, str]:
    """A rough run-time estimate (seconds) of a run with settings ``s`` on a
    table of ``n_rows`` rows, and how it was made: scaled from the latest
    finished run of the same mechanism on the same table (seconds per round,
    times the ratio of per-round fit iterations, at least 0.3), else from the
    table's size (calibrated below)."""
    rounds = planned_rounds(s)
    if s.mechanism == "public-only":
        return 1.0, "no rounds: the public table is rescaled"
    how = "rough guess from the table size"
    if rounds is None:
        rounds = 3 * len(schema.names)
        how += f"; the number of rounds adapts (guessed {rounds})"
    for run in reversed(runs):
        if run.ok and run.data_name == data_name and run.settings.mechanism == s.mechanism:
            n_ev = max(1, len([e for e in run.events if e.round > 0]))
            scale = s.round_fit_iters / max(1, run.settings.round_fit_iters)
            per_round = run.seconds / n_ev * max(0.3, scale)
            return max(1.0, per_round * rounds), f"scaled from run {run.number} in this session"
    # calibrated on this machine (2 cores): JAM-PGM on Titanic at the paper defaults
    # spends ~2.5 s per round (100 fit iterations) and ~9 s in the final fit
    cells = sum(schema.sizes.values())
    size = (1 + cells / 500) * (1 + n_rows / 2e5)
    per_round = 0.3 + s.round_fit_iters * 0.025 * size
    final = s.final_fit_iters * 0.009 * size
    return 3.0 + rounds * per_round + final, how


def frame_bytes(df: pd.DataFrame, name: str) -> bytes:
    """``df`` written as the file ``name`` would be (its suffix picks the format)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        write_table(path, df)
        return path.read_bytes()


def frame_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def release_files(run: FinishedRun) -> dict[str, bytes]:
    """The releasable files of a finished run (no curator-only values), made once.

    ``check_release`` is run on the report; the synthetic CSV has
    formula-like cells neutralised.
    """
    if not run.ok:
        raise ConfigError(f"Run {run.number} did not finish ({run.status}); it has nothing "
                          "to release.", hint="Start a new run on the Run page.")
    if run.files is not None:
        return run.files
    report = run.result.report
    check_release(report)
    synthetic = run.result.synthetic
    schema = run.result.inputs.schema
    run.files = {
        "synthetic.csv": frame_bytes(synthetic, "synthetic.csv"),
        "synthetic.parquet": frame_bytes(synthetic, "synthetic.parquet"),
        "report.json": (json.dumps(report, indent=2) + "\n").encode("utf-8"),
        "schema.json": (json.dumps(schema.to_json(), indent=2) + "\n").encode("utf-8"),
        "reproduce.sh": ("#!/usr/bin/env bash\n" + run.reproduce + "\n").encode("utf-8"),
    }
    return run.files


#: the noise column of a measurement without noise (public rows or columns)
NO_NOISE = "public: no noise"


def noise_text(sigma: float | None, source: str) -> str:
    """A noise std as the round and measurement tables show it: the number, or
    :data:`NO_NOISE` for a public measurement (measured exactly)."""
    if str(source).startswith("public") and not sigma:
        return NO_NOISE
    return "-" if sigma is None else f"{sigma:.4g}"


def events_frame(events) -> pd.DataFrame:
    """The releasable round table (no curator-only values)."""
    rows = []
    for e in events:
        rows.append({
            "round": e.round,
            "marginal": ", ".join(" × ".join(c) for c in e.cliques) if e.cliques else "-",
            "source": e.source,
            "sigma": noise_text(e.sigma, e.source),
            "epsilon (select)": e.epsilon,
            "rho select": e.rho_select,
            "rho measure": e.rho_measure,
            "rho spent": e.rho_spent,
            "model MB": e.model_size_mb,
            "seconds": round(e.seconds, 2),
            "candidates": e.n_candidates,
            "note": e.note,
        })
    return pd.DataFrame(rows)


def candidates_frame(event: RoundEvent) -> pd.DataFrame | None:
    """CURATOR-ONLY: the round's candidate pool with exact scores."""
    cur = event.curator
    if cur is None:
        return None
    rows = [{"marginal": " × ".join(c.clique), "source": c.source, "score": s,
             "chosen": i == cur.chosen}
            for i, (c, s) in enumerate(zip(cur.candidates, cur.scores))]
    return pd.DataFrame(rows).sort_values("score", ascending=False, ignore_index=True)


def ledger_frame(report: dict) -> pd.DataFrame:
    return pd.DataFrame(report.get("ledger", {}).get("charges", []))


def measurements_frame(report: dict) -> pd.DataFrame:
    rows = [{"round": m["round"], "marginal": " × ".join(m["clique"]), "source": m["source"],
             "noise std": noise_text(m["noise_std"], m["source"]), "cells": m["cells"]}
            for m in report.get("measurements", [])]
    return pd.DataFrame(rows)
