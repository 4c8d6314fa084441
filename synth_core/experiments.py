"""Experiments: declarative sweeps with a resumable Parquet result store.

A :class:`Sweep` is datasets x mechanisms x epsilons x seeds over shared run
settings. Every combination is a :class:`Job` with the full configuration of
its run and a ``run_id`` (a hash of that configuration and the data's
fingerprint). A :class:`ResultStore` is a folder holding one Parquet file per
finished run::

    store/runs/<run_id>.parquet         one row: the run's figures and full config
    store/marginals/<run_id>.parquet    its per-marginal errors

Each file is written to a temporary name and renamed into place, and the run
file is written last: a run is in the store entirely or not at all. Killing a
sweep (even with SIGKILL) loses at most the run in progress; running the same
sweep again skips every run already in the store.

CURATOR-ONLY: the store holds true errors computed from the private data
(for choosing mechanisms and settings, never for release), and every run of
a sweep spends its own privacy budget on the private data.

    sweep = Sweep.from_file("sweep.toml")          # or Sweep(datasets=[...], ...)
    for row in run_sweep(sweep, ResultStore("out/sweep")):
        print(row["mechanism"], row["epsilon"], row["workload_error"])
"""

from __future__ import annotations

import hashlib
import io
import json
import resource
import subprocess
import sys
import time
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Iterator, Protocol

import numpy as np
import pandas as pd

from .api import RunConfig, Synthesizer
from .errors import ConfigError, SynthError
from .mechanisms import MECHANISMS, REQUIRED
from .report import atomic_write_bytes, refuse_seed_text
from .version import __version__, code_fingerprint

#: Columns of the store's run table (one row per run).
RUN_COLUMNS = ["run_id", "sweep", "dataset", "mechanism", "mechanism_name", "epsilon", "seed",
               "status", "workload_error", "workload_error_private", "rho", "rho_spent",
               "rounds", "seconds", "cpu_seconds", "peak_rss_mb", "error", "finished_at",
               "config", "code"]
#: how a stored per-marginal row names its marginal: its columns joined by this
MARGINAL_JOIN = " × "
MARGINAL_COLUMNS = ["run_id", "dataset", "mechanism", "epsilon", "seed", "marginal", "error"]
FINISHED, FAILED, STOPPED = "finished", "failed", "stopped"
#: a sweep dataset's column choices (``Synthesizer.run`` keyword arguments of the same names)
COLUMN_CHOICES = ("drop_columns", "numeric_columns", "categorical_columns")
#: RunConfig fields a sweep's ``settings`` may set (the rest come from jobs)
SETTING_FIELDS = tuple(f.name for f in fields(RunConfig)
                       if f.name not in ("mechanism", "epsilon", "seed", "options"))


# ------------------------------------------------------------------ the spec

@dataclass(frozen=True)
class DatasetSpec:
    """One dataset of a sweep: a private table and its public information.

    ``data`` and ``public`` are paths (CSV/Parquet) or DataFrames; ``schema``
    a path, a dict or a :class:`~synth_core.schema.Schema`. ``key``
    identifies the data in run ids; by default it is a fingerprint of the
    tables' contents, so a changed file gives new run ids.
    ``drop_columns``, ``numeric_columns`` and ``categorical_columns`` are the
    run's choices of the same names (``Synthesizer.run``): columns left out,
    and the kinds of a domain read off the data (without ``schema``).
    """

    name: str
    data: object
    public: object = None
    schema: object = None
    public_flag: str | None = None
    public_columns: tuple[str, ...] = ()
    key: str | None = None
    #: where the private marginals are counted (``synth_core.backends``): "duckdb"
    #: counts a file where it lies (same results as "memory", without loading it)
    backend: str = "memory"
    drop_columns: tuple[str, ...] = ()
    numeric_columns: tuple[str, ...] = ()
    categorical_columns: tuple[str, ...] = ()

    def __post_init__(self):
        for name in COLUMN_CHOICES:
            object.__setattr__(self, name, _columns(getattr(self, name)))
        for role, value in (("data", self.data), ("public", self.public), ("schema", self.schema)):
            if isinstance(value, (str, Path)) and not Path(value).exists():
                raise ConfigError(f"The {role} file {value} of sweep dataset {self.name!r} does "
                                  "not exist.", hint="Check the path (relative paths are read "
                                                     "from the spec file's folder).")

    def fingerprint(self) -> str:
        if self.key:
            return self.key
        parts = [_content_hash(self.data), _content_hash(self.public), _content_hash(self.schema),
                 str(self.public_flag), ",".join(self.public_columns)]
        choices = self.column_choices()
        if any(choices.values()):   # a data set without choices keeps its fingerprint
            parts.append(json.dumps(choices, sort_keys=True))
        return hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]

    def column_choices(self) -> dict[str, tuple[str, ...]]:
        """The run keyword arguments of the column choices (``Synthesizer.run``)."""
        return {name: getattr(self, name) for name in COLUMN_CHOICES}

    def describe(self) -> dict:
        """The dataset part of a run's stored configuration (paths, not contents)."""
        def show(x):
            return str(x) if isinstance(x, (str, Path)) else (None if x is None else type(x).__name__)
        return {"name": self.name, "data": show(self.data), "public": show(self.public),
                "schema": show(self.schema) if not isinstance(self.schema, dict) else "dict",
                "public_flag": self.public_flag, "public_columns": list(self.public_columns),
                "backend": self.backend, "fingerprint": self.fingerprint(),
                **{k: list(v) for k, v in self.column_choices().items()}}


@dataclass(frozen=True)
class MechanismSpec:
    """A mechanism with options under a label (e.g. ``conditional-aim`` is
    ``aim`` with ``conditional=True``). ``public_columns`` says whether the
    dataset's public columns are given to it; None: when the mechanism needs
    them (vjam-pgm, vpmw, vgem-pub) or conditional generation is on."""

    label: str
    mechanism: str
    options: dict = field(default_factory=dict)
    public_columns: bool | None = None

    def uses_public_columns(self) -> bool:
        if self.public_columns is not None:
            return self.public_columns
        return bool(self.options.get("conditional")) or \
            MECHANISMS[self.mechanism].capabilities.public_columns == REQUIRED


@dataclass(frozen=True)
class Job:
    """One run of a sweep, with everything that determines it."""

    sweep: str
    dataset: DatasetSpec
    mechanism: MechanismSpec
    config: RunConfig

    @property
    def run_id(self) -> str:
        ident = {"data": self.dataset.fingerprint(), "label": self.mechanism.label,
                 "public_columns": self.public_columns, "config": self.config.resolved_json()}
        return hashlib.sha1(json.dumps(ident, sort_keys=True, default=str).encode()).hexdigest()[:20]

    @property
    def public_columns(self) -> tuple[str, ...]:
        return tuple(self.dataset.public_columns) if self.mechanism.uses_public_columns() else ()

    def describe(self) -> dict:
        """The full configuration stored with the run's result."""
        return {"sweep": self.sweep, "dataset": self.dataset.describe(),
                "mechanism": asdict(self.mechanism), "run": self.config.resolved_json(),
                "public_columns_used": list(self.public_columns), "synth_core": __version__}

    def label(self) -> str:
        """The run as progress lines name it (with its dataset and seed: for the
        curator's eyes)."""
        return f"{self.dataset.name} {self.charge_label()} seed={self.config.seed}"

    def charge_label(self) -> str:
        """The run as a budget account's history names it, which every later release
        report of the table carries: no seed (it regenerates a research run's noise)
        and no dataset name (the account is the table's; a name such as the file's
        can say whose records they are)."""
        return f"{self.mechanism.label} eps={self.config.epsilon:g}"


@dataclass(frozen=True)
class Sweep:
    """datasets x mechanisms x epsilons x seeds, with shared run ``settings``
    (RunConfig fields: delta, workload, neighbours, rounds, fit_iters, ...)."""

    datasets: tuple[DatasetSpec, ...]
    mechanisms: tuple[MechanismSpec, ...]
    epsilons: tuple[float, ...]
    seeds: tuple[int, ...] = (0,)
    settings: dict = field(default_factory=dict)
    name: str = "sweep"

    def __post_init__(self):
        if not self.datasets:
            raise ConfigError("A sweep needs at least one dataset.")
        if not self.mechanisms:
            raise ConfigError("A sweep needs at least one mechanism.")
        if not self.epsilons:
            raise ConfigError("A sweep needs at least one epsilon.")
        if not self.seeds:
            raise ConfigError("A sweep needs at least one seed.")
        for m in self.mechanisms:
            if m.mechanism not in MECHANISMS:
                raise ConfigError(f"Unknown mechanism {m.mechanism!r} in the sweep.",
                                  hint=f"Available: {', '.join(MECHANISMS)}.")
            for opt in m.options:
                if opt not in MECHANISMS[m.mechanism].option_defaults():
                    raise ConfigError(f"{m.mechanism} has no option {opt!r} (sweep mechanism "
                                      f"{m.label!r}).")
                MECHANISMS[m.mechanism].option(opt).check_value(m.options[opt])
            # a label names the run in a budget history, which releases carry
            refuse_seed_text(m.label, "sweep mechanism label",
                             hint="Give the mechanism a label that names no seed.")
        labels = [m.label for m in self.mechanisms]
        if len(set(labels)) != len(labels):
            raise ConfigError("Two mechanisms of the sweep share a label; give each its own.")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ConfigError("Two datasets of the sweep share a name; give each its own.")
        unknown = set(self.settings) - set(SETTING_FIELDS)
        if unknown:
            raise ConfigError(f"Unknown sweep setting(s): {', '.join(sorted(unknown))}.",
                              hint=f"Settings are: {', '.join(SETTING_FIELDS)}.")
        if "seed" in self.settings or self.settings.get("mode") == "release":
            raise ConfigError("Sweeps are seeded research runs: seeds come from 'seeds'.")

    @property
    def size(self) -> int:
        return len(self.datasets) * len(self.mechanisms) * len(self.epsilons) * len(self.seeds)

    def jobs(self) -> list[Job]:
        """Every run, ordered so that a partial sweep covers whole settings
        first: seed, then dataset, epsilon, mechanism."""
        out = []
        for seed in self.seeds:
            for d in self.datasets:
                for eps in self.epsilons:
                    for m in self.mechanisms:
                        cfg = RunConfig(mechanism=m.mechanism, epsilon=float(eps), seed=int(seed),
                                        options=dict(m.options), **self.settings)
                        cfg = replace(cfg, mode="research")
                        cfg.validate()
                        out.append(Job(self.name, d, m, cfg))
        return out

    @classmethod
    def from_dict(cls, spec: dict, base: Path | None = None) -> "Sweep":
        """A sweep from a parsed TOML/JSON spec (see :func:`Sweep.from_file`).
        Relative paths are resolved against ``base``."""
        def path(p):
            if p is None:
                return None
            p = Path(str(p)).expanduser()
            return p if p.is_absolute() or base is None else (base / p)

        def dataset(d):
            if not isinstance(d, dict):
                raise ConfigError(f"Each dataset of a sweep spec is a table (name, data or "
                                  f"sample, public, schema, ...), not {d!r}.")
            files = _sample_files(d["sample"]) if d.get("sample") else {}
            if d.get("no_public"):
                files["public"] = None
            return DatasetSpec(name=str(d.get("name", d.get("sample"))),
                               data=path(d["data"]) if "data" in d else files["data"],
                               public=path(d["public"]) if "public" in d else files.get("public"),
                               schema=path(d["schema"]) if "schema" in d else files.get("schema"),
                               public_flag=d.get("public_flag"),
                               public_columns=_columns(d.get("public_columns")),
                               backend=str(d.get("backend", "memory")),
                               **{k: _columns(d.get(k)) for k in COLUMN_CHOICES})

        if not isinstance(spec, dict):
            raise ConfigError(f"A sweep spec is a table of settings (name, mechanisms, "
                              f"epsilons, seeds, datasets), not a {type(spec).__name__}.",
                              hint="See docs/experiments.md, 'Spec files'.")
        for key in ("datasets", "mechanisms"):
            if not isinstance(spec.get(key, []), list):
                raise ConfigError(f"The sweep spec's '{key}' must be a list, not "
                                  f"{spec[key]!r}.", hint="See docs/experiments.md, 'Spec files'.")
        try:
            datasets = tuple(dataset(d) for d in spec.get("datasets", []))
            mechanisms = tuple(_mechanism(m) for m in spec.get("mechanisms", []))
            return cls(datasets=datasets, mechanisms=mechanisms,
                       epsilons=_spec_list(spec, "epsilons", float, "number", []),
                       seeds=_spec_list(spec, "seeds", int, "whole number", [0]),
                       settings=dict(spec.get("settings", {})), name=str(spec.get("name", "sweep")))
        except KeyError as exc:
            raise ConfigError(f"The sweep spec lacks {exc.args[0]!r}.",
                              hint="Each dataset needs 'data' (or 'sample'); each mechanism "
                                   "table needs 'mechanism'.") from None
        except (TypeError, ValueError, AttributeError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"The sweep spec is malformed: {str(exc).rstrip('.')}.") from None

    @classmethod
    def from_file(cls, path: str | Path) -> "Sweep":
        """A sweep from a ``.toml`` or ``.json`` file::

            name = "adult-jam"
            mechanisms = ["jam-pgm", "aim",
                          {label = "conditional-aim", mechanism = "aim", options = {conditional = true}}]
            epsilons = [0.1, 1, 10]
            seeds = [0, 1, 2]
            [settings]
            delta = 1e-9
            workload = "all-3way"
            [[datasets]]
            name = "adult_pub025"
            data = "data/priv.csv"          # relative to the spec file
            public = "data/pub.csv"
            schema = "data/domain.json"
        """
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read the sweep spec {path}: {exc.strerror}.") from None
        try:
            spec = json.loads(text) if path.suffix.lower() == ".json" else tomllib.loads(text)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"The sweep spec {path} is not valid "
                              f"{'JSON' if path.suffix.lower() == '.json' else 'TOML'}: {exc}") from None
        return cls.from_dict(spec, base=path.resolve().parent)


def _spec_list(spec: dict, key: str, kind, what: str, default: list) -> tuple:
    """A spec's list of numbers under ``key`` (ConfigError naming the key and value)."""
    values = spec.get(key, default)
    if not isinstance(values, list):
        raise ConfigError(f"The sweep spec's '{key}' must be a list of {what}s, not {values!r}.")
    out = []
    for value in values:
        try:
            if isinstance(value, bool) or (kind is int and float(value) != int(value)):
                raise ValueError
            out.append(kind(value))
        except (TypeError, ValueError):
            raise ConfigError(f"The sweep spec's '{key}' holds {value!r}, which is not a "
                              f"{what}.") from None
    return tuple(out)


def _sample_files(name: str) -> dict:
    """The files of a bundled sample (``sample = "titanic"`` in a spec)."""
    from .api import SAMPLE_DIR, sample_preset

    p = sample_preset(name)
    return {"data": SAMPLE_DIR / p["private"], "schema": SAMPLE_DIR / p["schema"],
            "public": SAMPLE_DIR / p["public"] if p.get("public") else None}


def _columns(value) -> tuple[str, ...]:
    if not value:
        return ()
    if isinstance(value, str):
        return tuple(c.strip() for c in value.split(",") if c.strip())
    return tuple(str(c) for c in value)


def _mechanism(m) -> MechanismSpec:
    if isinstance(m, str):
        return MechanismSpec(m, m)
    if isinstance(m, MechanismSpec):
        return m
    return MechanismSpec(str(m.get("label", m["mechanism"])), str(m["mechanism"]),
                         dict(m.get("options", {})), m.get("public_columns"))


def _content_hash(obj) -> str:
    if obj is None:
        return "-"
    if isinstance(obj, pd.DataFrame):
        h = hashlib.sha1(json.dumps([list(map(str, obj.columns)), len(obj)]).encode())
        h.update(pd.util.hash_pandas_object(obj, index=False).to_numpy().tobytes())
        return h.hexdigest()
    if isinstance(obj, (str, Path)):
        p = Path(obj)
        h = hashlib.sha1()
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    if isinstance(obj, dict):
        return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()
    to_json = getattr(obj, "to_json", None)
    if callable(to_json):
        return hashlib.sha1(json.dumps(to_json(), sort_keys=True, default=str).encode()).hexdigest()
    return hashlib.sha1(repr(obj).encode()).hexdigest()


# ------------------------------------------------------------------ the store

class ResultStore:
    """A folder of finished runs, one Parquet file each (see the module doc)."""

    def __init__(self, root: str | Path):
        self.root = Path(root)

    @property
    def runs_dir(self) -> Path:
        return self.root / "runs"

    @property
    def marginals_dir(self) -> Path:
        return self.root / "marginals"

    def finished_ids(self) -> set[str]:
        """Run ids with a finished result (failed runs are tried again)."""
        if not self.runs_dir.exists():
            return set()
        runs = self.runs()
        return set(runs.loc[runs["status"] == FINISHED, "run_id"])

    def _files(self, folder: Path) -> list[Path]:
        return sorted(folder.glob("*.parquet")) if folder.exists() else []

    def runs(self) -> pd.DataFrame:
        """Every stored run, one row each (empty frame with the columns if none)."""
        return _concat([_read(p) for p in self._files(self.runs_dir)], RUN_COLUMNS)

    def marginals(self) -> pd.DataFrame:
        """Per-marginal errors of the finished runs."""
        done = set(self.runs()["run_id"])
        frames = [_read(p) for p in self._files(self.marginals_dir) if p.stem in done]
        return _concat(frames, MARGINAL_COLUMNS)

    def marginals_of(self, run_id: str) -> list[dict]:
        """One stored run's per-marginal errors (empty when none are stored)."""
        path = self.marginals_dir / f"{run_id}.parquet"
        return _read(path).to_dict("records") if path.exists() else []

    def write(self, row: dict, marginals: list[dict] = ()) -> None:
        """Store one run: its per-marginal errors, then (last) its row."""
        run_id = row["run_id"]
        if marginals:
            _write_parquet(self.marginals_dir / f"{run_id}.parquet",
                           pd.DataFrame(list(marginals), columns=MARGINAL_COLUMNS))
        _write_parquet(self.runs_dir / f"{run_id}.parquet",
                       pd.DataFrame([{c: row.get(c) for c in RUN_COLUMNS}], columns=RUN_COLUMNS))

    def summary(self) -> pd.DataFrame:
        """Mean, sample standard deviation over seeds (``sd_error``, not a standard error
        of the mean) and count of the workload error per (dataset, mechanism, epsilon)."""
        runs = self.runs()
        runs = runs[runs["status"] == FINISHED]
        if runs.empty:
            return pd.DataFrame(columns=["dataset", "mechanism", "epsilon", "runs", "mean_error",
                                         "sd_error", "mean_seconds"])
        runs = runs.astype({"workload_error": float, "seconds": float, "epsilon": float})
        g = runs.groupby(["dataset", "mechanism", "epsilon"], sort=True)
        out = g.agg(runs=("run_id", "count"), mean_error=("workload_error", "mean"),
                    sd_error=("workload_error", "std"), mean_seconds=("seconds", "mean"))
        return out.reset_index()


def _read(path: Path) -> pd.DataFrame | None:
    try:
        return pd.read_parquet(path)
    except Exception:  # noqa: BLE001 - not a finished result (cannot happen with atomic writes)
        return None


def _concat(frames, columns) -> pd.DataFrame:
    frames = [f for f in frames if f is not None and len(f)]
    if not frames:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})
    out = pd.concat(frames, ignore_index=True)
    # files written before a column existed (``code``) lack it: present, empty
    return out.reindex(columns=[*columns, *(c for c in out.columns if c not in columns)])


def _write_parquet(path: Path, frame: pd.DataFrame) -> None:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    atomic_write_bytes(path, buf.getvalue())


# ------------------------------------------------------------------ running

def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def job_events(synth: Synthesizer, job: Job):
    """``synth.run`` on the job's inputs: its round events; ``synth.result`` after the last.
    The public rows are given to every mechanism, as in a single run: the private
    table is the same for all (a flag column always splits it), and mechanisms that
    do not use public rows ignore them."""
    d = job.dataset
    return synth.run(d.data, d.public, schema=d.schema, public_flag=d.public_flag,
                     public_columns=job.public_columns,
                     data_name=d.name if not isinstance(d.data, (str, Path)) else None,
                     backend=d.backend, **d.column_choices())


def run_job(job: Job, *, should_stop: Callable[[], bool] = lambda: False,
            on_event=None) -> tuple[dict, list[dict]] | None:
    """Run one job in this process: (result row, per-marginal rows), or None
    if ``should_stop()`` became true between rounds. A :class:`SynthError`
    gives a row with status "failed" and the message."""
    d, m, cfg = job.dataset, job.mechanism, job.config
    base = {"run_id": job.run_id, "sweep": job.sweep, "dataset": d.name, "mechanism": m.label,
            "mechanism_name": m.mechanism, "epsilon": cfg.epsilon, "seed": cfg.seed,
            "config": json.dumps(job.describe(), sort_keys=True, default=str),
            "code": code_fingerprint()}
    started, cpu0 = time.perf_counter(), _cpu_seconds()
    synth = Synthesizer.from_config(cfg.with_option_overrides())
    try:
        for event in job_events(synth, job):
            if on_event is not None:
                on_event(job, event)
            if should_stop():  # not stored; its spent budget is reported to the caller
                spent = synth.engine.ledger.spent if synth.engine is not None else 0.0
                return {**base, "status": STOPPED, "rho_spent": spent}, []
    except SynthError as exc:
        # what the run measured before it failed (0 when refused before its first
        # round): a budget charge settles with it, not with the whole reservation
        spent = synth.engine.ledger.spent if synth.engine is not None else 0.0
        row = {**base, "status": FAILED, "error": str(exc), "rho_spent": spent,
               "seconds": time.perf_counter() - started, "finished_at": time.time()}
        return row, []
    res = synth.result
    diag = res.curator_diagnostics()
    per = diag.per_marginal
    # error on W': the marginals with a column outside the dataset's public
    # columns (the measure for conditional methods; also for mechanisms that
    # were not given the public columns, so that all are compared alike)
    public_cols = set(d.public_columns)
    restricted = [e for k, e in per.items() if not set(k) <= public_cols] if public_cols else []
    row = {**base, "status": FINISHED, "workload_error": diag.workload_error,
           "workload_error_private": float(np.mean(restricted)) if restricted else None,
           "rho": res.ledger.total, "rho_spent": res.ledger.spent,
           "rounds": max([e.round for e in res.events], default=0),
           "seconds": time.perf_counter() - started, "cpu_seconds": _cpu_seconds() - cpu0,
           "peak_rss_mb": _peak_rss_mb(), "error": None, "finished_at": time.time()}
    marginals = [{"run_id": job.run_id, "dataset": d.name, "mechanism": m.label,
                  "epsilon": cfg.epsilon, "seed": cfg.seed, "marginal": MARGINAL_JOIN.join(k),
                  "error": float(v)} for k, v in per.items()]
    return row, marginals


def _run_isolated(job: Job, store: ResultStore, quiet: bool) -> dict:
    """Run a job in a fresh Python process, which writes its result into the
    store (bounded memory over long sweeps; ``peak_rss_mb`` is that run's)."""
    d = job.dataset
    for x in (d.data, d.public, d.schema):
        if x is not None and not isinstance(x, (str, Path)):
            raise ConfigError("Isolated sweeps need datasets given as file paths.",
                              hint="Pass paths, or run without isolation.")
    payload = json.dumps({"store": str(store.root), "sweep": job.sweep,
                          "dataset": {**asdict(d), "data": str(d.data),
                                      "public": None if d.public is None else str(d.public),
                                      "schema": None if d.schema is None else str(d.schema)},
                          "mechanism": asdict(job.mechanism), "config": job.config.to_json()})
    # an earlier attempt's row (a failed job is retried) must not stand for this one: a
    # child that dies without writing would be settled with that attempt's rho_spent
    (store.runs_dir / f"{job.run_id}.parquet").unlink(missing_ok=True)
    out = subprocess.run([sys.executable, "-m", "synth_core.experiments"], input=payload,
                         text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE if quiet else None)
    rows = store.runs()
    mine = rows[rows["run_id"] == job.run_id]
    if len(mine):
        return mine.iloc[-1].to_dict()
    row = {"run_id": job.run_id, "sweep": job.sweep, "dataset": d.name,
           "mechanism": job.mechanism.label, "mechanism_name": job.mechanism.mechanism,
           "epsilon": job.config.epsilon, "seed": job.config.seed, "status": FAILED,
           "error": f"the run's process ended with exit code {out.returncode}"
                    + (f": {out.stderr.strip().splitlines()[-1]}" if out.stderr and out.stderr.strip()
                       else ""),
           "config": json.dumps(job.describe(), sort_keys=True, default=str),
           "finished_at": time.time()}
    store.write(row)
    return row


def _child_main() -> int:
    """The isolated run (``python -m synth_core.experiments`` with a job on stdin)."""
    spec = json.loads(sys.stdin.read())
    d = spec["dataset"]
    dataset = DatasetSpec(**{**d, "public_columns": tuple(d["public_columns"])})
    mech = MechanismSpec(**spec["mechanism"])
    job = Job(spec["sweep"], dataset, mech, RunConfig(**spec["config"]))

    def show(job, event):
        print(f"[{job.label()}] {event.describe()}", file=sys.stderr, flush=True)

    row, marginals = run_job(job, on_event=show)
    ResultStore(spec["store"]).write(row, marginals)
    return 0


def job_summary(job: Job) -> dict:
    """A job as a small dict (what a progress display shows)."""
    return {"run_id": job.run_id, "dataset": job.dataset.name, "mechanism": job.mechanism.label,
            "epsilon": job.config.epsilon, "seed": job.config.seed}


def pending_jobs(sweep: Sweep, store: ResultStore) -> tuple[list[Job], int]:
    """(jobs not yet finished in the store, how many are finished). Jobs with one run
    id (two dataset names for the same table, public information and choices) are one
    job, run once under the first name: a second run would spend budget again only to
    overwrite the first's result."""
    done = store.finished_ids()
    jobs, seen = [], set()
    for job in sweep.jobs():
        if job.run_id not in seen:
            seen.add(job.run_id)
            jobs.append(job)
    todo = [j for j in jobs if j.run_id not in done]
    return todo, len(jobs) - len(todo)


class JobCharge(Protocol):
    """Charges a sweep's runs to their tables' budget accounts: ``reserve`` before a
    job reads its data (raising when it does not fit), ``settle`` after it with the
    rho it spent (None: unknown, the whole reservation counts) and whether it
    finished (a run that failed before spending released nothing)."""

    def reserve(self, job: Job) -> object: ...

    def settle(self, hold: object, rho_spent: float | None, *, finished: bool) -> None: ...


def run_sweep(sweep: Sweep, store: ResultStore, *, isolate: bool = False, quiet: bool = False,
              should_stop: Callable[[], bool] = lambda: False,
              on_start: Callable[[Job, int, int], None] | None = None,
              on_event=None, charge: JobCharge | None = None) -> Iterator[dict]:
    """Run the sweep's unfinished jobs, storing each result as it finishes,
    and yield each result row. ``isolate`` runs every job in its own process.
    ``on_start(job, index, total)`` is called before each job; ``charge``
    reserves each job's rho before it starts and settles it after."""
    store.root.mkdir(parents=True, exist_ok=True)
    todo, _ = pending_jobs(sweep, store)
    for i, job in enumerate(todo):
        if should_stop():
            return
        if on_start is not None:
            on_start(job, i, len(todo))
        hold = charge.reserve(job) if charge is not None else None
        row = None
        try:
            if isolate:
                row = _run_isolated(job, store, quiet)
            else:
                row, marginals = run_job(job, should_stop=should_stop, on_event=on_event)
                if row["status"] == STOPPED:
                    return
                store.write(row, marginals)
        finally:
            if charge is not None:
                charge.settle(hold, None if row is None else row.get("rho_spent"),
                              finished=row is not None and row.get("status") == FINISHED)
        yield {c: row.get(c) for c in RUN_COLUMNS}


if __name__ == "__main__":
    sys.exit(_child_main())
