"""The workbench's session state, in plain Python (no Streamlit).

One :class:`Workbench` holds a session's work across pages: the loaded table,
its schema, the public information, the workload and budget settings, the
run in progress and the finished runs. Every setter validates first and only
then changes state, so a bad input raises a :class:`SynthError` and leaves
what was loaded or produced untouched.

Curator-only values (public proxy error, true workload error) are computed
here for display but never enter :meth:`Workbench.release_files`.
"""

from __future__ import annotations

import hashlib
import io
import inspect
import json
import math
import os
import re
import shlex
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .api import RunConfig, RunResult, Synthesizer, list_samples, load_sample, prepare_inputs
from .errors import (BudgetExceededError, ConfigError, DataError, SchemaError, SynthError,
                     WorkloadError)
from .evaluate import per_marginal_errors
from .mechanisms import MECHANISMS, make_mechanism
from .privacy import cdp_epsilon, rho_from_epsilon_delta
from .report import DOMAIN_NOTES, check_release, write_table
from .experiments import STOPPED as STOPPED_RUN
from .experiments import (DatasetSpec, MechanismSpec, ResultStore, Sweep, job_summary,
                          pending_jobs, run_job)
from .runner import FINISHED, RunWorker, SweepWorker
from .schema import ColumnSpec, Schema, infer_schema
from .tables import CSV_SUFFIXES, PARQUET_SUFFIXES, PublicInfo, PublicRows, load_table
from .workload import Workload, parse_workload
from .workbench_whatif import WhatIfMixin
from .workbench_budget import DatasetBudgetMixin
from .disk_table import DiskTableMixin

#: epsilon choices of the log-scale slider
EPSILON_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0)
#: delta choices
DELTA_GRID = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 1e-12)
#: a Compare job the table's total budget did not admit (not run, not stored)
REFUSED = "refused"
#: the prefix of the flag column the workbench adds for a row filter; the
#: column's full name says which rows are public ("public if sex in F")
FILTER_FLAG = "public if "


def _filter_flag_name(column: str, values: Sequence) -> str:
    shown = "|".join(map(str, values))
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return f"{FILTER_FLAG}{column} in {shown}"


#: mechanism options that ``synth run`` takes as flags of their own
OPTION_FLAGS = {"conditional": "--conditional", "condition_max_mb": "--condition-max-mb"}


def _comment(text: str) -> str:
    """``text`` as one shell comment line. Characters that are not printable
    (newline, carriage return, other control characters, Unicode line
    separators) are shown as escapes (``\\n``), so the comment ends only at
    its own end of line and nothing after it can run."""
    return "# " + "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def _arg(flag: str, value) -> list[str]:
    """A flag and its value as command arguments: ``[flag, value]``, or
    ``[flag=value]`` when the value starts with ``-`` (the CLI's parser would
    take it for an option)."""
    value = str(value)
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def _number(x: float) -> str:
    """``x`` in short form (``%g``) when that reads back as the same float, else
    in full (``repr``), so the command repeats the exact budget."""
    short = f"{x:g}"
    return short if float(short) == float(x) else repr(float(x))


def _option_value(value) -> str | None:
    """A mechanism option value as the CLI's ``--option KEY=VALUE`` reads it
    (numbers, text, or a comma-separated list of numbers); None if it has no
    such form (a flag, a nested value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in value):
        return ",".join(map(str, value))
    return None


def _option_args(options: dict) -> tuple[list[str], list[str]]:
    """``synth run`` arguments for a run's mechanism options, and notes on those
    it cannot take: flags for :data:`OPTION_FLAGS` (``--condition-max-mb``
    only with ``--conditional``, as the CLI requires), ``--option KEY=VALUE``
    for the others."""
    args, notes = [], []
    for key, value in options.items():
        if key == "public_columns":          # given by --public-columns
            continue
        if key == "conditional":
            args += [OPTION_FLAGS[key]] if value else []
        elif key == "condition_max_mb" and not options.get("conditional"):
            notes.append(f"option {key}={value} left out: it applies to conditional runs only")
        elif key in OPTION_FLAGS:
            args += _arg(OPTION_FLAGS[key], _number(value))
        elif (text := _option_value(value)) is not None:
            args += _arg("--option", f"{key}={text}")
        else:
            notes.append(f"mechanism option {key}={value!r} has no command-line form")
    return args, notes


def _column_list_notes(columns) -> list[str]:
    """Notes on column names a comma-separated ``--public-columns`` list cannot
    carry (the CLI splits at commas and strips spaces)."""
    bad = [c for c in columns if "," in c or c != c.strip()]
    if not bad:
        return []
    return [f"the CLI cannot name the column(s) {', '.join(map(repr, bad))} in --public-columns "
            "(a comma, or spaces at either end): rename them in the table"]


DOMAIN_SOURCE_TEXT = {
    "declared": "declared (a schema file): does not depend on the private data",
    "public": "read off the public rows: does not depend on the private data",
    "private": "read off the private table: domain not privacy-protected",
}


def describe_domain(source: str) -> str:
    """What a domain source means for privacy (the release report's note)."""
    return DOMAIN_NOTES[source]


#: What the Workload and budget page sets: exactly a run's configuration
#: (frozen; the page replaces it with ``dataclasses.replace``). ``rounds=None``
#: means the mechanism's paper default.
RunSettings = RunConfig


def _upload_label(filename) -> str:
    """A printable label for an uploaded file's name: its last path component,
    without NUL or other control characters (``upload`` if nothing is left)."""
    text = "".join(ch for ch in str(filename or "") if ch.isprintable())
    last = re.split(r"[\\/]", text)[-1].strip()
    return last if last not in ("", ".", "..") else "upload"


def parse_schema_upload(filename: str, content: bytes) -> Schema:
    """An uploaded schema JSON file as a Schema (SchemaError if it is not valid JSON)."""
    try:
        obj = json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"schema file '{filename}' is not valid JSON: {exc}.",
                          hint="Upload a JSON schema ({\"columns\": [...]}).") from None
    return Schema.from_json(obj)


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


def mechanism_parameters(name: str) -> dict[str, object]:
    """A mechanism's constructor parameters and their defaults (the papers' defaults)."""
    return {o.name: o.default for o in MECHANISMS[name].options if o.name != "public_columns"}


def mechanism_description(name: str) -> str:
    """The first line of the mechanism module's docstring (its paper)."""
    cls = MECHANISMS[name]
    doc = (inspect.getmodule(cls).__doc__ or cls.__doc__ or name).strip()
    return " ".join(doc.split("\n\n")[0].split())


def supports_public_columns(name: str) -> bool:
    """Whether the mechanism uses public columns (its declared capabilities)."""
    return MECHANISMS[name].capabilities.uses_public_columns


def workload_spec(kind: str, *, k: int = 3, targets: Sequence[str] = (),
                  custom: Sequence[tuple[Sequence[str], float]] = ()) -> str:
    """The ``parse_workload`` spec of a workload builder's choice.

    ``kind`` is ``all`` (all k-way), ``target`` (k-way containing a target
    column) or ``custom`` (a list of (columns, weight) pairs).
    """
    if kind == "all":
        return f"all-{int(k)}way"
    if kind == "target":
        if not targets:
            raise WorkloadError("Choose at least one target column.",
                                hint="Pick the column(s) the marginals must contain.")
        return f"target:{'+'.join(targets)}:{int(k)}"
    if kind == "custom":
        items = []
        for cols, weight in custom:
            cols = [c for c in cols if c]
            if not cols:
                continue
            item = ",".join(cols)
            if weight is None or not float(weight) > 0 or not math.isfinite(float(weight)):
                raise WorkloadError(f"The weight of marginal {item} must be a positive number, "
                                    f"got {weight!r}.")
            if float(weight) != 1.0:
                item += f"*{float(weight):g}"
            items.append(item)
        if not items:
            raise WorkloadError("The custom workload is empty.",
                                hint="Add at least one marginal (a list of columns).")
        return ";".join(items)
    raise WorkloadError(f"Unknown workload kind {kind!r}.")


def _frame_bytes(df: pd.DataFrame, name: str) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        write_table(path, df)
        return path.read_bytes()


# ---------------------------------------------------------------- compare (curator-only)

def compare_dir() -> Path:
    """Where comparison results are kept (``$SYNTH_WORKBENCH_OUT/compare``, default ``out/compare``)."""
    return Path(os.environ.get("SYNTH_WORKBENCH_OUT", "out")) / "compare"


def frame_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


class _CompareMixin:
    """Comparison sweeps (mechanisms x epsilon grid x seeds) of a Workbench,
    run and stored by :mod:`synth_core.experiments` (one result file per run,
    written atomically; starting the same comparison again resumes it).

    CURATOR-ONLY: the results are true workload errors computed from the
    private data; they are saved and downloadable as curator diagnostics,
    never as part of a release. Every comparison run spends its privacy budget
    on the private data: the session's total counts them.
    """

    def compare_key(self) -> str:
        """Identifies the data, public information, workload and fixed settings."""
        s = self.settings
        ident = {"data": self.data_name, "n": self.n_rows, "schema": self.schema.to_json(),
                 "public": self.public_summary(), "workload": s.workload, "delta": s.delta,
                 "neighbours": s.neighbours, "rounds": s.rounds, "fit_iters": s.fit_iters,
                 "final_fit_iters": s.final_fit_iters, "max_model_size": s.max_model_size,
                 "options": s.options}
        return hashlib.sha1(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:12]

    def compare_store(self) -> ResultStore:
        """The result store of the current setup (data, public information, settings)."""
        self.require_data()
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.data_name or "data").strip("-.")
        return ResultStore(compare_dir() / f"compare-{slug or 'data'}-{self.compare_key()}")

    def compare_results(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """CURATOR-ONLY: (one row per run, per-marginal errors) saved for the current setup."""
        store = self.compare_store()
        return store.runs(), store.marginals()

    def compare_sweep(self, mechanisms: Sequence[str], epsilons: Sequence[float],
                      seeds: int) -> Sweep:
        """The comparison as an experiments sweep over the session's data."""
        self.require_data()
        mechanisms = list(mechanisms)
        if not mechanisms:
            raise ConfigError("Choose at least one mechanism to compare.")
        unknown = [m for m in mechanisms if m not in MECHANISMS]
        if unknown:
            raise ConfigError(f"Unknown mechanism(s): {', '.join(unknown)}.",
                              hint=f"Available: {', '.join(MECHANISMS)}.")
        if not epsilons:
            raise ConfigError("Choose at least one epsilon.")
        for e in epsilons:
            rho_from_epsilon_delta(float(e), self.settings.delta)
        if not 1 <= int(seeds) <= 20:
            raise ConfigError(f"Use 1 to 20 seeds, not {seeds}.")
        parse_workload(self.settings.workload, self.schema.names)
        kw = self.run_kwargs()
        s = self.settings
        data = DatasetSpec(name=self.data_name or "data", data=kw["data"], public=kw.get("public"),
                           schema=self.schema, public_flag=kw.get("public_flag"),
                           public_columns=tuple(self.public_columns), key=self.compare_key())
        # the session's vertical split applies to every mechanism (those without
        # public columns fail with a clear message, as a single run would)
        mechs = tuple(MechanismSpec(m, m, {k: v for k, v in s.options.items()
                                           if k != "public_columns" and k in MECHANISMS[m].option_defaults()},
                                    public_columns=bool(self.public_columns) or None)
                      for m in mechanisms)
        settings = {f: getattr(s, f) for f in ("delta", "workload", "neighbours", "rounds",
                                               "max_model_size", "fit_iters", "final_fit_iters",
                                               "fit_tol")}
        return Sweep((data,), mechs, tuple(sorted(float(e) for e in epsilons)),
                     tuple(range(int(seeds))), settings, name=f"compare {self.data_name}")

    def compare_jobs(self, mechanisms: Sequence[str], epsilons: Sequence[float],
                     seeds: int) -> tuple[list[dict], int]:
        """The jobs still to run and how many are already saved (resume)."""
        todo, done = pending_jobs(self.compare_sweep(mechanisms, epsilons, seeds),
                                  self.compare_store())
        return [job_summary(j) for j in todo], done

    def start_compare(self, mechanisms: Sequence[str], epsilons: Sequence[float],
                      seeds: int) -> SweepWorker:
        """Run the missing (mechanism, epsilon, seed) jobs in the background."""
        self._refuse_if_busy()
        sweep = self.compare_sweep(mechanisms, epsilons, seeds)
        store = self.compare_store()
        todo = {j.run_id: j for j in pending_jobs(sweep, store)[0]}
        self.check_budget_fits([(j.config.mechanism, j.config.epsilon) for j in todo.values()],
                               self.settings.delta,
                               f"this comparison ({len(todo)} run{'' if len(todo) == 1 else 's'})")

        def run_one(job, should_stop):
            j = todo[job["run_id"]]
            # each job is charged to the table's account before it reads the data
            try:
                held = self.reserve_budget(j.config.epsilon, j.config.delta,
                                           f"compare: {j.label()}", j.config.mechanism)
            except BudgetExceededError as exc:   # not run, not stored: shown on the page
                return {**job, "status": REFUSED, "error": str(exc)}
            row = None
            try:
                row, marginals = run_job(j, should_stop=should_stop)
            finally:
                self.settle_budget(held, (row or {}).get("rho_spent"))
            if row["status"] == STOPPED_RUN:
                self.sweep_rho += row["rho_spent"]
                return None
            store.write(row, marginals)
            return row

        def on_row(row):
            if row["status"] == REFUSED:
                return
            self.sweep_runs += 1
            if row.get("rho_spent"):
                self.sweep_rho += float(row["rho_spent"])

        self.sweep = SweepWorker([job_summary(j) for j in todo.values()], run_one, on_row=on_row,
                                 label=f"{len(todo)} runs on {self.data_name}").start()
        return self.sweep

    def stop_compare(self) -> None:
        if self.sweep is not None:
            self.sweep.stop()

    @property
    def comparing(self) -> bool:
        return self.sweep is not None and not self.sweep.done

    def public_reference_error(self) -> float | None:
        """CURATOR-ONLY: the workload error of the public rows alone (rescaled)."""
        if self.public_mode == "none":
            return None
        return self.public_proxy_errors()[0]


class _WorkbenchCore(_CompareMixin, WhatIfMixin, DatasetBudgetMixin):
    """A session's state: data, schema, public information, settings, runs.
    (:class:`Workbench` is this with a table on disk, :mod:`synth_core.disk_table`.)"""

    @property
    def schema(self) -> Schema | None:
        return self._schema

    @schema.setter
    def schema(self, value: Schema | None) -> None:
        self._schema = value
        self.schema_version += 1

    def __init__(self):
        self.loads = 0                   # tables loaded so far (a new table resets the pages)
        self.schema_version = 0          # bumped whenever the schema changes
        self._schema: Schema | None = None
        self.data: pd.DataFrame | None = None
        self.data_name: str | None = None
        self.sample_name: str | None = None
        self.sample_title: str | None = None
        self.target: str | None = None
        self.schema_edited = False       # the user changed the schema in the editor
        self.schema_inferred = False     # the schema was read off data (not declared)
        self.sample_schema: Schema | None = None
        self.schema_errors: dict[str, str] = {}
        self.left_out: list[tuple[str, str]] = []   # (column, why) not in the inferred schema
        # public rows: "none", "table", "flag" (a boolean column) or "filter" (column in values)
        self.public_mode = "none"
        self.public_table: pd.DataFrame | None = None
        self.public_name: str | None = None
        self.public_flag: str | None = None
        self.public_filter: tuple[str, tuple] | None = None
        self.public_columns: tuple[str, ...] = ()
        self.settings = RunSettings()
        self.worker: RunWorker | None = None
        self.sweep: SweepWorker | None = None
        self.sweep_rho = 0.0             # budget the comparison runs of this session spent
        self.sweep_runs = 0
        #: rho this session's runs spent on tables without an account, by table
        #: fingerprint (recorded in the account when the curator sets the total)
        self.unbudgeted_rho: dict[str, float] = {}
        self.worker_settings: RunSettings | None = None
        self.runs: list[FinishedRun] = []
        self._proxy_cache: dict = {}
        self.messages: list[str] = []    # notes for the next page render

    # ---------------------------------------------------------------- data

    @property
    def has_data(self) -> bool:
        return self.data is not None and self.schema is not None

    @property
    def n_rows(self) -> int:
        """Rows of the loaded table (``data`` may be a preview: see disk_table)."""
        return 0 if self.data is None else len(self.data)

    def require_data(self) -> None:
        if not self.has_data:
            raise DataError("No table is loaded yet.",
                            hint="Load a bundled sample or upload a table on the Data page.")

    @staticmethod
    def samples() -> list[dict]:
        return list_samples()

    def load_sample(self, name: str) -> None:
        """Load a bundled sample: its private table, public table and declared schema."""
        sample = load_sample(name)
        self._set_data(sample.private, f"{name}:private", sample=name)
        self.sample_title = sample.title
        self.target = sample.target if sample.target in sample.schema.names else None
        self.schema = sample.schema
        self.sample_schema = sample.schema
        self.schema_inferred = False
        if sample.public is not None:
            self.public_mode = "table"
            self.public_table = sample.public
            self.public_name = sample.public_name
        preferred = "jam-pgm" if sample.public is not None else "aim"
        if preferred in MECHANISMS:
            self.settings = replace(self.settings, mechanism=preferred, neighbours="bounded")
        self.settings = replace(self.settings, workload="all-3way")

    def load_upload(self, filename: str, content: bytes) -> None:
        """Load an uploaded CSV/Parquet table; its schema is read off it (not protected)."""
        self._load_frame(self._read_upload(filename, content), filename)

    def _load_frame(self, df: pd.DataFrame, filename: str) -> None:
        """Use a loaded table; its schema is read off it (not protected)."""
        frame, dropped = df, []
        while True:  # columns whose domain cannot be read off the data are left out
            try:
                schema = infer_schema(frame, source="private")
                break
            except SynthError as exc:
                if exc.column in frame.columns and len(frame.columns) > 1:
                    dropped.append((exc.column, str(exc)))
                    frame = frame.drop(columns=[exc.column])
                else:
                    raise
        self._set_data(df, filename, sample=None)
        self.left_out = dropped
        self._use_own_table(schema, inferred=True)

    def _use_own_table(self, schema: Schema | None, *, inferred: bool) -> None:
        """After loading the user's own table (not a sample): its schema (None: not
        declared yet), no target, the all-3-way workload and AIM (no public rows yet)."""
        self.schema = schema
        self.sample_schema = None
        self.schema_inferred = inferred
        self.target = None
        self.settings = replace(self.settings, workload="all-3way",
                                mechanism="aim" if "aim" in MECHANISMS else self.settings.mechanism)

    @staticmethod
    def _read_upload(filename: str, content: bytes) -> pd.DataFrame:
        """Read uploaded bytes. The browser's file name only picks the format (its
        suffix) and labels errors: the bytes are saved as ``upload<suffix>`` in a
        fresh temporary folder, so no name (``..``, ``a/..``, NUL bytes) can point
        anywhere else."""
        label = _upload_label(filename or "upload.csv")
        lower = label.lower()
        suffix = next((sfx for sfx in sorted(CSV_SUFFIXES + PARQUET_SUFFIXES, key=len, reverse=True)
                       if lower.endswith(sfx)), None)
        if suffix is None:
            raise DataError(f"cannot read '{label}': unsupported file type.",
                            hint=f"Upload a {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} file.")
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"upload{suffix}"
            path.write_bytes(content)
            return load_table(path, name=label)

    def _set_data(self, df: pd.DataFrame, name: str, sample: str | None) -> None:
        self.loads += 1
        self.left_out = []
        self.data = df
        self.data_name = name
        self.sample_name = sample
        self.sample_title = None
        self.schema_edited = False
        self.schema_errors = {}
        self.public_mode = "none"
        self.public_table = None
        self.public_name = None
        self.public_flag = None
        self.public_filter = None
        self.public_columns = ()
        self._proxy_cache.clear()

    def load_schema_file(self, filename: str, content: bytes) -> None:
        """Declare the domain with a schema JSON file (checked against the table)."""
        self.require_data()
        self._declare_schema(parse_schema_upload(filename, content))

    def _declare_schema(self, schema: Schema) -> None:
        """Check ``schema`` against the table and make it the declared domain."""
        self._check_schema_fits(schema)
        self.schema = schema
        self.schema_inferred = False
        self.schema_edited = False
        self.schema_errors = {}
        self._proxy_cache.clear()

    @property
    def data_columns(self) -> list[str]:
        """The loaded table's columns (without the workbench's filter flag)."""
        if self.data is None:
            return []
        return [c for c in self.data.columns if c != self.filter_flag]

    @property
    def domain_source(self) -> str | None:
        return None if self.schema is None else self.schema.source

    def schema_table(self) -> pd.DataFrame:
        """One row per schema column: kind, size and domain summary."""
        self.require_data()
        rows = []
        for c in self.schema.columns:
            if c.kind == "categorical":
                cats = [str(v) for v in c.categories]
                domain = ", ".join(cats[:8]) + (f", … ({len(cats)} in all)" if len(cats) > 8 else "")
            else:
                domain = f"[{c.lower}, {c.upper}] in {c.bins} bins"
            rows.append({"column": c.name, "kind": c.kind, "domain": domain,
                         "missing code": c.missing, "cells": c.size,
                         "problem": self.schema_errors.get(c.name, "")})
        return pd.DataFrame(rows)

    def column_spec(self, name: str) -> ColumnSpec:
        self.require_data()
        return self.schema.column(name)

    def update_column(self, name: str, *, kind: str, categories: str | Sequence | None = None,
                      lower=None, upper=None, bins=None, missing: bool = False) -> None:
        """Replace one column's domain. Raises SchemaError/DataError naming the
        column (and records the message in ``schema_errors``) if the new spec is
        invalid or the loaded data do not fit it; the schema is then unchanged."""
        self.require_data()
        try:
            spec = self._build_spec(name, kind, categories, lower, upper, bins, missing)
            columns = tuple(spec if c.name == name else c for c in self.schema.columns)
            schema = Schema(columns, source=self.schema.source)
            self._check_schema_fits(schema, only=name)
        except SynthError as exc:
            self.schema_errors[name] = str(exc)
            raise
        self.schema_errors.pop(name, None)
        self.schema = schema
        self.schema_edited = True
        self._proxy_cache.clear()

    def drop_column(self, name: str) -> None:
        """Leave a column out of the schema (and so out of the synthetic data)."""
        self.require_data()
        self.schema.column(name)
        keep = [n for n in self.schema.names if n != name]
        if not keep:
            raise SchemaError("the schema needs at least one column.", column=name)
        self.schema = self.schema.project(keep)
        self.schema_errors.pop(name, None)
        self.public_columns = tuple(c for c in self.public_columns if c != name)
        self.left_out = [x for x in self.left_out if x[0] != name] + [(name, "left out by you")]
        self._proxy_cache.clear()

    def _build_spec(self, name, kind, categories, lower, upper, bins, missing) -> ColumnSpec:
        if kind == "categorical":
            if isinstance(categories, str):
                cats = [c.strip() for c in categories.split(",") if c.strip() != ""]
            else:
                cats = list(categories or [])
            old = self.schema.column(name)
            # keep numbers numeric when the column's values are numbers
            if old.kind == "categorical" and old.categories and all(
                    isinstance(v, (int, float, np.number)) for v in old.categories):
                try:
                    cats = [int(c) if float(c).is_integer() else float(c) for c in cats]
                except (TypeError, ValueError):
                    pass
            elif self.data is not None and name in self.data and \
                    pd.api.types.is_numeric_dtype(self.data[name].dtype):
                try:
                    cats = [int(c) if float(c).is_integer() else float(c) for c in cats]
                except (TypeError, ValueError):
                    pass
            return ColumnSpec(name, "categorical", categories=tuple(cats), missing=bool(missing))
        if kind == "numeric":
            def num(v, what):
                if v is None or (isinstance(v, str) and not v.strip()):
                    raise SchemaError(f"column '{name}': a numeric column needs '{what}'.",
                                      hint="Enter a number.", column=name)
                try:
                    f = float(v)
                except (TypeError, ValueError):
                    raise SchemaError(f"column '{name}': '{what}' must be a number, not {v!r}.",
                                      column=name) from None
                return int(f) if f.is_integer() else f
            return ColumnSpec(name, "numeric", lower=num(lower, "lower"), upper=num(upper, "upper"),
                              bins=num(bins, "bins"), missing=bool(missing))
        raise SchemaError(f"column '{name}': unknown kind {kind!r}.",
                          hint="Use categorical or numeric.", column=name)

    def _check_schema_fits(self, schema: Schema, only: str | None = None) -> None:
        """Raise DataError (naming the column) if the loaded tables do not fit ``schema``."""
        frames = [(self._private_part(), self.data_name or "data", "private table")]
        if self.public_mode == "table" and self.public_table is not None:
            frames.append((self.public_table, self.public_name or "public", "public table"))
        for df, name, role in frames:
            target = schema.project([only]) if only else schema
            target.check_fits(df, name, role=role)

    def _private_part(self) -> pd.DataFrame:
        """The loaded table without public-row flag columns (all its rows)."""
        drop = [c for c in (self.public_flag if self.public_mode == "flag" else None,
                            self.filter_flag)
                if c and c in self.data.columns]
        return self.data.drop(columns=drop)

    def infer_schema_from_public(self) -> None:
        """Re-read the domain off the public rows (a domain that costs no privacy)."""
        self.require_data()
        pub = self.public_rows_frame()
        if pub is None:
            raise ConfigError("There are no public rows to read a domain from.",
                              hint="Add public rows on the Public information page first.")
        names = [c for c in self.schema.names if c in pub.columns]
        numeric = [c.name for c in self.schema.columns if c.kind == "numeric" and c.name in names]
        schema = infer_schema(pub[names], source="public", numeric_columns=numeric)
        self._check_schema_fits(schema)
        self.schema = schema
        self.schema_inferred = True
        self.schema_edited = False
        self.schema_errors = {}
        self._proxy_cache.clear()

    def schema_json(self) -> bytes:
        self.require_data()
        return (json.dumps(self.schema.to_json(), indent=2) + "\n").encode("utf-8")

    # ---------------------------------------------------------------- public information

    def public_rows_frame(self) -> pd.DataFrame | None:
        """The public rows as loaded (without flag columns), or None."""
        if self.data is None:
            return None
        if self.public_mode == "table":
            return self.public_table
        if self.public_mode == "flag":
            return PublicRows(flag_column=self.public_flag).split(self.data)[1]
        if self.public_mode == "filter":
            return PublicRows(flag_column=self.filter_flag).split(self.data)[1]
        return None

    def public_summary(self) -> str:
        if self.data is None or self.public_mode == "none":
            rows = "no public rows"
        elif self.public_mode == "table":
            rows = f"public table '{self.public_name}' ({len(self.public_table):,} rows)"
        elif self.public_mode == "flag":
            n = len(self.public_rows_frame())
            rows = f"{n:,} rows flagged by column '{self.public_flag}'"
        else:
            col, vals = self.public_filter
            n = int(self.data[self.filter_flag].sum())
            rows = f"{n:,} rows where {col} in {{{', '.join(map(str, vals))}}}"
        cols = (", public columns: " + ", ".join(self.public_columns)) if self.public_columns else ""
        return rows + cols

    def clear_public_rows(self) -> None:
        self.require_data()
        self._drop_filter()
        self._restore_flag_column()
        self.public_mode = "none"
        self.public_table = self.public_name = self.public_flag = None
        self.public_filter = None
        self._proxy_cache.clear()

    def set_public_table(self, filename: str, content: bytes) -> None:
        """Use an uploaded table as the public rows (checked against the schema)."""
        self.require_data()
        df = self._read_upload(filename, content)
        self.schema.check_fits(df, Path(filename).name, role="public table")
        self.clear_public_rows()
        self.public_mode = "table"
        self.public_table = df
        self.public_name = Path(filename).name

    def flag_candidates(self) -> list[str]:
        """Columns of the loaded table that hold only true/false values."""
        if self.data is None:
            return []
        out = []
        for c in self.data_columns:
            try:
                PublicRows(flag_column=c).split(self.data[[c]])
            except SynthError:
                continue
            out.append(c)
        return out

    def set_public_flag(self, column: str) -> None:
        """Rows whose ``column`` is true are public; the column leaves the schema."""
        self.require_data()
        if column not in self.data.columns:
            raise DataError(f"the flag column '{column}' is not in the table.", column=column)
        private, public = PublicRows(flag_column=column).split(self.data)
        if len(public) == 0:
            raise DataError(f"flag column '{column}' marks no row as public.",
                            hint="Choose a column that is true for some rows.", column=column)
        if len(private) == 0:
            raise DataError(f"flag column '{column}' marks every row as public.",
                            hint="Keep at least one private row.", column=column)
        schema = self.schema.without_flag(column)
        self.clear_public_rows()
        self.schema = schema
        self.public_mode = "flag"
        self.public_flag = column
        self.public_columns = tuple(c for c in self.public_columns if c in schema.names)

    def _restore_flag_column(self) -> None:
        """Put a former flag column back into an inferred schema."""
        if self.public_mode == "flag" and self.public_flag and self.public_flag not in self.schema.names:
            if self.schema.source != "declared":
                try:
                    spec = infer_schema(self.data[[self.public_flag]], source="private").columns[0]
                except SynthError:
                    return
                order = [c for c in self.data_columns]
                cols = {c.name: c for c in self.schema.columns}
                cols[self.public_flag] = spec
                # the column's domain was read off the private table
                self.schema = Schema(tuple(cols[n] for n in order if n in cols), source="private")

    @property
    def filter_flag(self) -> str | None:
        """The name of the flag column a row filter added to the data, if any."""
        if self.public_filter is None:
            return None
        return _filter_flag_name(*self.public_filter)

    def set_public_filter(self, column: str, values: Sequence) -> None:
        """Rows whose ``column`` value is in ``values`` are public."""
        self.require_data()
        if column not in self.data_columns:
            raise DataError(f"the filter column '{column}' is not in the table.", column=column)
        values = tuple(values)
        if not values:
            raise DataError(f"choose at least one value of '{column}' that marks a row public.",
                            column=column)
        mask = self.data[column].astype(str).isin([str(v) for v in values]).to_numpy()
        if not mask.any():
            raise DataError(f"no row has {column} in {list(values)}.", column=column)
        if mask.all():
            raise DataError(f"every row has {column} in {list(values)}: nothing would stay private.",
                            hint="Choose fewer values.", column=column)
        self.clear_public_rows()
        self.data = self.data.assign(**{_filter_flag_name(column, values): mask})
        self.public_mode = "filter"
        self.public_filter = (column, values)

    def _drop_filter(self) -> None:
        if self.data is not None and self.filter_flag in self.data.columns:
            self.data = self.data.drop(columns=[self.filter_flag])

    def set_public_columns(self, columns: Sequence[str]) -> None:
        self.require_data()
        info = PublicInfo(columns=tuple(columns))
        info.validate(self.schema)
        self.public_columns = info.columns

    def public_proxy_errors(self) -> tuple[float, pd.DataFrame] | None:
        """CURATOR-ONLY: the public proxy error (JAM-PGM): how far the public
        rows' marginals are from the private ones, per workload marginal
        (L1 between normalised marginals) and averaged; None without public rows."""
        self.require_data()
        if self.public_mode == "none":
            return None
        key = (id(self.data), id(self.public_table), self.public_mode, self.public_flag,
               self.public_filter, id(self.schema), self.settings.workload)
        if key not in self._proxy_cache:
            inputs = self.prepare()
            workload = parse_workload(self.settings.workload, inputs.schema.names)
            errs = per_marginal_errors(inputs.data.private, inputs.data.public, workload)
            table = pd.DataFrame({"marginal": [" × ".join(k) for k in errs],
                                  "public proxy error": list(errs.values())})
            table = table.sort_values("public proxy error", ascending=False, ignore_index=True)
            self._proxy_cache.clear()
            self._proxy_cache[key] = (float(np.mean(list(errs.values()))), table)
        return self._proxy_cache[key]

    # ---------------------------------------------------------------- run inputs

    def run_kwargs(self) -> dict:
        """Keyword arguments of ``Synthesizer.run`` for the current state."""
        self.require_data()
        kwargs = dict(data=self._private_part(), schema=self.schema,
                      public_columns=self.public_columns, data_name=self.data_name)
        if self.public_mode == "table":
            kwargs.update(public=self.public_table, public_name=self.public_name)
        elif self.public_mode == "flag":
            kwargs.update(data=self.data.drop(columns=[self.filter_flag], errors="ignore"),
                          public_flag=self.public_flag)
        elif self.public_mode == "filter":
            kwargs.update(data=self.data, public_flag=self.filter_flag)
        return kwargs

    def prepare(self):
        """Encode the tables (as a run would); raises SynthError on misfits."""
        kw = self.run_kwargs()
        return prepare_inputs(kw.pop("data"), kw.pop("public", None), **kw)

    # ---------------------------------------------------------------- settings

    def update_settings(self, **changes) -> RunSettings:
        """Validate and apply new run settings (unchanged on error)."""
        new = replace(self.settings, **changes)
        self.validate_settings(new)
        self.settings = new
        self._proxy_cache.clear()
        return new

    def validate_settings(self, s: RunSettings | None = None) -> None:
        s = s or self.settings
        s.validate()
        if self.has_data:
            parse_workload(s.workload, self.schema.names)
        if s.seed is not None and (s.seed < 0 or s.seed >= 2 ** 63):
            raise ConfigError(f"The seed must be a whole number from 0 to 2^63-1, got {s.seed}.")
        # the mechanism checks its own parameters (as Synthesizer.run will build it)
        opts = dict(s.options)
        if s.mechanism != "public-only":
            opts.setdefault("max_model_size", s.max_model_size)
            if s.rounds is not None:
                opts.setdefault("rounds", s.rounds)
        make_mechanism(s.mechanism, **opts)

    def workload(self) -> Workload:
        self.require_data()
        return parse_workload(self.settings.workload, self.schema.names)

    def budget_summary(self) -> dict:
        """rho for the settings and what this session's runs spent."""
        s = self.settings
        rho = rho_from_epsilon_delta(s.epsilon, s.delta)
        spent = self.session_rho_spent()
        return {"rho": rho, "session_rho": spent,
                "session_epsilon": cdp_epsilon(spent, s.delta) if spent > 0 else 0.0,
                "runs": len(self.runs), "compare_runs": self.sweep_runs}

    def session_rho_spent(self) -> float:
        """Budget charged by this session's runs (finished, stopped or failed, and
        the one in progress), on any table. zCDP composes by adding rho."""
        total = sum(r.rho_spent for r in self.runs) + self.sweep_rho
        if self.worker is not None and not self.worker.done:
            total += self.worker.rho_spent
        return total

    def planned_rounds(self, s: RunSettings | None = None) -> int | None:
        s = s or self.settings
        if s.mechanism == "public-only":
            return 0
        if s.rounds is not None:
            return s.rounds
        default = mechanism_parameters(s.mechanism).get("rounds")
        return default if isinstance(default, int) else None

    def estimate_seconds(self, s: RunSettings | None = None) -> tuple[float, str]:
        """A rough run-time estimate (seconds) and how it was made."""
        s = s or self.settings
        self.require_data()
        rounds = self.planned_rounds(s)
        if s.mechanism == "public-only":
            return 1.0, "no rounds: the public table is rescaled"
        how = "rough guess from the table size"
        if rounds is None:
            rounds = 3 * len(self.schema.names)
            how += f"; the number of rounds adapts (guessed {rounds})"
        for run in reversed(self.runs):
            if run.ok and run.data_name == self.data_name and run.settings.mechanism == s.mechanism:
                n_ev = max(1, len([e for e in run.events if e.round > 0]))
                scale = s.round_fit_iters / max(1, run.settings.round_fit_iters)
                per_round = run.seconds / n_ev * max(0.3, scale)
                return max(1.0, per_round * rounds), f"scaled from run {run.number} in this session"
        # calibrated on this machine (2 cores): JAM-PGM on Titanic at the paper defaults
        # spends ~2.5 s per round (100 fit iterations) and ~9 s in the final fit
        n = self.n_rows
        cells = sum(self.schema.sizes.values())
        size = (1 + cells / 500) * (1 + n / 2e5)
        per_round = 0.3 + s.round_fit_iters * 0.025 * size
        final = s.final_fit_iters * 0.009 * size
        return 3.0 + rounds * per_round + final, how

    # ---------------------------------------------------------------- runs

    def start_run(self) -> RunWorker:
        """Check the inputs and start a run in a background thread."""
        self.require_data()
        self._refuse_if_busy()
        self.collect()
        s = self.settings
        self.validate_settings(s)
        synth = self._synthesizer(s)
        label = f"{s.mechanism}, ε={s.epsilon:g} on {self.data_name}"
        kwargs = self.run_kwargs()
        # charged to the table's account before the run reads the data; settled when it ends
        held = self.reserve_budget(s.epsilon, s.delta, label, s.mechanism)
        self.worker = RunWorker(synth, kwargs, label=label,
                                on_done=lambda w: self.settle_run(held, w)).start()
        self.worker_settings = s
        self._worker_reproduce = self.reproduce_command(s)
        self._worker_data = self.data_name
        return self.worker

    def _refuse_if_busy(self) -> None:
        if self.worker is not None and not self.worker.done:
            raise ConfigError("A run is already in progress.", hint="Stop it or wait for it to finish.")
        if self.sweep is not None and not self.sweep.done:
            raise ConfigError("A comparison is in progress.",
                              hint="Stop it on the Compare page or wait for it to finish.")

    def _synthesizer(self, s: RunSettings) -> Synthesizer:
        options = dict(s.options)
        if self.public_columns:
            if not supports_public_columns(s.mechanism):
                raise ConfigError(f"{s.mechanism} does not use public columns yet.",
                                  hint="Clear the public columns on the Public information "
                                       "page, or choose a mechanism that supports them.")
            options["public_columns"] = tuple(self.public_columns)
        return Synthesizer(s.mechanism, epsilon=s.epsilon, delta=s.delta, workload=s.workload,
                           neighbours=s.neighbours, rounds=s.rounds, seed=s.seed,
                           max_model_size=s.max_model_size, fit_iters=s.fit_iters,
                           final_fit_iters=s.final_fit_iters, fit_tol=s.fit_tol, mode=s.mode,
                           **options)

    def stop_run(self) -> None:
        if self.worker is not None:
            self.worker.stop()

    def collect(self) -> FinishedRun | None:
        """Move a finished worker into ``runs`` (once). Returns the new run, if any."""
        w = self.worker
        if w is None or not w.done:
            return None
        run = FinishedRun(len(self.runs) + 1, w.label, w.status, self.worker_settings, w.events,
                          w.rho_spent, w.seconds, w.result, w.failure,
                          getattr(self, "_worker_reproduce", ""), getattr(self, "_worker_data", ""))
        self._attach_what_if(run, w.started_at)   # what-ifs made before the run
        self.runs.append(run)
        self.worker = None
        return run

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def latest_ok_run(self) -> FinishedRun | None:
        for run in reversed(self.runs):
            if run.ok:
                return run
        return None

    def run_by_number(self, number: int) -> FinishedRun:
        for run in self.runs:
            if run.number == number:
                return run
        raise ConfigError(f"There is no run {number}.")

    # ---------------------------------------------------------------- release

    def release_files(self, run: FinishedRun) -> dict[str, bytes]:
        """The releasable files of a finished run (no curator-only values).

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
            "synthetic.csv": _frame_bytes(synthetic, "synthetic.csv"),
            "synthetic.parquet": _frame_bytes(synthetic, "synthetic.parquet"),
            "report.json": (json.dumps(report, indent=2) + "\n").encode("utf-8"),
            "schema.json": (json.dumps(schema.to_json(), indent=2) + "\n").encode("utf-8"),
            "reproduce.sh": ("#!/usr/bin/env bash\n" + run.reproduce + "\n").encode("utf-8"),
        }
        return run.files

    def reproduce_command(self, s: RunSettings | None = None) -> str:
        """A ``synth run`` command (with comments) that repeats a run with these settings.

        Inert whatever the data holds: every argument is shell-quoted
        (``shlex.quote``) and every comment shows its text through
        :func:`_comment`, so a file, column or category name can neither end a
        comment line nor a quoted argument. The command carries no seed (a
        seed regenerates a research-mode run's noise); a seeded run gets a
        comment saying that the exact repeat needs it.
        """
        s = s or self.settings
        self.require_data()
        notes = []
        args = ["synth", "run"] + self._reproduce_data_args()
        breaks = []  # where the printed command continues on a new line
        if self.public_mode == "table":
            if not (self.sample_name and self.public_name == self._sample_public_name()):
                args += _arg("--public", self.public_name or "public.csv")
        else:
            if self.sample_name and self._sample_public_name():
                args += ["--no-public"]
            if self.public_mode == "flag":
                args += _arg("--public-flag", self.public_flag)
            elif self.public_mode == "filter":
                col, vals = self.public_filter
                flag = next(f for f in ("is_public", "is_public_row", "public_row_flag")
                            if f not in self.data.columns)
                args += ["--public-flag", flag]
                notes.append(f"add a column {flag} to the table: true where {col} is one of "
                             f"{', '.join(map(str, vals))}")
        if self.public_columns:
            args += _arg("--public-columns", ",".join(self.public_columns))
            notes += _column_list_notes(self.public_columns)
        declared_sample = (self.sample_name and not self.schema_edited
                           and self.schema is self.sample_schema)
        # without --schema the CLI reads the domain off the public rows, else the private table
        cli_source = "public" if self.public_mode != "none" else "private"
        cli_infers_same = (self.schema_inferred and not self.schema_edited
                           and self.schema.source == cli_source)
        if not declared_sample and not cli_infers_same:
            args += ["--schema", "schema.json"]
            notes.append("schema.json: download it from the Release page")
            if self.schema.source != "declared":
                notes.append(f"note: this domain was read off the {self.schema.source} data; "
                             "the CLI will record it as declared")
        breaks.append(len(args))
        args += ["--mechanism", s.mechanism, "--epsilon", _number(s.epsilon),
                 "--delta", _number(s.delta), "--neighbours", s.neighbours]
        option_args, option_notes = _option_args(s.options)
        args += option_args
        notes += option_notes
        breaks.append(len(args))
        args += _arg("--workload", s.workload)
        if s.rounds is not None:
            args += ["--rounds", str(s.rounds)]
        if s.mode is not None or s.seed is not None:
            args += ["--mode", s.run_mode]
        if s.seed is not None:
            notes.append("this run was seeded: an exact repeat needs its seed, which only the "
                         "curator sees (the Run page, the CLI's diagnostics file), never this script")
        breaks.append(len(args))
        args += ["--max-model-size", _number(s.max_model_size)]
        if s.fit_iters is not None:
            args += ["--fit-iters", str(s.fit_iters)]
        args += ["--final-fit-iters", str(s.final_fit_iters), "--fit-tol", _number(s.fit_tol)]
        breaks.append(len(args))
        args += ["--out", "synthetic.csv", "--report", "report.json"]
        if self.dataset_budget() is not None:
            # the account's own path names the table's fingerprint (a function of the
            # private data): a release never carries it, only this placeholder
            args += ["--budget-file", "table-budget.json"]
            notes.append("table-budget.json: this table's budget account (the curator's file in "
                         "the workbench's budgets folder); the run is charged to it and refused "
                         "past the table's total")
        bounds = [0] + breaks + [len(args)]
        lines = [shlex.join(args[a:b]) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        return "\n".join([_comment(n) for n in notes] + [" \\\n  ".join(lines)])

    def _reproduce_data_args(self) -> list[str]:
        """The command's private table: a bundled sample, or the loaded file's name."""
        if self.sample_name:
            return ["--sample", self.sample_name]
        return _arg("--data", self.data_name or "data.csv")

    def _sample_public_name(self) -> str | None:
        if not self.sample_name:
            return None
        for p in list_samples():
            if p["name"] == self.sample_name and p.get("public"):
                return Path(p["public"]).name
        return None


def events_frame(events) -> pd.DataFrame:
    """The releasable round table (no curator-only values)."""
    rows = []
    for e in events:
        rows.append({
            "round": e.round,
            "marginal": ", ".join(" × ".join(c) for c in e.cliques) if e.cliques else "-",
            "source": e.source,
            "sigma": e.sigma,
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


def candidates_frame(event) -> pd.DataFrame | None:
    """CURATOR-ONLY: the round's candidate pool with exact scores."""
    cur = getattr(event, "curator", None)
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
             "noise std": m["noise_std"], "cells": m["cells"]}
            for m in report.get("measurements", [])]
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- the session object


class Workbench(DiskTableMixin, _WorkbenchCore):
    """A session's state (see :class:`_WorkbenchCore`), whose table may also stay
    in a file on disk, counted by DuckDB (:class:`~synth_core.disk_table.DiskTableMixin`)."""
