"""The Python API: configure, run (iterating over round events), release.

    from synth_core import Synthesizer, load_sample
    sample = load_sample("adult-pub025")
    synth = Synthesizer("jam-pgm", epsilon=1.0)   # release mode: no seed
    for event in synth.run(sample.private, public=sample.public, schema=sample.schema):
        print(event.describe())
    synth.result.synthetic            # a DataFrame in the original value space
"""

from __future__ import annotations

import json
import math
import numbers
import secrets
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from .backends.counting import prefetch
from .backends.inputs import own_public_codes
from .backends.inputs import prepare_inputs as prepare_backend_inputs
from .conditional import shuffled_records, split_columns
from .engine import Engine, Measurement, PreparedData, RoundEvent
from .errors import ConfigError
from .evaluate import CuratorDiagnostics, diagnostics, workload_error
from .marginals import CodedTable
from .mechanisms import MECHANISMS, check_options, make_mechanism, resolve_fit_iters
from .mechanisms.base import Mechanism
from .mechanisms.query_release import QueryReleaseLoop
from .runtime import require_packages
from .model import FittedModel
from .privacy import (MIN_RUN_EPSILON, Guarantee, Ledger, Neighbours, check_delta_plausible,
                      resolve_mode, rho_from_epsilon_delta)
from .report import (JSON_SUFFIXES, TABLE_SUFFIXES, build_report, check_distinct,
                     check_output_path, check_release, json_bytes, privacy_statement,
                     reads_as_seed, refuse_seed_text, table_bytes, write_all)
from .schema import Schema, load_schema
from .schema_infer import domain_with_choices
from .tables import PublicInfo, load_table
from .workload import Workload, parse_workload
from .uncertainty import add_to_report as add_marginal_bounds

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"


#: The most rounds a run may ask for (JAM-PGM's T, AIM's budget scale, ...): far
#: beyond any useful setting, low enough that a typo fails at once.
MAX_ROUNDS = 100_000



class RunWarning(UserWarning):
    """Something the user should know about a finished run (also listed in the report)."""


#: this package's folder: frames in it are not the user's code
_PACKAGE_DIR = str(Path(__file__).resolve().parent) + "/"


def warn_run(message: str) -> None:
    """Warn (:class:`RunWarning`) at the user's line: the first frame outside this
    package, however many of its frames lie between (``fit`` over ``run``, a sweep
    over its jobs), so the warning names the user's code, and Python's
    once-per-line filter tells the user's call sites apart. Called from within
    the package only (a thread the package started: at the caller's line)."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    in_thread = frame is None or frame.f_globals.get("__name__") == "threading"
    warnings.warn(message, RunWarning, stacklevel=2 if in_thread else level)


def _is_real(value) -> bool:
    """A real number given as a number (not a bool, not text)."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_int(value) -> bool:
    """A whole number given as an integer (not a bool, not 2.0)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _require_real(name: str, value, *, positive: bool = False) -> None:
    """ConfigError unless ``value`` is a finite real number (positive if asked)."""
    if not _is_real(value) or not math.isfinite(value) or (positive and not value > 0):
        raise ConfigError(f"{name} must be a {'positive ' if positive else ''}number (finite, "
                          f"not text or a bool), got {value!r}.")


def _require_int(name: str, value, low: int, high: int | None = None) -> None:
    """ConfigError unless ``value`` is an integer with ``low <= value <= high``."""
    if not _is_int(value) or value < low or (high is not None and value > high):
        bound = f"from {low:,} to {high:,}" if high is not None else f"of at least {low:,}"
        raise ConfigError(f"{name} must be a whole number {bound}, got {value!r}.")


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run (with the data and the seed).

    ``seed=None`` (the default) is release mode; a seed makes a research run
    (see :func:`~synth_core.privacy.resolve_mode`).
    """

    mechanism: str = "jam-pgm"
    epsilon: float = 1.0
    delta: float = 1e-9
    neighbours: str = "bounded"
    workload: str = "all-3way"
    #: at most MAX_ROUNDS
    rounds: int | None = None
    seed: int | None = None
    max_model_size: float = 80.0
    #: per-round fit iterations; None: the mechanism's default (AIM 1,000, the others 100)
    fit_iters: int | None = None
    final_fit_iters: int = 1000
    fit_tol: float = 1e-4
    options: dict = field(default_factory=dict)
    #: "research" (seedable, continuous Gaussian), "release" (discrete Gaussian,
    #: secure randomness, never seeded) or None: research when seeded, else release
    mode: str | None = None

    @property
    def round_fit_iters(self) -> int:
        """The per-round fit iterations the run uses (``fit_iters`` or the mechanism's)."""
        return resolve_fit_iters(self.mechanism, self.fit_iters)

    @property
    def run_mode(self) -> str:
        """The mode the run uses (``mode`` resolved against ``seed``)."""
        return resolve_mode(self.mode, self.seed)

    def validate(self) -> None:
        """ConfigError for any setting of the wrong type or out of range."""
        if not isinstance(self.mechanism, str) or self.mechanism not in MECHANISMS:
            raise ConfigError(f"Unknown mechanism {self.mechanism!r}.",
                              hint=f"Available: {', '.join(MECHANISMS)}.")
        require_packages(MECHANISMS[self.mechanism])  # before any data is read
        if self.seed is not None:
            _require_int("seed", self.seed, 0, 2 ** 63 - 1)
        resolve_mode(self.mode, self.seed)
        Neighbours.parse(self.neighbours)
        _require_real("epsilon", self.epsilon, positive=True)
        _require_real("delta", self.delta)
        rho_from_epsilon_delta(self.epsilon, self.delta)
        if self.epsilon < MIN_RUN_EPSILON:
            raise ConfigError(f"A run's epsilon must be at least {MIN_RUN_EPSILON:g}, got "
                              f"{self.epsilon:g}: below it the noise drowns every count.",
                              hint="Typical values lie between 0.1 and 10.")
        check_delta_plausible(self.delta)
        if self.rounds is not None:
            _require_int("rounds", self.rounds, 1, MAX_ROUNDS)
        if self.fit_iters is not None:
            _require_int("fit_iters", self.fit_iters, 1)
        _require_int("final_fit_iters", self.final_fit_iters, 1)
        _require_real("max_model_size", self.max_model_size, positive=True)
        if not _is_real(self.fit_tol) or not self.fit_tol >= 0:
            raise ConfigError(f"fit_tol must be a non-negative number, got {self.fit_tol!r}.")
        if not isinstance(self.options, dict):
            raise ConfigError(f"options must be a dict, got {type(self.options).__name__}.")

    def with_option_overrides(self) -> "RunConfig":
        """This config with a mechanism's own ``rounds`` and ``max_model_size``
        options (a sweep's per-mechanism settings) in the fields they override
        (an option wins over the field; the other options stay options)."""
        options = dict(self.options)
        return replace(self, rounds=options.pop("rounds", self.rounds),
                       max_model_size=options.pop("max_model_size", self.max_model_size),
                       options=options)

    def guarantee(self, public_columns: Sequence[str] = (),
                  public_flag: str | None = None) -> Guarantee:
        """What a run of this configuration states its rho under: the neighbour
        relation, the public columns (``public_columns``, as given to
        :meth:`Synthesizer.run`, with the ``public_columns`` option) and the records a
        flag column marks public (``public_flag``). A table's budget account adds up
        only runs its own guarantee covers (:class:`~synth_core.privacy.Guarantee`)."""
        return Guarantee(self.neighbours,
                         _public_columns(public_columns, self.options.get("public_columns")),
                         public_flag)

    def mechanism_options(self) -> dict:
        """The options the mechanism is built with: :attr:`options`, plus the run's
        ``max_model_size`` and ``rounds`` for a mechanism that declares them
        (an explicit option wins)."""
        options = dict(self.options)
        declared = MECHANISMS[self.mechanism].option_defaults()
        if "max_model_size" in declared:
            options.setdefault("max_model_size", self.max_model_size)
        if "rounds" in declared and self.rounds is not None:
            options.setdefault("rounds", self.rounds)
        return options

    def unused_rounds(self) -> bool:
        """Whether ``rounds`` was given to a mechanism that sets its own number of
        rounds (MST, PrivBayes+PGM, Independent, the public-only baseline)."""
        return (self.rounds is not None
                and "rounds" not in MECHANISMS[self.mechanism].option_defaults())

    def to_json(self) -> dict:
        return asdict(self)

    def resolved_json(self) -> dict:
        """``to_json`` with the per-round fit iterations the run uses (what a report
        and a sweep's run id record: an explicit 100 and a default 100 are the same run)."""
        return {**self.to_json(), "fit_iters": self.round_fit_iters}


@dataclass
class Inputs:
    """A run's tables after loading, splitting and encoding."""

    schema: Schema
    data: PreparedData
    public: PublicInfo
    public_label: str | None
    #: the private records' own values of the public columns (conditional generation keeps them)
    public_values: pd.DataFrame | None = None
    #: columns of the private table left out on request (``drop_columns``)
    dropped: tuple[str, ...] = ()
    #: where the private marginals are counted ("memory", "duckdb", "spark")
    backend: str = "memory"
    #: the public rows are rows of the private table's file flagged by a column (left
    #: out of the private table), not a table of their own
    public_flagged: bool = False


@dataclass
class Sample:
    """A bundled sample: private table, public table (or None) and declared schema."""

    name: str
    title: str
    description: str
    private: pd.DataFrame
    public: pd.DataFrame | None
    schema: Schema
    target: str | None
    public_name: str | None = None


def list_samples() -> list[dict]:
    """The bundled samples (``sample_data/presets.json``)."""
    path = SAMPLE_DIR / "presets.json"
    if not path.exists():
        return []
    return json.loads(path.read_text(encoding="utf-8"))


def sample_preset(name: str) -> dict:
    """A bundled sample's entry of ``presets.json`` (file names relative to ``SAMPLE_DIR``)."""
    presets = {p["name"]: p for p in list_samples()}
    if name not in presets:
        raise ConfigError(f"Unknown sample {name!r}.",
                          hint=f"Available: {', '.join(presets) or 'none (sample_data/ is missing)'}.")
    return presets[name]


def load_sample(name: str) -> Sample:
    """A bundled sample (:func:`list_samples` names them): its private table, public
    table (or None) and declared schema, loaded (ConfigError for an unknown name)."""
    p = sample_preset(name)
    public = load_table(SAMPLE_DIR / p["public"]) if p.get("public") else None
    return Sample(name, p.get("title", name), p.get("description", ""),
                  load_table(SAMPLE_DIR / p["private"]), public,
                  load_schema(SAMPLE_DIR / p["schema"]), p.get("target"),
                  Path(p["public"]).name if p.get("public") else None)


def _public_columns(run_value, option_value) -> tuple[str, ...]:
    """The run's public columns, given to ``run`` and/or as a mechanism option."""
    from_run, from_option = split_columns(run_value), split_columns(option_value)
    if from_run and from_option and set(from_run) != set(from_option):
        raise ConfigError("Public columns were given twice and differ: "
                          f"{', '.join(from_run)} (run) and {', '.join(from_option)} (option).",
                          hint="Give them once.")
    return from_run or from_option


def drop_column_names(value) -> tuple[str, ...]:
    """``drop_columns`` as a tuple of names (a list, or a comma-separated string)."""
    names = split_columns(value, what="Columns to drop")
    if not all(isinstance(c, str) and c for c in names):
        raise ConfigError(f"Cannot read the columns to drop: {value!r}.",
                          hint="Give column names, e.g. drop_columns=['id', 'notes'].")
    return names


def table_frame(table, name: str | None = None) -> tuple[pd.DataFrame, str | None]:
    """(a DataFrame, its name): ``table`` itself, or the file it names loaded."""
    if isinstance(table, pd.DataFrame):
        return table, name
    return load_table(table), name or Path(table).name


def domain_choices(data, public=None, *, schema=None, public_flag: str | None = None,
                   drop_columns: Sequence[str] = (), numeric_columns: Sequence[str] = (),
                   categorical_columns: Sequence[str] = (), backend: str = "memory",
                   data_name: str | None = None) -> tuple[object, str | None, object]:
    """A run's domain read off data with the caller's column kinds: the one path
    of ``synth run --numeric/--categorical`` and of ``Synthesizer.run``'s
    ``numeric_columns``/``categorical_columns``.

    Returns ``(data, data_name, schema)``. Without kind choices they are
    returned unchanged. With some, the domain is read off the public rows (or
    the rows ``public_flag`` marks; else off the private table) by
    :func:`~synth_core.schema_infer.domain_with_choices`, columns in
    ``drop_columns`` left out, and the private table is loaded once (a file
    path becomes its DataFrame, ``data_name`` the file's name). Refused with a
    declared ``schema`` (it fixes every column's kind) and with an engine
    ``backend`` (the domain is read in memory).
    """
    numeric = split_columns(numeric_columns, what="Numeric columns")
    categorical = split_columns(categorical_columns, what="Categorical columns")
    if not numeric and not categorical:
        return data, data_name, schema
    if schema is not None:
        raise ConfigError("Numeric and categorical column choices set the kinds of a domain "
                          "read off data, but a declared schema (given, or the sample's) "
                          "fixes every column's kind.",
                          hint="Set the column's kind in the schema, or leave {schema} out.")
    if backend != "memory":
        raise ConfigError(f"Numeric and categorical column choices read the domain off data "
                          f"in memory; the {backend} backend needs a declared schema.",
                          hint="Write one with {infer}, review it, and pass it as {schema}.")
    frame, data_name = table_frame(data, data_name)
    schema = domain_with_choices(frame, None if public is None else table_frame(public)[0],
                                 flag=public_flag, drop=drop_column_names(drop_columns),
                                 numeric=numeric, categorical=categorical)
    return frame, data_name, schema


def prepare_inputs(data, public=None, *, schema=None, public_flag: str | None = None,
                   public_columns: Sequence[str] = (), data_name: str | None = None,
                   public_name: str | None = None, backend: str = "memory",
                   backend_options: dict | None = None,
                   drop_columns: Sequence[str] = ()) -> Inputs:
    """Load, split and encode a run's tables; decide where the domain comes from.

    ``backend`` ("memory", "duckdb" or "spark", see :mod:`synth_core.backends`)
    says where the private marginals are counted; the engine backends leave
    the private file where it is. Every data column of the private table must
    be in the domain (declared schema, or read off the public rows) unless it
    is named in ``drop_columns``: no column is left out silently. The one input
    path of every backend is :func:`synth_core.backends.inputs.prepare_inputs`.
    """
    prepared = prepare_backend_inputs(
        data, public, schema=schema, public_flag=public_flag, public_columns=public_columns,
        data_name=data_name, public_name=public_name, backend=backend,
        options=backend_options, drop=drop_column_names(drop_columns))
    return Inputs(prepared.schema, PreparedData(prepared.private, prepared.public),
                  prepared.public_info, prepared.public_label, prepared.public_values,
                  prepared.dropped, prepared.backend,
                  public_flagged=bool(public_flag) and prepared.public is not None)


@dataclass
class RunOutcome:
    """One run's engine (once built) and result (once finished), kept apart from the
    :class:`Synthesizer`'s ``engine`` and ``result`` (which follow its latest run): a
    budget charge settles from its own run's ledger, whatever another run of the
    same Synthesizer started meanwhile."""

    engine: "Engine | None" = None
    result: "RunResult | None" = None


@dataclass
class RunResult:
    """Everything a finished run produced. ``report`` is the release report."""

    config: RunConfig
    inputs: Inputs
    workload: Workload
    events: list[RoundEvent]
    measurements: list[Measurement]
    ledger: Ledger
    model: FittedModel
    synthetic_codes: pd.DataFrame
    synthetic: pd.DataFrame
    report: dict
    seconds: float
    warnings: list = field(default_factory=list)
    #: the seed the run's generator was made from (the given one, or drawn from
    #: the operating system); CURATOR-ONLY, never part of ``report``
    seed: int | None = None
    _diagnostics: CuratorDiagnostics | None = field(default=None, repr=False, compare=False)

    @property
    def synthetic_table(self) -> CodedTable:
        return CodedTable.from_frame(self.synthetic_codes, self.inputs.schema.sizes)

    def curator_diagnostics(self) -> CuratorDiagnostics:
        """CURATOR-ONLY: workload and per-marginal error against the private data
        (one pass over every workload marginal, made once per result)."""
        if self._diagnostics is None:
            self._diagnostics = diagnostics(self.inputs.data.private, self.synthetic_table,
                                            self.workload)
        return self._diagnostics

    def public_proxy_error(self) -> float | None:
        """CURATOR-ONLY: workload error of the public rows themselves."""
        pub = self.inputs.data.public
        return None if pub is None else workload_error(self.inputs.data.private, pub, self.workload)

    def curator_record(self) -> dict:
        """CURATOR-ONLY: the run's mode and seed. In research mode the seed
        regenerates every noise draw, so whoever holds it can subtract the
        noise from the released answers. In release mode the noise comes from
        secure randomness, but the seed still regenerates the data-independent
        draws (the sampled records, the order a conditional run writes them in,
        which hides the private file's order). Keep it with the private data,
        never with a release."""
        mode = self.report["privacy"]["mode"]
        what = ("the seed regenerates the noise" if mode == "research" else
                "the noise is not seeded, but the seed regenerates the record sampling "
                "and order")
        return {"label": f"CURATOR-ONLY: never release ({what})",
                "mode": mode, "seed": self.seed,
                "seed_given": self.config.seed is not None}

    def write(self, out: str | Path | None = None, report: str | Path | None = None,
              diagnostics: str | Path | None = None) -> None:
        """Write the synthetic data (CSV or Parquet), the JSON report and/or the
        CURATOR-ONLY diagnostics (JSON, with :meth:`curator_record`), all or
        nothing: every path is checked first, each file is written in full
        beside its target, and the files are renamed into place only when all
        are complete. Writing a seeded run's data or report warns (RunWarning):
        it is not fit for publication."""
        outputs = [(p, role) for p, role in ((out, "synthetic data"), (report, "report"),
                                              (diagnostics, "diagnostics")) if p is not None]
        if not outputs:
            raise ConfigError("Nothing to write: no file was named.",
                              hint="Name the files: write(out='synthetic.csv', "
                                   "report='report.json').")
        check_outputs(out=out, report=report, diagnostics=diagnostics)
        if self.report["privacy"].get("seeded") and (out is not None or report is not None):
            warn_run(SEEDED_WRITE_WARNING)
        contents = {"synthetic data": lambda p: table_bytes(p, self.synthetic),
                    "report": lambda p: json_bytes(self.report),
                    "diagnostics": lambda p: json_bytes(self.curator_payload())}
        write_all([(p, contents[role](p)) for p, role in outputs])

    def curator_payload(self) -> dict:
        """CURATOR-ONLY diagnostics file: errors against the private data, the
        public rows' own error, and :meth:`curator_record`."""
        payload = self.curator_diagnostics().to_json()
        payload["public_proxy_workload_error"] = self.public_proxy_error()
        payload["run"] = self.curator_record()
        return payload

    def _repr_html_(self) -> str:
        """Jupyter's view: the release (report, first synthetic rows); no curator-only value."""
        from .display import result_html
        return result_html(self)

    def __repr__(self) -> str:
        """The printed form (also what a notebook saves beside the HTML view): only
        releasable values. The generated one would print the seed, the rounds'
        exact scores and the private table's codes."""
        privacy = self.report["privacy"]
        return (f"RunResult(mechanism={self.config.mechanism!r}, epsilon={self.config.epsilon:g}, "
                f"delta={self.config.delta:g}, mode={privacy['mode']!r}, "
                f"rounds={len(self.events)}, rho_spent={self.ledger.spent:.6g}, "
                f"rows={len(self.synthetic)}, columns={list(self.synthetic.columns)})")

    def curator_view(self):
        """CURATOR-ONLY: the seed and true errors, for Jupyter (labelled as such)."""
        from .display import CuratorView
        return CuratorView(self)

    def to_notebook(self, path: str | Path, *, curator_file: str | Path | None = None,
                    **inputs) -> None:
        """Write a notebook that repeats this run (:func:`synth_core.notebook.result_recipe`;
        ``inputs``: ``sample=NAME`` or ``data=FILE``, and ``public``, ``public_flag``,
        ``schema``). It holds no data and no seed; a seeded run's seed goes to
        ``curator_file`` (CURATOR-ONLY) only when one is given."""
        from .notebook import curator_seed_bytes, notebook_bytes, result_recipe
        name = Path(curator_file).name if curator_file is not None else "curator-seed.json"
        files = [(Path(path), notebook_bytes(result_recipe(self, curator_file=name, **inputs)))]
        if curator_file is not None and self.config.seed is not None:
            files.append((Path(curator_file), curator_seed_bytes(self.config.seed)))
        check_distinct(p for p, _ in files)
        write_all(files)


def check_outputs(*, out=None, report=None, diagnostics=None,
                  inputs: dict[str, object] | None = None) -> None:
    """DataError, before anything is spent, unless every output path given can be
    written: a known suffix (``out``: .csv/.parquet/.pq; the others .json), not a
    folder, a parent folder that takes new files, not a budget account, no two
    the same, and none of the run's ``inputs`` (what it is -> its path)."""
    given = [(p, sfx, role) for p, sfx, role in (
        (out, TABLE_SUFFIXES, "synthetic data"), (report, JSON_SUFFIXES, "report"),
        (diagnostics, JSON_SUFFIXES, "diagnostics")) if p is not None]
    for path, suffixes, role in given:
        check_output_path(path, suffixes, role)
    check_distinct((p for p, _, _ in given), inputs)


def _private_columns(inputs: Inputs) -> list[str]:
    """The columns the guarantee protects (all but the public columns)."""
    return [c for c in inputs.schema.names if c not in inputs.public.columns]


def input_warnings(mechanism: str, inputs: Inputs) -> list[str]:
    """What a run should say about its inputs: public rows given to a mechanism
    that ignores them, and a domain read off the private table (not protected)."""
    out = []
    if inputs.public_label is not None and not MECHANISMS[mechanism].capabilities.public_rows:
        domain = inputs.schema.source == "public"
        if inputs.public_flagged:
            out.append(f"{mechanism} does not use public rows: the {inputs.public_label} were "
                       "left out of the table it synthesises"
                       + (", and the domain was read off them." if domain else "."))
        else:
            out.append(f"{mechanism} does not use public rows: the public rows given "
                       f"({inputs.public_label}) were ignored"
                       + (", except that the domain was read off them." if domain else "."))
    if inputs.schema.source == "private":
        out.append(PRIVATE_DOMAIN_WARNING)
    return out


#: the most records an unbounded run synthesises: its row count is the model's noisy
#: total, which has no upper bound when the noise is large
MAX_SYNTHETIC_ROWS = 10_000_000


def noisy_row_count(total: float) -> tuple[int, str | None]:
    """The synthetic row count of an unbounded run from the model's noisy ``total``,
    kept within 1 and :data:`MAX_SYNTHETIC_ROWS`, and the warning when it was not
    (the total is a DP estimate, so the warning releases nothing new)."""
    if math.isfinite(total) and 1 <= round(total) <= MAX_SYNTHETIC_ROWS:
        return int(round(total)), None
    if math.isfinite(total) and total < 1:
        return 1, (f"The model's noisy total ({total:.3g} records) is below one record: the "
                   "synthetic table has 1 row. Under unbounded DP the number of records is "
                   "estimated with noise; at this epsilon that noise is larger than the table.")
    return MAX_SYNTHETIC_ROWS, (
        f"The model's noisy total ({total:,.0f} records) is above {MAX_SYNTHETIC_ROWS:,}: the "
        f"synthetic table has {MAX_SYNTHETIC_ROWS:,} rows. Under unbounded DP the number of "
        "records is estimated with noise; at this epsilon that noise can be far larger than "
        "the table.")


def noise_notes(measurements, rows: int, own_rounds: bool) -> list[str]:
    """The run warning when even the least noisy private marginal measurement has
    a noise std per cell above ``rows``, the number of synthetic records (n under
    bounded DP, else the noisy total): the noise then outweighs the whole table in
    every cell. Released values only (noise scales and the synthetic size). Not for
    the query-release mechanisms, whose answers are on another scale."""
    stds = [m.noise_std for m in measurements if m.noise_std > 0]
    if own_rounds or not stds or min(stds) <= rows:
        return []
    return [f"Every private measurement's noise (std {min(stds):,.3g} per cell or more) is "
            f"larger than the {rows:,} synthetic records: at this epsilon the synthetic data "
            "reflect the noise more than the table. Raise epsilon, or use a larger table."]


#: the run warning of a domain read off the private table
PRIVATE_DOMAIN_WARNING = ("The domain was read off the private table: the release reveals its "
                          "categories and bounds (not protected). Declare a schema, or read it "
                          "off public rows.")
#: what writing a seeded research run's files says
SEEDED_WRITE_WARNING = ("This is a seeded research run: anyone who learns or guesses the seed "
                        "can remove its noise, so these files are not fit for publication "
                        "(release mode: no seed).")


class Synthesizer:
    """Configure a mechanism, run it on data, get the synthetic data and report.

    Args:
        mechanism: one of ``synth_core.MECHANISMS``: ``aim``, ``mwem-pgm``, ``mst``,
            ``privbayes-pgm``, ``independent``, ``gem`` (private data only); ``jam-pgm``,
            ``pmw-pub``, ``gem-pub``, ``public-only`` (public rows); ``vjam-pgm``,
            ``vpmw``, ``vgem-pub`` (public columns).
        epsilon, delta: the (epsilon, delta)-DP target, converted to rho-zCDP.
        workload: ``all-3way``, ``target:COL:K``, an explicit spec (see
            :func:`~synth_core.workload.parse_workload`) or a Workload.
        neighbours: ``bounded`` (replace one record) or ``unbounded``.
        rounds: rounds T (JAM-PGM, vJAM-PGM: default 30; MWEM+PGM: d; PMW-Pub: 500;
            GEM, GEM-Pub: 50) or AIM's budget scale (default 16 d); an integer
            from 1 to ``MAX_ROUNDS`` (100,000).
        seed: ``None`` (default): release mode. An integer makes a reproducible
            research run for experiments: its noise is regenerable from the
            seed, so its report is not fit for publication (the seed is kept
            out of the report, in :meth:`RunResult.curator_record`).
        mode: ``"research"`` (continuous Gaussian and Gumbel noise from the
            seeded numpy generator; without a seed, one is drawn from the
            operating system and not released) or ``"release"`` (discrete
            Gaussian on integer counts and exact selection noise from OpenDP's
            secure source; refuses a seed). Default: research when ``seed`` is
            given, release when ``seed=None``.
        max_model_size: the Private-PGM model size limit in MB (default 80).
        **options: mechanism options, e.g. GEM's ``hidden``, ``inner_steps``
            (see docs/mechanisms.md).
    """

    def __init__(self, mechanism: str = "jam-pgm", *, epsilon: float = 1.0, delta: float = 1e-9,
                 workload: str | Workload = "all-3way", neighbours: str = "bounded",
                 rounds: int | None = None, seed: int | None = None,
                 max_model_size: float = 80.0, fit_iters: int | None = None,
                 final_fit_iters: int = 1000, fit_tol: float = 1e-4, mode: str | None = None,
                 **options):
        self._workload = workload if isinstance(workload, Workload) else None
        if not isinstance(workload, (str, Workload)):
            raise ConfigError(f"workload must be a spec string or a Workload, not "
                              f"{type(workload).__name__}.")
        raw = RunConfig(mechanism, epsilon, delta, neighbours,
                        workload if isinstance(workload, str) else workload.description,
                        rounds, seed, max_model_size, fit_iters, final_fit_iters, fit_tol,
                        dict(options), mode)
        raw.validate()  # types first: epsilon="1" or rounds=2.5 is refused, not converted
        self.config = replace(raw, epsilon=float(epsilon), delta=float(delta),
                              neighbours=str(neighbours),
                              rounds=None if rounds is None else int(rounds),
                              seed=None if seed is None else int(seed),
                              max_model_size=float(max_model_size),
                              fit_iters=None if fit_iters is None else int(fit_iters),
                              final_fit_iters=int(final_fit_iters), fit_tol=float(fit_tol))
        self.result: RunResult | None = None
        self.engine: Engine | None = None

    @classmethod
    def from_config(cls, config: RunConfig) -> "Synthesizer":
        """The one way a :class:`RunConfig` becomes a run (validated as the constructor does)."""
        return cls(config.mechanism, epsilon=config.epsilon, delta=config.delta,
                   workload=config.workload, neighbours=config.neighbours, rounds=config.rounds,
                   seed=config.seed, max_model_size=config.max_model_size,
                   fit_iters=config.fit_iters, final_fit_iters=config.final_fit_iters,
                   fit_tol=config.fit_tol, mode=config.mode, **config.options)

    def fit(self, data, public=None, **kwargs) -> RunResult:
        """Run to the end (see :meth:`run`) and return the result."""
        for _ in self.run(data, public, **kwargs):
            pass
        return self.result

    def prepare(self, data, public=None, *, schema=None, public_flag: str | None = None,
                public_columns: Sequence[str] = (), data_name: str | None = None,
                public_name: str | None = None, backend: str = "memory",
                backend_options: dict | None = None, drop_columns: Sequence[str] = (),
                numeric_columns: Sequence[str] = (), categorical_columns: Sequence[str] = ()
                ) -> tuple[Inputs, Workload, "Mechanism"]:
        """What :meth:`run` does before it measures anything, with its arguments: the
        mechanism's options and neighbour relation checked, the domain and the inputs
        prepared, the workload parsed and its marginals' sizes checked, the mechanism
        built. Returns ``(inputs, workload, mechanism)``; raises the same errors
        :meth:`run` would before its first round, and spends nothing.

        ``synth run`` calls it before it creates a new ``--budget-file`` account, so
        that a run refused for its inputs (a missing schema, a column the schema
        lacks) does not leave an account whose total can no longer be changed.
        """
        cfg = self.config
        options = dict(cfg.options)
        public_columns = _public_columns(public_columns, options.pop("public_columns", None))
        if public_columns:
            options["public_columns"] = public_columns
        check_options(cfg.mechanism, options)   # before the data is read
        MECHANISMS[cfg.mechanism].check_relation(cfg.neighbours, options)
        data, data_name, schema = domain_choices(
            data, public, schema=schema, public_flag=public_flag, drop_columns=drop_columns,
            numeric_columns=numeric_columns, categorical_columns=categorical_columns,
            backend=backend, data_name=data_name)
        inputs = prepare_inputs(data, public, schema=schema, public_flag=public_flag,
                                public_columns=public_columns, data_name=data_name,
                                public_name=public_name, backend=backend,
                                backend_options=backend_options, drop_columns=drop_columns)
        refuse_seed_text(inputs.public_label, "public rows' description",
                         hint="Rename the public file (or give public_name= in the API): a "
                              "release names the public rows it used.")
        workload = self._workload or parse_workload(cfg.workload, inputs.schema.names)
        workload.check_cells(inputs.schema.sizes)        # before anything is counted or spent
        # built here, so that what its constructor refuses is refused before any reservation
        mechanism = make_mechanism(cfg.mechanism, **replace(cfg, options=options).mechanism_options())
        mechanism.check_columns(inputs.schema.names)
        # a release names the columns (workload, measurements, ledger, bounds); the
        # query-release mechanisms' round notes name a measured cell "column=value"
        cells = mechanism.capabilities.own_rounds
        for column in inputs.schema.names:
            if reads_as_seed(f"{column}=0" if cells else column):
                raise ConfigError(
                    f"The column name {column!r} reads as a seed"
                    + (f" in {mechanism.display_name()}'s round notes, which name a measured "
                       f"cell '{column}=<value>'" if cells else "")
                    + ": a release names its columns, and may name no seed (a seed "
                      "regenerates a research run's noise).",
                    hint="Rename the column (or leave it out, {drop:" + column + "}).")
        return inputs, workload, mechanism

    def run(self, data, public=None, *, schema=None, public_flag: str | None = None,
            public_columns: Sequence[str] = (), data_name: str | None = None,
            public_name: str | None = None, backend: str = "memory",
            backend_options: dict | None = None, budget=None,
            drop_columns: Sequence[str] = (), numeric_columns: Sequence[str] = (),
            categorical_columns: Sequence[str] = ()) -> Iterator[RoundEvent]:
        """Run the mechanism, yielding a :class:`RoundEvent` per round.

        Every data column of ``data`` must be in the domain (the declared
        ``schema``, or the public rows' columns when the domain is read off
        them); ``drop_columns`` (a list, or a comma-separated string) leaves
        columns out on request, and the report lists them.

        ``numeric_columns`` / ``categorical_columns`` (lists, or comma-separated
        strings; without a declared ``schema``, memory backend only) choose the
        kinds of the domain read off the data: a numeric column is binned between
        its bounds, a categorical one keeps every distinct value (e.g. zip or
        FIPS codes). The same choices as ``synth run --numeric/--categorical``,
        with the same errors (:func:`domain_choices`).

        ``public_columns`` (a list, or a comma-separated string) marks columns
        of ``data`` as known for every record: the guarantee then protects the
        other columns only. Mechanisms whose capabilities admit them receive
        them: they are required by ``vjam-pgm``, ``vpmw`` and ``vgem-pub``,
        optional for ``jam-pgm`` and for ``aim`` (with ``conditional=True``);
        any other mechanism raises ``ConfigError`` naming its public-columns
        variant (``Capabilities.public_columns_variant``).

        When the generator is exhausted, ``self.result`` holds the
        :class:`RunResult`.

        ``budget`` (a :class:`~synth_core.budget.BudgetAccount` of this table:
        ConfigError for another table's): the run's rho is reserved in the
        dataset's account once the inputs are prepared (:meth:`prepare`; a run
        refused for its inputs leaves no charge) and before anything is
        measured (refused with
        BudgetExceededError when the account's total would be passed),
        settled with what the ledger spent, and summarised in the report's
        ``budget_account`` block.
        """
        started = time.perf_counter()
        if budget is not None and backend == "memory":
            data, data_name = table_frame(data, data_name)   # loaded once: the account's check
        # before anything is reserved: a run refused for its inputs leaves no charge
        inputs, workload, mechanism = self.prepare(
            data, public, schema=schema, public_flag=public_flag, public_columns=public_columns,
            data_name=data_name, public_name=public_name, backend=backend,
            backend_options=backend_options, drop_columns=drop_columns,
            numeric_columns=numeric_columns, categorical_columns=categorical_columns)
        self.engine = self.result = None
        outcome = RunOutcome()
        if budget is None:
            yield from self._execute(inputs, workload, mechanism, started, outcome)
            return
        from .budget import charged_run
        yield from charged_run(budget, self.config, outcome, data,
                               self.config.guarantee(public_columns, public_flag),
                               lambda: self._execute(inputs, workload, mechanism, started,
                                                     outcome))

    def _execute(self, inputs: Inputs, workload: Workload, mechanism: "Mechanism",
                 started: float, outcome: RunOutcome) -> Iterator[RoundEvent]:
        """:meth:`run` on prepared inputs: the rounds, the synthetic records, the report
        (in ``outcome``, and in ``self.engine`` / ``self.result``)."""
        cfg = self.config
        prefetch(inputs.data.private, workload.cliques)  # an engine backend: batched passes up front
        neighbours = Neighbours.parse(cfg.neighbours)
        rho = rho_from_epsilon_delta(cfg.epsilon, cfg.delta)
        mode = cfg.run_mode
        seeded = cfg.seed is not None
        # release mode: this seed only drives data-independent draws (sampling the
        # synthetic records, a network's initial weights); the noise is OpenDP's
        seed = cfg.seed if seeded else secrets.randbits(63)
        # the query-release mechanisms select single counting queries and fit no
        # Private-PGM model: they run their own rounds with the same ledger and event stream
        runner = QueryReleaseLoop if mechanism.capabilities.own_rounds else Engine
        engine = runner(mechanism, inputs.data, workload, rho=rho, neighbours=neighbours,
                        seed=seed, fit_iters=cfg.round_fit_iters, final_fit_iters=cfg.final_fit_iters,
                        fit_tol=cfg.fit_tol, mode=mode)
        self.engine = outcome.engine = engine
        yield from engine.rounds()

        rng = np.random.default_rng([seed, 1])
        rows_note = None
        if neighbours.n_is_public:
            rows = inputs.data.n
        elif mechanism.capabilities.zero_budget:
            # no private measurement, so no noisy total: the public rows' own count
            rows = inputs.data.public.n
        else:
            rows, rows_note = noisy_row_count(engine.model.total)
        conditional_on = mechanism.conditional_on
        codes = mechanism.sample(engine, rows, rng,
                                 lambda columns: own_public_codes(inputs, columns))
        synthetic = inputs.schema.decode(codes, rng)
        if conditional_on and inputs.public_values is not None:
            # each record keeps its own public values (not a value redrawn inside their bin)
            for c in conditional_on:
                synthetic[c] = inputs.public_values[c].to_numpy()
        if conditional_on:
            # records come out in the private table's row order, each with its own public
            # values; that order can depend on private values (a file sorted or grouped by a
            # private column), so the release's records are put in a random order
            codes, synthetic = shuffled_records(rng, codes, synthetic)
        run_warnings = (mechanism.run_warnings() + input_warnings(cfg.mechanism, inputs)
                        + ([rows_note] if rows_note else [])
                        + noise_notes(engine.state.measurements, len(synthetic),
                                      mechanism.capabilities.own_rounds)
                        + ([f"{mechanism.display_name()} sets its own number of rounds "
                            f"({len(engine.events)} here): rounds={cfg.rounds} was not used."]
                           if cfg.unused_rounds() else []))
        for message in run_warnings:
            warn_run(message)
        domain_rows = inputs.public_label if inputs.schema.source == "public" else None
        if not mechanism.capabilities.public_rows:
            inputs.public_label = None  # given but unused: not part of the release's claims
        report = self._report(inputs, workload, engine, rho, seeded, len(synthetic),
                              domain_rows)
        report["warnings"] = run_warnings
        conditioning = mechanism.conditioning_report()
        if conditioning is not None:
            report["conditional_generation"] = conditioning
        add_marginal_bounds(report, engine, workload, codes)  # AIM section 5, release values only
        check_release(report)
        self.result = outcome.result = RunResult(
            cfg, inputs, workload, engine.events, engine.state.measurements, engine.ledger,
            engine.model, codes, synthetic, report, time.perf_counter() - started,
            run_warnings, seed)

    def _report(self, inputs: Inputs, workload: Workload, engine: Engine, rho: float,
                seeded: bool, rows: int, domain_rows: str | None) -> dict:
        cfg = self.config
        bounded = Neighbours.parse(cfg.neighbours).n_is_public
        statement = privacy_statement(
            rho=rho, epsilon=cfg.epsilon, delta=cfg.delta, neighbours=cfg.neighbours,
            public_rows=inputs.public_label, public_columns=inputs.public.columns,
            private_columns=_private_columns(inputs),
            domain_source=inputs.schema.source, research_mode=engine.noise.mode == "research",
            spent=engine.ledger.spent, seeded=seeded,
            conditional_on=engine.mechanism.conditional_on, domain_rows=domain_rows)
        privacy = {
            "accounting": "rho-zCDP, fully adaptive composition",
            "epsilon": cfg.epsilon, "delta": cfg.delta, "rho": rho,
            "rho_spent": engine.ledger.spent,
            "neighbours": cfg.neighbours,
            "conversion": "exact (Canonne, Kamath, Steinke 2020)",
            "mode": engine.noise.mode,
            "noise": engine.noise.noise,
            "selection": engine.mechanism.selection + "; " + engine.noise.selection_source,
            "seeded": seeded,
            "statement": statement,
        }
        config = cfg.resolved_json()
        if cfg.unused_rounds():
            config["rounds"] = None   # the mechanism sets its own: the report says what ran
        config["mode"] = engine.noise.mode
        del config["seed"]  # curator-only (RunResult.curator_record): it regenerates the noise
        return build_report(
            config=config, privacy=privacy, domain_source=inputs.schema.source,
            domain_rows=domain_rows, schema=inputs.schema.to_json(),
            public={"rows": inputs.public_label, "columns": list(inputs.public.columns),
                    "private_columns": _private_columns(inputs),
                    "n_public": inputs.data.public.n
                    if inputs.public_label and inputs.data.public is not None else None},
            workload=workload.to_json(),
            measurements=[m.to_json() for m in engine.state.measurements],
            events=[e.to_release() for e in engine.events],
            ledger=engine.ledger.to_json(),
            synthetic={"rows": rows, "columns": list(inputs.schema.names)},
            data={"n": inputs.data.n if bounded else None,
                  "n_note": "public under bounded DP" if bounded else
                            "not released under unbounded DP (the synthetic size is the model's noisy total)",
                  "dropped_columns": list(inputs.dropped)},
        )


def synthesize(data, public=None, *, mechanism: str = "jam-pgm", **kwargs) -> RunResult:
    """One call: run a mechanism to the end and return the :class:`RunResult`."""
    run_keys = {"schema", "public_flag", "public_columns", "data_name", "public_name", "backend",
                "backend_options", "budget", "drop_columns", "numeric_columns",
                "categorical_columns"}
    run_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in run_keys}
    return Synthesizer(mechanism, **kwargs).fit(data, public, **run_kwargs)
