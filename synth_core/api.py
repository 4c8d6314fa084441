"""The Python API: configure, run (iterating over round events), release.

    from synth_core import Synthesizer, load_sample
    sample = load_sample("adult-pub025")
    synth = Synthesizer("jam-pgm", epsilon=1.0, seed=0)
    for event in synth.run(sample.private, public=sample.public, schema=sample.schema):
        print(event.describe())
    synth.result.synthetic            # a DataFrame in the original value space
"""

from __future__ import annotations

import json
import secrets
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from .conditional import generate_conditionally, split_columns
from .engine import Engine, Measurement, PreparedData, RoundEvent
from .errors import ConfigError, DataError
from .evaluate import CuratorDiagnostics, diagnostics, workload_error
from .marginals import CodedTable
from .mechanisms import MECHANISMS, accepts_option, make_mechanism, resolve_fit_iters
from .mechanisms.query_release import DirectLoop
from .model import FittedModel
from .privacy import Ledger, Neighbours, resolve_mode, rho_from_epsilon_delta
from .report import build_report, check_release, privacy_statement, write_json, write_table
from .schema import Schema, declared_schema, infer_schema, load_schema
from .tables import PublicInfo, PublicRows, load_table, prepare_tables
from .workload import Workload, parse_workload
from .uncertainty import add_to_report as add_marginal_bounds

SAMPLE_DIR = Path(__file__).resolve().parent.parent / "sample_data"


class RunWarning(UserWarning):
    """Something the user should know about a finished run (also listed in the report)."""


@dataclass(frozen=True)
class RunConfig:
    """Everything that determines a run (with the data and the seed)."""

    mechanism: str = "jam-pgm"
    epsilon: float = 1.0
    delta: float = 1e-9
    neighbours: str = "bounded"
    workload: str = "all-3way"
    rounds: int | None = None
    seed: int | None = 0
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
        if self.mechanism not in MECHANISMS:
            raise ConfigError(f"Unknown mechanism {self.mechanism!r}.",
                              hint=f"Available: {', '.join(MECHANISMS)}.")
        resolve_mode(self.mode, self.seed)
        Neighbours.parse(self.neighbours)
        rho_from_epsilon_delta(self.epsilon, self.delta)
        if self.rounds is not None and self.rounds < 1:
            raise ConfigError(f"rounds must be at least 1, got {self.rounds}.")
        if self.round_fit_iters < 1 or self.final_fit_iters < 1:
            raise ConfigError("fit iterations must be at least 1.")
        if not self.fit_tol >= 0:
            raise ConfigError(f"fit_tol must be a non-negative number, got {self.fit_tol!r}.")

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
    p = sample_preset(name)
    public = load_table(SAMPLE_DIR / p["public"]) if p.get("public") else None
    return Sample(name, p.get("title", name), p.get("description", ""),
                  load_table(SAMPLE_DIR / p["private"]), public,
                  load_schema(SAMPLE_DIR / p["schema"]), p.get("target"),
                  Path(p["public"]).name if p.get("public") else None)


def _as_frame(table, role: str) -> tuple[pd.DataFrame, str]:
    if isinstance(table, pd.DataFrame):
        return table, role
    if isinstance(table, (str, Path)):
        return load_table(table), Path(table).name
    raise DataError(f"The {role} must be a DataFrame or a path to a CSV/Parquet file, "
                    f"not {type(table).__name__}.")


def _public_columns(run_value, option_value) -> tuple[str, ...]:
    """The run's public columns, given to ``run`` and/or as a mechanism option."""
    from_run, from_option = split_columns(run_value), split_columns(option_value)
    if from_run and from_option and set(from_run) != set(from_option):
        raise ConfigError("Public columns were given twice and differ: "
                          f"{', '.join(from_run)} (run) and {', '.join(from_option)} (option).",
                          hint="Give them once.")
    return from_run or from_option


def prepare_inputs(data, public=None, *, schema=None, public_flag: str | None = None,
                   public_columns: Sequence[str] = (), data_name: str | None = None,
                   public_name: str | None = None, backend: str = "memory",
                   backend_options: dict | None = None) -> Inputs:
    """Load, split and encode a run's tables; decide where the domain comes from.

    ``backend`` ("memory", "duckdb" or "spark", see :mod:`synth_core.backends`)
    says where the private marginals are counted; the engine backends leave
    the private file where it is.
    """
    if backend != "memory":
        from .backends.inputs import prepare_backend_inputs
        return Inputs(*prepare_backend_inputs(
            data, public, schema=schema, public_flag=public_flag, public_columns=public_columns,
            data_name=data_name, public_name=public_name, backend=backend,
            options=backend_options))
    private_df, pname = _as_frame(data, "private table")
    pname = data_name or pname
    rows = None
    if public is not None and public_flag:
        raise ConfigError("Give either a public table or a public flag column, not both.")
    public_label = None
    if public is not None:
        public_df, pub_label = _as_frame(public, "public table")
        pub_label = public_name or pub_label
        rows = PublicRows(table=public_df, source_name=pub_label)
        public_label = f"public table '{pub_label}', {len(public_df)} rows"
    elif public_flag:
        rows = PublicRows(flag_column=public_flag)
        public_label = f"rows of '{pname}' flagged by column '{public_flag}'"
    info = PublicInfo(rows=rows, columns=tuple(public_columns))

    sch = declared_schema(schema)
    if sch is None:
        if rows is not None and rows.table is not None:
            sch = infer_schema(rows.table, source="public")
        elif rows is not None:
            flagged = rows.split(private_df)[1]
            sch = infer_schema(flagged, source="public")
        else:
            frame = private_df.drop(columns=[public_flag]) if public_flag else private_df
            sch = infer_schema(frame, source="private")

    try:
        private_codes, public_codes = prepare_tables(private_df, sch, info, private_name=pname)
    except DataError as exc:
        if sch.source == "public":
            raise DataError(exc.message, hint=(exc.hint or "") + " The domain was inferred from the "
                            "public rows; declare a schema (--schema) that covers every value.",
                            column=exc.column, path=exc.path) from exc
        raise
    sizes = sch.sizes
    data_ = PreparedData(CodedTable.from_frame(private_codes, sizes),
                         CodedTable.from_frame(public_codes, sizes) if public_codes is not None else None)
    values = None
    if public_columns:
        own = rows.split(private_df)[0] if rows is not None and rows.flag_column else private_df
        values = own[list(public_columns)].reset_index(drop=True)
    return Inputs(sch, data_, info, public_label, values)


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

    @property
    def synthetic_table(self) -> CodedTable:
        return CodedTable.from_frame(self.synthetic_codes, self.inputs.schema.sizes)

    def curator_diagnostics(self) -> CuratorDiagnostics:
        """CURATOR-ONLY: workload and per-marginal error against the private data."""
        return diagnostics(self.inputs.data.private, self.synthetic_table, self.workload)

    def public_proxy_error(self) -> float | None:
        """CURATOR-ONLY: workload error of the public rows themselves."""
        pub = self.inputs.data.public
        return None if pub is None else workload_error(self.inputs.data.private, pub, self.workload)

    def write(self, out: str | Path | None = None, report: str | Path | None = None) -> None:
        """Write the synthetic data (CSV or Parquet) and/or the JSON report."""
        if out is not None:
            write_table(out, self.synthetic)
        if report is not None:
            write_json(report, self.report)


def _private_columns(inputs: Inputs) -> list[str]:
    """The columns the guarantee protects (all but the public columns)."""
    return [c for c in inputs.schema.names if c not in inputs.public.columns]


class Synthesizer:
    """Configure a mechanism, run it on data, get the synthetic data and report.

    Args:
        mechanism: one of ``synth_core.MECHANISMS`` (``aim``, ``jam-pgm``,
            ``vjam-pgm``, ``mwem-pgm``, ``pmw-pub``, ``gem``, ``gem-pub``,
            ``public-only``).
        epsilon, delta: the (epsilon, delta)-DP target, converted to rho-zCDP.
        workload: ``all-3way``, ``target:COL:K``, an explicit spec (see
            :func:`~synth_core.workload.parse_workload`) or a Workload.
        neighbours: ``bounded`` (replace one record) or ``unbounded``.
        rounds: rounds T (JAM-PGM, vJAM-PGM: default 30; MWEM+PGM: d; PMW-Pub: 500;
            GEM, GEM-Pub: 50) or AIM's budget scale (default 16 d).
        seed: makes the run reproducible (research mode); ``None`` draws a
            fresh seed from the operating system.
        mode: ``"research"`` (continuous Gaussian and Gumbel noise from the
            seeded numpy generator) or ``"release"`` (discrete Gaussian on
            integer counts and exact selection noise from OpenDP's secure
            source; refuses a seed). Default: research when ``seed`` is given,
            release when ``seed=None``.
        max_model_size: the Private-PGM model size limit in MB (default 80).
        **options: mechanism options, e.g. GEM's ``hidden``, ``inner_steps``
            (see docs/mechanisms.md).
    """

    def __init__(self, mechanism: str = "jam-pgm", *, epsilon: float = 1.0, delta: float = 1e-9,
                 workload: str | Workload = "all-3way", neighbours: str = "bounded",
                 rounds: int | None = None, seed: int | None = 0, max_model_size: float = 80.0,
                 fit_iters: int | None = None, final_fit_iters: int = 1000,
                 fit_tol: float = 1e-4, mode: str | None = None, **options):
        self._workload = workload if isinstance(workload, Workload) else None
        self.config = RunConfig(mechanism, float(epsilon), float(delta), str(neighbours),
                                workload if isinstance(workload, str) else workload.description,
                                rounds, seed, float(max_model_size), fit_iters,
                                int(final_fit_iters), float(fit_tol), dict(options), mode)
        self.config.validate()
        self.result: RunResult | None = None
        self.engine: Engine | None = None

    def fit(self, data, public=None, **kwargs) -> RunResult:
        """Run to the end (see :meth:`run`) and return the result."""
        for _ in self.run(data, public, **kwargs):
            pass
        return self.result

    def run(self, data, public=None, *, schema=None, public_flag: str | None = None,
            public_columns: Sequence[str] = (), data_name: str | None = None,
            public_name: str | None = None, backend: str = "memory",
            backend_options: dict | None = None, budget=None) -> Iterator[RoundEvent]:
        """Run the mechanism, yielding a :class:`RoundEvent` per round.

        ``public_columns`` (a list, or a comma-separated string) marks columns
        of ``data`` as known for every record: the guarantee then protects the
        other columns only. Mechanisms that take a ``public_columns`` option
        receive them (``vjam-pgm`` uses them; AIM, MWEM+PGM, PMW-Pub and GEM
        refuse them for now); any other mechanism raises ``ConfigError``.

        When the generator is exhausted, ``self.result`` holds the
        :class:`RunResult`.

        ``budget`` (a :class:`~synth_core.budget.BudgetAccount`): the run's rho
        is reserved in the dataset's account before the data is read (refused
        with BudgetExceededError when the account's total would be passed),
        settled with what the ledger spent, and summarised in the report's
        ``budget_account`` block.
        """
        if budget is not None:
            from .budget import charged_run
            yield from charged_run(budget, self, lambda: self.run(
                data, public, schema=schema, public_flag=public_flag,
                public_columns=public_columns, data_name=data_name, public_name=public_name,
                backend=backend, backend_options=backend_options))
            return
        started = time.perf_counter()
        cfg = self.config
        options = dict(cfg.options)
        public_columns = _public_columns(public_columns, options.pop("public_columns", None))
        if public_columns:
            if not accepts_option(cfg.mechanism, "public_columns"):
                raise ConfigError(f"{cfg.mechanism} does not use public columns.",
                                  hint="Choose vjam-pgm or conditional aim (--conditional), or "
                                       "run without public columns.")
            # the mechanism decides (vjam-pgm uses them; the others refuse them)
            options["public_columns"] = public_columns
        if options.get("conditional") and not accepts_option(cfg.mechanism, "conditional"):
            raise ConfigError(f"{cfg.mechanism} has no conditional generation.",
                              hint="Conditional generation is offered for aim and vjam-pgm.")
        inputs = prepare_inputs(data, public, schema=schema, public_flag=public_flag,
                                public_columns=public_columns, data_name=data_name,
                                public_name=public_name, backend=backend,
                                backend_options=backend_options)
        workload = self._workload or parse_workload(cfg.workload, inputs.schema.names)
        if backend != "memory":  # count the workload's marginals in batched passes up front
            from .backends import prefetch
            prefetch(inputs.data.private, workload.cliques)
        neighbours = Neighbours.parse(cfg.neighbours)
        rho = rho_from_epsilon_delta(cfg.epsilon, cfg.delta)
        mode = cfg.run_mode
        seeded = cfg.seed is not None
        # release mode: this seed only drives data-independent draws (sampling the
        # synthetic records, a network's initial weights); the noise is OpenDP's
        seed = cfg.seed if seeded else secrets.randbits(63)
        if cfg.mechanism != "public-only":
            options.setdefault("max_model_size", cfg.max_model_size)
            if cfg.rounds is not None:
                options.setdefault("rounds", cfg.rounds)
        mechanism = make_mechanism(cfg.mechanism, **options)
        # PMW-Pub and GEM select single counting queries and fit no Private-PGM
        # model: they run their own rounds with the same ledger and event stream
        runner = DirectLoop if getattr(mechanism, "own_loop", False) else Engine
        engine = runner(mechanism, inputs.data, workload, rho=rho, neighbours=neighbours,
                        seed=seed, fit_iters=cfg.round_fit_iters, final_fit_iters=cfg.final_fit_iters,
                        fit_tol=cfg.fit_tol, mode=mode)
        self.engine = engine
        yield from engine.rounds()

        rng = np.random.default_rng([seed, 1])
        rows = inputs.data.n if neighbours.n_is_public else max(1, int(round(engine.model.total)))
        conditional_on = tuple(getattr(mechanism, "conditional_on", ()))
        if hasattr(mechanism, "direct_sample"):
            codes = mechanism.direct_sample(engine.state, rows, rng)
        elif conditional_on:
            # the private records' public-column codes (an engine backend loads these columns only)
            from .backends.inputs import own_public_codes
            codes = generate_conditionally(engine.model, own_public_codes(inputs, conditional_on),
                                           conditional_on, rng)
        else:
            codes = engine.model.sample(rows, int(rng.integers(2 ** 32)))
        synthetic = inputs.schema.decode(codes, rng)
        if conditional_on and inputs.public_values is not None:
            # each record keeps its own public values (not a value redrawn inside their bin)
            for c in conditional_on:
                synthetic[c] = inputs.public_values[c].to_numpy()
        run_warnings = list(getattr(mechanism, "warnings", []))
        for message in run_warnings:
            warnings.warn(message, RunWarning, stacklevel=2)
        if not mechanism.uses_public_rows:
            inputs.public_label = None  # given but unused: not part of the release's claims
        report = self._report(inputs, workload, engine, rho, seeded, len(synthetic))
        report["warnings"] = run_warnings
        conditioning = getattr(mechanism, "conditioning_report", lambda: None)()
        if conditioning is not None:
            report["conditional_generation"] = conditioning
        add_marginal_bounds(report, engine, workload, codes)  # AIM section 5, release values only
        check_release(report)
        self.result = RunResult(cfg, inputs, workload, engine.events, engine.state.measurements,
                                engine.ledger, engine.model, codes, synthetic, report,
                                time.perf_counter() - started, run_warnings)

    def _report(self, inputs: Inputs, workload: Workload, engine: Engine, rho: float,
                seeded: bool, rows: int) -> dict:
        cfg = self.config
        bounded = Neighbours.parse(cfg.neighbours).n_is_public
        statement = privacy_statement(
            rho=rho, epsilon=cfg.epsilon, delta=cfg.delta, neighbours=cfg.neighbours,
            public_rows=inputs.public_label, public_columns=inputs.public.columns,
            private_columns=_private_columns(inputs),
            domain_source=inputs.schema.source, research_mode=engine.noise.mode == "research",
            spent=engine.ledger.spent, seeded=seeded)
        privacy = {
            "accounting": "rho-zCDP, fully adaptive composition",
            "epsilon": cfg.epsilon, "delta": cfg.delta, "rho": rho,
            "rho_spent": engine.ledger.spent,
            "neighbours": cfg.neighbours,
            "conversion": "exact (Canonne, Kamath, Steinke 2020)",
            "mode": engine.noise.mode,
            "noise": engine.noise.noise,
            "selection": getattr(engine.mechanism, "selection", "exponential mechanism (Gumbel-max)")
                         + "; " + engine.noise.selection_source,
            "seeded": seeded,
            "statement": statement,
        }
        config = cfg.resolved_json()
        config["mode"] = engine.noise.mode
        if not seeded:
            config["seed"] = None
        return build_report(
            config=config, privacy=privacy, domain_source=inputs.schema.source,
            schema=inputs.schema.to_json(),
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
                            "not released under unbounded DP (the synthetic size is the model's noisy total)"},
        )


def synthesize(data, public=None, *, mechanism: str = "jam-pgm", **kwargs) -> RunResult:
    """One call: run a mechanism to the end and return the :class:`RunResult`."""
    run_keys = {"schema", "public_flag", "public_columns", "data_name", "public_name", "backend",
                "backend_options", "budget"}
    run_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in run_keys}
    return Synthesizer(mechanism, **kwargs).fit(data, public, **run_kwargs)
