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
from ..privacy import Guarantee, cdp_epsilon
from ..report import check_release, write_table
from ..runner import FINISHED
from ..schema import Schema
from ..run_time import calibration_entry, estimate_from_features, predicted_rounds, run_features
from .catalog import RunSettings


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
    #: the fingerprint of the table it ran on (its budget account's key)
    fingerprint: str = ""
    #: what its rho is stated under (neighbour relation, public columns)
    guarantee: Guarantee | None = None
    files: dict | None = field(default=None, repr=False)   # release files, made once

    @property
    def ok(self) -> bool:
        return self.status == FINISHED and self.result is not None


@dataclass(frozen=True)
class PendingRun:
    """What a run in progress will keep when it ends: its settings, its
    reproduce command, the name of its table, the table's fingerprint and the
    public information marked (the session's summary line), fixed when it started."""

    settings: RunSettings
    reproduce: str
    data_name: str
    fingerprint: str
    public: str
    guarantee: Guarantee


#: what a cost preview's times are (shown beside them)
TIME_NOTE = ("Times are the run-time model's CPU seconds (docs/run_time_estimates.md), scaled "
             "by a run of the same mechanism finished in this session when there is one; on a "
             "busy machine a run takes longer.")


def model_seconds(s: RunSettings, schema: Schema, n_rows: int) -> float:
    """The run-time model's CPU seconds for settings ``s`` (:mod:`synth_core.run_time`)."""
    return estimate_from_features(run_features(s, schema, n_rows))


def estimate_seconds(s: RunSettings, schema: Schema, n_rows: int, data_name: str | None,
                     runs: list[FinishedRun]) -> tuple[float, str]:
    """Estimated seconds of a run with settings ``s`` on a table of ``n_rows``
    rows (at least 0.5 s), and how it was made.

    The calibrated run-time model gives CPU seconds. When a run of the same
    mechanism on the same table finished in this session, the estimate is the
    model's times ``t / m``, where ``t`` is that run's measured seconds and
    ``m`` the model's estimate for it: this corrects for the machine and its
    load as well as for the model's error on this table."""
    features = run_features(s, schema, n_rows)
    seconds = estimate_from_features(features)
    how = "run-time model calibrated on measured runs (CPU seconds)"
    if features["planned_rounds"] is None:
        rounds = predicted_rounds(features, calibration_entry(features))
        how += f"; the number of rounds adapts (predicted {rounds:.0f})"
    for run in reversed(runs):
        if run.ok and run.data_name == data_name and run.settings.mechanism == s.mechanism:
            factor = run.seconds / max(1e-9, model_seconds(run.settings, schema, n_rows))
            seconds *= factor
            how += (f"; scaled by run {run.number} in this session (it took {factor:.2g} "
                    "times the model's estimate)")
            break
    return max(0.5, seconds), how


def describe_seconds(seconds: float) -> str:
    """A duration as a person reads it: ``~12 s``, ``~3.4 min`` or ``~1.2 h``."""
    if seconds < 120:
        return f"~{seconds:.0f} s"
    if seconds < 7200:
        return f"~{seconds / 60:.1f} min"
    return f"~{seconds / 3600:.1f} h"


@dataclass(frozen=True)
class PlannedRuns:
    """Runs of one mechanism at one epsilon (a row of a cost preview);
    ``seconds_each`` is None when the mechanism has no run-time calibration."""

    mechanism: str
    epsilon: float
    runs: int
    rho_each: float
    seconds_each: float | None

    def row(self) -> dict:
        known = self.seconds_each is not None
        return {"mechanism": self.mechanism, "epsilon": self.epsilon, "runs": self.runs,
                "rho each": self.rho_each, "rho total": self.rho_each * self.runs,
                "seconds each (est.)": round(self.seconds_each, 1) if known else None,
                "seconds total (est.)": round(self.seconds_each * self.runs, 1) if known else None}


def planned_seconds(estimate, s: RunSettings) -> float | None:
    """``estimate(s)``'s seconds, or None when there is no calibration for it."""
    try:
        return estimate(s)[0]
    except ConfigError:
        return None


def cost_frame(plans: list[PlannedRuns]) -> pd.DataFrame:
    """One row per (mechanism, epsilon) and a total row: runs, rho and
    estimated seconds (each and in all; the total of the runs with an estimate)."""
    rows = [p.row() for p in plans]
    rows.append({"mechanism": "total", "epsilon": None, "runs": sum(p.runs for p in plans),
                 "rho each": None, "rho total": sum(r["rho total"] for r in rows),
                 "seconds each (est.)": None,
                 "seconds total (est.)": round(sum(p.seconds_each * p.runs for p in plans
                                                   if p.seconds_each is not None), 1)})
    return pd.DataFrame(rows)


def describe_total(plans: list[PlannedRuns]) -> str:
    """The total time of a cost preview, saying which mechanisms have no estimate."""
    text = describe_seconds(sum(p.seconds_each * p.runs for p in plans
                                if p.seconds_each is not None))
    unknown = sorted({p.mechanism for p in plans if p.seconds_each is None})
    return text + (f" + {', '.join(unknown)} (no estimate)" if unknown else "")


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


def release_files(run: FinishedRun, selection: dict | None = None) -> dict[str, bytes]:
    """The releasable files of a finished run (no curator-only values).

    ``selection`` (:func:`selection_block`, None when the run is the table's
    only spend) goes into ``report.json`` as ``release_selection``; it changes as
    the table gets more runs, so the report is written at each call and the
    other files once. ``check_release`` is run on the report; the synthetic CSV
    has formula-like cells neutralised.
    """
    if not run.ok:
        raise ConfigError(f"Run {run.number} did not finish ({run.status}); it has nothing "
                          "to release.", hint="Start a new run on the Run page.")
    report = run.result.report
    if selection is not None:
        report = {**report, "release_selection": selection}
    check_release(report)
    if run.files is None:
        synthetic = run.result.synthetic
        run.files = {
            "synthetic.csv": frame_bytes(synthetic, "synthetic.csv"),
            "synthetic.parquet": frame_bytes(synthetic, "synthetic.parquet"),
            "schema.json": (json.dumps(run.result.inputs.schema.to_json(), indent=2)
                            + "\n").encode("utf-8"),
            "reproduce.sh": ("#!/usr/bin/env bash\n" + run.reproduce + "\n").encode("utf-8"),
        }
    return {**run.files, "report.json": (json.dumps(report, indent=2) + "\n").encode("utf-8")}


def selection_block(run_rho: float, table_rho: float, delta: float, where: str,
                    guarantees=(), own: Guarantee | None = None,
                    stated_rho: float = 0.0) -> dict | None:
    """The report's ``release_selection`` block: what covers a release chosen among
    the table's runs, or None when this run is all that was spent on the table.

    A run's own statement covers it alone. Runs of rho_1, ..., rho_k on one table
    compose to (rho_1 + ... + rho_k)-zCDP, and choosing which one to publish after
    looking at their results uses every one of them (docs/trust.md), so such a
    release is covered by ``table_rho`` (the sum, this run included), i.e.
    (cdp_epsilon(table_rho, delta), delta)-DP. ``where`` says what ``table_rho``
    counts (the table's budget account, or this session's runs). Every number is a
    sum of ledger spends, which the reports release anyway.

    The sum holds under one relation only (:class:`~synth_core.privacy.Guarantee`):
    ``guarantees`` are those the table's other runs were stated under, ``own`` this
    run's. The statement names the widest of them when it is not this run's own
    (more public columns), and gives no epsilon when their neighbour relations
    differ: a rho under add/remove one record is not its cost under replace one.

    ``stated_rho``: the rho this run's own statement is made at (its budget, which
    it may not have spent in full). When the table's runs spent no more than that
    in all, under this run's own guarantee, the run's own statement covers a
    release chosen among them too, and there is no block (a second, smaller epsilon
    beside it would read as a contradiction).
    """
    if table_rho <= run_rho * (1 + 1e-9):
        return None
    relation = Guarantee.widest({*guarantees, *([own] if own is not None else [])})
    mixed = relation is None and (guarantees or own is not None)
    if not mixed and relation in (None, own) and table_rho <= stated_rho * (1 + 1e-9):
        return None
    opening = (f"This release's own guarantee covers this run alone. The table has had rho = "
               f"{table_rho:.4g} spent on it ({where}, this run included). ")
    block = {"table_rho_spent": table_rho, "this_run_rho": run_rho, "counted": where,
             "delta": delta}
    if mixed:
        return {**block, "epsilon_if_chosen": None, "statement": opening + (
            "The table's runs were stated under different neighbour relations "
            f"({'; '.join(sorted({g.text() for g in {*guarantees, own} if g is not None}))}), "
            "so no one guarantee covers a release chosen among them after looking at their "
            "results.")}
    epsilon = cdp_epsilon(table_rho, delta)
    under = "" if relation is None or relation == own else f" under {relation.text()}"
    return {**block, "epsilon_if_chosen": epsilon, "statement": opening + (
        f"If this run was chosen for release among the table's runs after looking at their "
        f"results, the release satisfies only ({epsilon:.3g}, {delta:g})-differential "
        f"privacy{under} (rho = {table_rho:.4g} zCDP; runs on one table add up).")}


#: the noise column of a measurement without noise (public rows or columns)
NO_NOISE = "public: no noise"


def noise_text(sigma: float | None, source: str) -> str:
    """A noise std as the round and measurement tables show it: the number, or
    :data:`NO_NOISE` for a public measurement (measured exactly)."""
    if str(source).startswith("public") and not sigma:
        return NO_NOISE
    return "-" if sigma is None else f"{sigma:.4g}"


def events_frame(events) -> pd.DataFrame:
    """The Run page's round table (no curator-only scores; with each round's seconds,
    which release reports leave out)."""
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
