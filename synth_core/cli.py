"""Command line: ``synth run`` (one release), ``synth sweep`` (many runs, resumable),
``synth samples`` (bundled data), ``synth schema infer`` (a schema proposed for review)."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from .cli_whatif import add_parser as add_whatif_parser
from .cli_whatif import run as run_whatif
from .errors import SynthError

EPILOG = """examples (release mode: no --seed; the files may be published):
  synth run --sample adult-pub025 --mechanism jam-pgm --epsilon 1 --out out/synth.csv --report out/report.json
  synth run --data private.csv --public public.csv --schema schema.json --mechanism jam-pgm \\
            --epsilon 1 --delta 1e-9 --workload all-3way --rounds 30 \\
            --out synth.parquet --report report.json
  synth run --data table.csv --public-flag is_public --mechanism aim --epsilon 3 --out synth.csv
  synth run --data table.csv --schema schema.json --drop id,notes --mechanism aim --epsilon 1
  synth run --data table.csv --numeric age --categorical zip --drop id --mechanism aim --epsilon 1
  synth run --data big.parquet --schema schema.json --backend duckdb --mechanism aim --epsilon 1

research runs (for experiments only: --seed makes the noise regenerable, so their
reports are not fit for publication):
  synth run --sample titanic --no-public --public-columns pclass,sex --mechanism vjam-pgm \\
            --epsilon 1 --seed 0 --report out/research-report.json
  synth run --sample titanic --no-public --public-columns pclass,sex --mechanism aim \\
            --conditional --epsilon 1 --seed 0 --report out/research-report.json
"""


class RunHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``synth run --help``: the epilog as written, and ``--option``'s list of each
    mechanism's options filled in only when the help is printed (building it
    imports every mechanism class; parsing a command line imports none)."""

    def _get_help_string(self, action):
        text = super()._get_help_string(action)
        if action.dest == "option":
            from .mechanisms import MECHANISMS
            return f"{text} Options: {_option_list(MECHANISMS)}"
        return text


def build_parser() -> argparse.ArgumentParser:
    """The ``synth`` parser; it names the mechanisms from the registry without importing one."""
    from .mechanisms import MECHANISMS

    parser = argparse.ArgumentParser(
        prog="synth", description="Differentially private synthetic data with public data.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser(
        "run", help="synthesise a table and write the release files",
        description="Run one mechanism on a private table (and public information), printing "
                    "one line per round as it happens, then write the synthetic data and the "
                    "release report.",
        epilog=EPILOG, formatter_class=RunHelpFormatter)
    src = run.add_argument_group("data")
    src.add_argument("--data", metavar="PATH", help="private table (.csv, .csv.gz, .parquet)")
    src.add_argument("--sample", metavar="NAME",
                     help="use a bundled sample instead of --data (see 'synth samples'); its "
                          "public table and schema are used unless --public/--schema are given")
    src.add_argument("--public", metavar="PATH", help="public rows: a table over the same columns")
    src.add_argument("--public-flag", metavar="COLUMN",
                     help="public rows: rows of --data whose COLUMN is true/yes/1 (with "
                          "--backend duckdb/spark the engine reads the flag and loads only the "
                          "flagged rows, at most 5 million)")
    src.add_argument("--public-columns", metavar="COL,COL,...",
                     help="public columns (vertical split): comma-separated columns of --data "
                          "known for every record; the guarantee then protects the other "
                          "columns only (used by vjam-pgm, and by aim/vjam-pgm with "
                          "--conditional; other mechanisms refuse them). With --backend "
                          "duckdb/spark, vjam-pgm counts their marginals in the engine; "
                          "--conditional loads these columns only (one value per record and column)")
    src.add_argument("--conditional", action="store_true",
                     help="conditional generation (aim, vjam-pgm; needs --public-columns): "
                          "every record keeps its public values and only its private columns "
                          "are sampled from the model, conditioned on them")
    src.add_argument("--condition-max-mb", type=float, default=None, metavar="MB",
                     help="with --conditional: bound (MB of junction tree) on the exact public "
                          "marginals the model is fitted with (default: 10, capped at the max "
                          "model size); the report lists those left out")
    src.add_argument("--backend", default="memory", choices=["memory", "duckdb", "spark"],
                     help="where the private marginals are counted: memory (numpy, loads the "
                          "table; default), duckdb (counts a .parquet/.csv file out of core "
                          "without loading it) or spark (Apache Spark; master from "
                          "$SYNTH_SPARK_MASTER, default local). duckdb and spark need the "
                          "domain from --schema or from public rows (--public, --public-flag); "
                          "see docs/backends.md")
    src.add_argument("--no-public", action="store_true",
                     help="ignore the sample's public table")
    src.add_argument("--max-input-mb", type=float, metavar="MB",
                     help="refuse a table file larger than MB once decompressed (default: "
                          "$SYNTH_MAX_INPUT_MB, else 2048)")
    src.add_argument("--drop", "--drop-columns", dest="drop_columns", metavar="COL,COL,...",
                     help="leave these columns of --data out of the run (the report lists "
                          "them). Without it, a column of --data that is not in the domain "
                          "(--schema, or the public rows' columns) is an error")
    src.add_argument("--numeric", metavar="COL,COL,...",
                     help="without --schema: read these columns' domain as numeric (bounds "
                          "and bins), whatever their number of values")
    src.add_argument("--categorical", metavar="COL,COL,...",
                     help="without --schema: read these columns' domain as categories (every "
                          "value), e.g. numeric codes such as zip or FIPS codes")
    src.add_argument("--schema", metavar="PATH",
                     help="declared schema (JSON: {\"columns\": [...]} or a Private-PGM domain "
                          "{\"col\": size}); without it the domain is read off the public rows, "
                          "or off the private table (reported as NOT privacy-protected)")
    mech = run.add_argument_group("mechanism and budget")
    mech.add_argument("--mechanism", default="jam-pgm", choices=sorted(MECHANISMS),
                      help="mechanism (default: jam-pgm)")
    mech.add_argument("--epsilon", type=float, default=1.0, help="epsilon (default: 1.0)")
    mech.add_argument("--delta", type=float, default=1e-9,
                      help="delta, at most 1e-3 (default: 1e-9; keep it far below 1/n)")
    mech.add_argument("--neighbours", default="bounded", choices=["bounded", "unbounded"],
                      help="bounded: replace one record (n public; JAM-PGM); unbounded: "
                           "add/remove one record (AIM's choice) (default: bounded)")
    mech.add_argument("--workload", default="all-3way",
                      help="all-1way | all-2way | all-3way | target:COL[+COL]:K | explicit "
                           "'a,b;a,c*2' (';' between marginals, '*w' a weight) (default: all-3way)")
    mech.add_argument("--rounds", type=int, default=None,
                      help="JAM-PGM, vJAM-PGM: number of rounds T (default 30); AIM: budget scale T "
                           "(default 16 x number of columns); MWEM+PGM: rounds (default: number "
                           "of columns); PMW-Pub: rounds (default 500); GEM, GEM-Pub: rounds "
                           "(default 50)")
    mech.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                      help=OPTION_HELP)
    mech.add_argument("--max-model-size", type=float, default=80.0,
                      help="Private-PGM model size limit in MB (default: 80)")
    mech.add_argument("--seed", type=int, default=None,
                      help="seed for a reproducible research-mode run, for experiments only: "
                           "anyone who learns or guesses the seed can remove the noise, so such "
                           "a report is not fit for publication (the seed is never written to "
                           "the report; --diagnostics records it). Default: release mode")
    mech.add_argument("--mode", default=None, choices=["research", "release"],
                      help="research: continuous Gaussian and Gumbel noise from the seeded "
                           "generator (reproducible, fast); release: discrete Gaussian on "
                           "integer counts and exact selection noise from OpenDP's secure "
                           "source (cannot be seeded). Default: research with --seed, "
                           "release without")
    mech.add_argument("--fit-iters", type=int, default=None,
                      help="maximum mirror-descent iterations per round's fit (default: the "
                           "mechanism's: 1000 for AIM, as its authors, 100 for the others)")
    mech.add_argument("--final-fit-iters", type=int, default=1000,
                      help="maximum iterations of the final fit (default: 1000)")
    mech.add_argument("--fit-tol", type=float, default=1e-4,
                      help="a round's fit stops early once the loss improves by less than this "
                           "fraction over 50 iterations, twice in a row (default: 1e-4)")
    out = run.add_argument_group("output")
    out.add_argument("--out", metavar="PATH", default="out/synthetic.csv",
                     help="synthetic data, .csv or .parquet (default: out/synthetic.csv). Every "
                          "output path is checked before any budget is spent, and the files "
                          "are written all or nothing")
    out.add_argument("--report", metavar="PATH", default="out/report.json",
                     help="release report, JSON (default: out/report.json)")
    out.add_argument("--diagnostics", metavar="PATH",
                     help="also write CURATOR-ONLY diagnostics (true workload and per-marginal "
                          "errors, from the private data without noise, and the run's seed) to "
                          "PATH (.json); never release it")
    out.add_argument("--quiet", action="store_true", help="do not print the rounds")
    _add_budget_arguments(run)

    sub.add_parser("samples", help="list the bundled sample datasets")
    _add_schema_parser(sub)
    add_whatif_parser(sub)

    sweep = sub.add_parser(
        "sweep", help="run a sweep (datasets x mechanisms x epsilons x seeds), resumably",
        description="Run every run of a sweep spec (TOML or JSON) that is not yet in the result "
                    "store, writing each result atomically as it finishes (one Parquet file per "
                    "run, with the run's full configuration). Running the same command again "
                    "resumes: finished runs are skipped, failed ones tried again. Prints one JSON "
                    "line per finished run. The store holds CURATOR-ONLY figures (true errors "
                    "from the private data); every run spends its own privacy budget, and a "
                    "dataset whose table has a budget account in the workbench's budgets folder "
                    "($SYNTH_WORKBENCH_OUT/budgets, default out/budgets) is charged to it: the "
                    "sweep is refused before it starts if its runs would pass that total.",
        epilog=SWEEP_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sweep.add_argument("spec", metavar="SPEC", help="the sweep spec, .toml or .json")
    sweep.add_argument("--store", metavar="DIR",
                       help="result store folder (default: out/sweeps/<the spec's name>)")
    sweep.add_argument("--isolate", action="store_true",
                       help="run each job in its own Python process (bounded memory over long "
                            "sweeps; peak_rss_mb is then each run's own)")
    sweep.add_argument("--list", action="store_true",
                       help="list the sweep's runs and whether each is done; run nothing")
    sweep.add_argument("--summary", action="store_true",
                       help="print the mean error per dataset, mechanism and epsilon of the "
                            "store; run nothing")
    sweep.add_argument("--quiet", action="store_true", help="do not print the rounds")
    return parser


SWEEP_EPILOG = """a spec (TOML; paths are relative to the spec file; a dataset may name a
bundled sample instead of files):

  name = "titanic-small"
  mechanisms = ["jam-pgm", "aim",
                {label = "conditional-aim", mechanism = "aim", options = {conditional = true}}]
  epsilons = [0.1, 1, 10]
  seeds = [0, 1, 2]
  [settings]                 # shared run settings (as for synth run)
  delta = 1e-9
  workload = "all-3way"
  [[datasets]]
  name = "titanic"
  sample = "titanic"         # or: data = "priv.csv", public = "pub.csv", schema = "domain.json"
  public_columns = ["sex", "pclass"]

each finished run prints one JSON line (CURATOR-ONLY): workload_error is the true
workload error (mean L1 distance of the synthetic and private marginals, 0 to 2);
workload_error_private the same over the marginals with a column outside the
dataset's public_columns (null without public columns); rho and rho_spent its
ledger's total and spend. A run warning is printed once, as "synth: warning: ...".

examples:
  synth sweep sweep.toml                      # run (or resume) into out/sweeps/titanic-small
  synth sweep sweep.toml --list               # which runs are done
  synth sweep sweep.toml --summary            # mean error per dataset, mechanism, epsilon
"""


SCHEMA_EPILOG = """The schema is a DRAFT to review: every category list and bound read off the
private table is a function of the private records that no mechanism protects.
Replace the values of the columns listed in "review.read_off_private" with public
knowledge (a code list, a known range), then delete the "review" block; while the
block lists columns, 'synth run --schema' reports the domain as NOT privacy-protected.

examples:
  synth schema infer table.csv --out schema.json
  synth schema infer private.csv --public public.csv --out schema.json
  synth schema infer table.csv --categorical zip --numeric visits --drop notes --out schema.json
  synth run --data table.csv --schema schema.json --drop id --mechanism aim --epsilon 1
"""


def _add_schema_parser(sub) -> None:
    schema = sub.add_parser("schema", help="propose a schema to review (synth schema infer)")
    actions = schema.add_subparsers(dest="schema_command", required=True)
    infer = actions.add_parser(
        "infer", help="propose a schema for a table, to review before a run",
        description="Read a table (and public rows) and write a schema to review, in the format "
                    "'synth run --schema' reads: a decision per column (numeric, categorical, "
                    "left out) with the reason, likely identifiers proposed for leaving out, "
                    "whole-number codes (zip, FIPS) proposed categorical. With --public the "
                    "domain covers both tables' values and the review says which came from "
                    "the private table only.",
        epilog=SCHEMA_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    infer.add_argument("data", metavar="DATA", help="the private table (.csv, .csv.gz, .parquet)")
    infer.add_argument("--public", metavar="PATH",
                       help="public rows over the same columns: the domain covers their values too")
    infer.add_argument("--out", metavar="PATH",
                       help="write the schema (JSON) here (default: print it)")
    infer.add_argument("--numeric", metavar="COL,COL,...", help="make these columns numeric")
    infer.add_argument("--categorical", metavar="COL,COL,...",
                       help="make these columns categorical (every value a category)")
    infer.add_argument("--drop", metavar="COL,COL,...", help="leave these columns out")
    infer.add_argument("--bins", type=int, default=32,
                       help="bins of a numeric column; at most this many distinct numbers stay "
                            "categorical (default: 32)")
    infer.add_argument("--max-categories", type=int, default=100,
                       help="a text column with more distinct values is left out (default: 100)")
    infer.add_argument("--max-input-mb", type=float, metavar="MB",
                       help="refuse a table file larger than MB once decompressed")


def _add_budget_arguments(run) -> None:
    budget = run.add_argument_group(
        "total budget of the table (every run on it is charged; see docs/trust.md). Without "
        "--budget-file, a table whose total was set in the workbench is charged to that account "
        "(found by the table's content in $SYNTH_WORKBENCH_OUT/budgets, default out/budgets)")
    budget.add_argument("--budget-file", metavar="PATH",
                        help="the table's budget account (JSON): the run's rho is reserved in "
                             "it before the run starts, and the run refused when the table's "
                             "total would be passed; created if missing (needs "
                             "--budget-total-epsilon); an existing account must belong to this "
                             "table (same content, read by the same kind of --backend: memory "
                             "hashes the loaded table, duckdb and spark the file's bytes)")
    budget.add_argument("--budget-total-epsilon", type=float, metavar="E",
                        help="with a new --budget-file: the table's total epsilon (an existing "
                             "account's total is never changed: a different one is refused)")
    budget.add_argument("--budget-label", metavar="TEXT",
                        help="with a new --budget-file: the table's name in the account and in "
                             "release reports (default: the sample's name, or the data file's "
                             "name without its folders)")
    budget.add_argument("--budget-delta", type=float, metavar="D",
                        help="with a new --budget-file: the total's delta (default: --delta)")


def _budget_account(args, data, data_name):
    """The run's table's budget account (:func:`~synth_core.workbench.budget.run_account`:
    the --budget-file account, else the one the workbench keeps for this table, else
    None), with the data and its name as the run should take them: the memory
    backend's table is loaded here, once, to fingerprint it, and the run reuses the
    frame."""
    import pandas as pd

    from .budget import table_label
    from .tables import load_table
    from .workbench.budget import run_account
    if args.backend == "memory" and not isinstance(data, pd.DataFrame):
        data, data_name = load_table(data), data_name or Path(data).name
    account = run_account(data, budget_file=args.budget_file,
                          label=table_label(args.data, args.budget_label or args.sample),
                          epsilon=args.budget_total_epsilon, delta=args.budget_delta,
                          default_delta=args.delta)
    if account is not None and not args.budget_file:
        print(f"synth: note: this table has a budget account in the workbench's budgets "
              f"folder ('{account.path}', '{account.label}', {account.left_text(args.delta)} "
              "left): the run is charged to it", file=sys.stderr)
    if args.budget_label and account is not None and args.budget_label != account.label:
        print(f"synth: note: the budget account keeps its label '{account.label}' "
              "(--budget-label names a new account only)", file=sys.stderr)
    return account, data, data_name


#: mechanism options that have their own flag (given once, by the flag)
OPTION_FLAGS = {"rounds": "--rounds", "max_model_size": "--max-model-size",
                "public_columns": "--public-columns", "conditional": "--conditional",
                "condition_max_mb": "--condition-max-mb"}


#: ``--option``'s help, before the list of options (:class:`RunHelpFormatter` adds it)
OPTION_HELP = ("a mechanism option (repeatable), read as the type the mechanism declares, e.g. "
               "--option alpha=0.67 --option hidden=1024,1024.")


def _option_list(mechanisms) -> str:
    """Each mechanism's declared options without a flag of their own, as help text."""
    parts = []
    for name, cls in mechanisms.items():
        names = [o.name for o in cls.options if o.name not in OPTION_FLAGS]
        if names:
            parts.append(f"{name}: {', '.join(names)}")
    return "; ".join(parts)


def _parse_options(items, mechanism: str | None = None) -> dict:
    """``KEY=VALUE`` strings to mechanism options.

    With ``mechanism``: each key must be one of its declared options (ConfigError
    naming the valid ones) and its value is read as the declared type. Without:
    numbers where they parse as numbers, text otherwise.
    """
    cls = None
    if mechanism is not None:
        from .mechanisms import mechanism_class
        cls = mechanism_class(mechanism)
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise SynthError(f"Cannot read the option {item!r}.", hint="Use --option KEY=VALUE.")
        value = value.strip()
        if cls is not None:
            if key in OPTION_FLAGS:
                raise SynthError(f"{key} has its own flag.", hint=f"Use {OPTION_FLAGS[key]}.")
            out[key] = cls.option(key).parse(value)
            continue
        for cast in (int, float):
            try:
                out[key] = cast(value)
                break
            except ValueError:
                continue
        else:
            out[key] = value
    return out


def _parse_columns(value: str | None, flag: str = "--public-columns") -> tuple[str, ...]:
    """``--public-columns a,b,c`` (or another ``flag``) to a tuple of column names."""
    if value is None:
        return ()
    cols = tuple(c.strip() for c in value.split(","))
    if not any(cols) or not all(cols):
        raise SynthError(f"Cannot read {flag} {value!r}.",
                         hint=f"Give column names separated by commas, e.g. {flag} age,sex.")
    return cols


def _run_domain_choices(args, data, public, schema, data_name):
    """``--numeric``/``--categorical``: the domain read off the data with those
    kinds (:func:`synth_core.api.domain_choices`). Returns (data, data name, schema)."""
    from .api import domain_choices
    return domain_choices(
        data, public, schema=schema, public_flag=args.public_flag,
        drop_columns=_parse_columns(args.drop_columns, "--drop-columns"),
        numeric_columns=_parse_columns(args.numeric, "--numeric"),
        categorical_columns=_parse_columns(args.categorical, "--categorical"),
        backend=args.backend, data_name=data_name)


def _identifier_warnings(args, data, schema, data_name):
    """Warnings for columns of a domain read off data that look like identifiers or
    codes binned as numbers (memory backend; none with a declared schema)."""
    if args.backend != "memory" or args.schema or getattr(schema, "source", None) == "declared":
        return data, data_name
    from .schema_infer import suspicious_columns
    from .api import table_frame
    data, data_name = table_frame(data, data_name)
    skip = {args.public_flag, *_parse_columns(args.drop_columns, "--drop-columns")}
    for message in suspicious_columns(data[[c for c in data.columns if c not in skip]],
                                      schema, interface="cli"):
        print(f"synth: warning: {message}", file=sys.stderr)
    return data, data_name


def _check_inputs_exist(args) -> None:
    """DataError naming the option whose file does not exist (--data, --public,
    --schema), before anything is read. A glob (duckdb) or a URL (spark) is left to
    the backend that reads it."""
    from .errors import DataError
    for flag, path in (("--data", args.data), ("--public", args.public),
                       ("--schema", args.schema)):
        if not path or "://" in str(path) or any(ch in str(path) for ch in "*?["):
            continue
        if not Path(path).exists():
            raise DataError(f"{flag}: file '{path}' not found.",
                            hint=f"Check the path; a relative path is read from the current "
                                 f"folder ({Path.cwd()}).", path=str(path))


def _run(args) -> int:
    import warnings

    from .api import (PRIVATE_DOMAIN_WARNING, RunConfig, RunWarning, Synthesizer, check_outputs,
                      load_sample)
    from .tables import set_max_input_mb

    set_max_input_mb(args.max_input_mb)
    if bool(args.data) == bool(args.sample):
        raise SynthError("Give exactly one of --data PATH or --sample NAME.",
                         hint="'synth samples' lists the bundled samples.")
    # before any budget is spent: every output can be written, every input exists
    check_outputs(out=args.out, report=args.report, diagnostics=args.diagnostics)
    _check_inputs_exist(args)
    public, schema = args.public, args.schema
    data_name = public_name = None
    if args.sample:
        sample = load_sample(args.sample)
        data = sample.private
        data_name = f"{args.sample}:private"
        if public is None and not args.public_flag and not args.no_public and sample.public is not None:
            public, public_name = sample.public, sample.public_name
        schema = schema or sample.schema
        if args.backend != "memory":  # count the sample's file where it is
            from .api import SAMPLE_DIR, sample_preset
            data, data_name = SAMPLE_DIR / sample_preset(args.sample)["private"], None
    else:
        data = args.data
    if args.no_public:
        public = None
    options = _parse_options(args.option, args.mechanism)
    if args.conditional:
        options["conditional"] = True
    if args.condition_max_mb is not None:
        if not args.conditional:
            raise SynthError("--condition-max-mb only applies with --conditional.")
        options["condition_max_mb"] = args.condition_max_mb
    synth = Synthesizer.from_config(RunConfig(
        args.mechanism, epsilon=args.epsilon, delta=args.delta, workload=args.workload,
        neighbours=args.neighbours, rounds=args.rounds, seed=args.seed,
        max_model_size=args.max_model_size, fit_iters=args.fit_iters,
        final_fit_iters=args.final_fit_iters, fit_tol=args.fit_tol, options=options,
        mode=args.mode))
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    say(f"synth: {args.mechanism} at epsilon={args.epsilon:g}, delta={args.delta:g} "
        f"({args.neighbours} DP), workload {args.workload}, {synth.config.run_mode} mode")
    public_columns = _parse_columns(args.public_columns, "--public-columns")
    drop_columns = _parse_columns(args.drop_columns, "--drop-columns")
    data, data_name, schema = _run_domain_choices(args, data, public, schema, data_name)
    data, data_name = _identifier_warnings(args, data, schema, data_name)
    budget, data, data_name = _budget_account(args, data, data_name)
    with warnings.catch_warnings():   # printed once below, as "synth: warning: ..."
        warnings.simplefilter("ignore", RunWarning)
        for event in synth.run(data, public, schema=schema, public_flag=args.public_flag,
                               public_columns=public_columns, data_name=data_name,
                               public_name=public_name, backend=args.backend, budget=budget,
                               drop_columns=drop_columns):
            say(event.describe())
    result = synth.result
    if args.backend != "memory":
        stats = result.inputs.data.private.stats
        say(f"counted with {args.backend}: {stats.cliques} marginals in {stats.passes} passes, "
            f"{stats.bytes_scanned / 2**20:.1f} MiB scanned, {stats.seconds:.1f}s")
    with warnings.catch_warnings():   # the seeded-run warning is printed below, with advice
        warnings.simplefilter("ignore", RunWarning)
        result.write(args.out, args.report, args.diagnostics)
    ledger = result.ledger
    for message in result.warnings:
        if message != PRIVATE_DOMAIN_WARNING:   # said below, with what to do here
            print(f"synth: warning: {message}", file=sys.stderr)
    say(f"spent rho={ledger.spent:.6g} of {ledger.total:.6g} in {len(result.events)} rounds, "
        f"{result.seconds:.1f}s")
    say(f"wrote {args.out} ({len(result.synthetic)} rows) and {args.report}")
    if result.inputs.dropped:
        say(f"dropped on request (not in the synthetic data): {', '.join(result.inputs.dropped)}")
    if result.report["privacy"]["mode"] == "research" and result.config.seed is not None:
        print("synth: warning: seeded research run: anyone who learns or guesses the seed can "
              "remove the noise, so the report is not fit for publication (release mode: run "
              "without --seed).", file=sys.stderr)
    if budget is not None:
        say(f"table's total budget ({budget.label}): {budget.left_text(args.delta)} left")
    if result.inputs.schema.source == "private":
        say("WARNING: the domain was read off the private data and is NOT privacy-protected; "
            + ("the schema file's 'review' block still lists columns read off the private data: "
               "replace their values with public knowledge and delete the block."
               if args.schema else "declare a schema with --schema ('synth schema infer' "
                                   "proposes one to review)."))
    diag = result.curator_diagnostics()
    say(f"CURATOR-ONLY (not for release): workload error {diag.workload_error:.4f}")
    if args.diagnostics:
        say(f"wrote CURATOR-ONLY diagnostics (with the seed) to {args.diagnostics}")
    return 0


def _schema(args) -> int:
    """``synth schema infer``: the proposal written as a schema file, the review on stderr."""
    import json

    from .report import atomic_write_bytes
    from .schema_infer import propose_schema, read_leading_zeros
    from .tables import load_table, set_max_input_mb

    set_max_input_mb(args.max_input_mb)
    private = load_table(args.data)
    public = load_table(args.public) if args.public else None
    proposal = propose_schema(
        private, public, numeric=_parse_columns(args.numeric, "--numeric"),
        categorical=_parse_columns(args.categorical, "--categorical"),
        drop=_parse_columns(args.drop, "--drop"), bins=args.bins,
        max_categories=args.max_categories, leading_zeros=read_leading_zeros(args.data))
    text = json.dumps(proposal.to_json("cli"), indent=2) + "\n"
    if args.out:
        atomic_write_bytes(Path(args.out), text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    for line in _review_lines(proposal, args):
        print(line, file=sys.stderr)
    return 0


def _review_lines(proposal, args) -> list[str]:
    """What ``synth schema infer`` tells the user on stderr: the warning, each
    decision to check, the private-only values, and the run command."""
    lines = []
    if proposal.read_off_private:
        lines.append("synth: WARNING: values read off the private table are in this schema "
                     f"(columns {', '.join(proposal.read_off_private)}): they leak private "
                     "information until you replace them with public knowledge and delete the "
                     "'review' block.")
    for name, note in proposal.notes("cli").items():
        lines.append(f"synth: {name}: {note}")
    for name, values in proposal.private_values.items():
        shown = ", ".join(str(v) for v in values[:8]) + (" ..." if len(values) > 8 else "")
        lines.append(f"synth: {name}: from the private table only: {shown}")
    run = ["synth run --data", args.data]
    if args.public:
        run += ["--public", args.public]
    run += ["--schema", args.out or "SCHEMA.json"]
    if proposal.drops:
        run += ["--drop", ",".join(proposal.drops)]
    lines.append("synth: review it, then: " + " ".join(run) + " --mechanism ... --epsilon ...")
    return lines


def _samples() -> int:
    from .api import list_samples

    for p in list_samples():
        print(f"{p['name']:<16} {p.get('title', '')}")
    return 0


def _sweep(args) -> int:
    import json

    from .experiments import RUN_COLUMNS, ResultStore, Sweep, pending_jobs, run_sweep
    from .workbench.budget import SweepCharges

    sweep = Sweep.from_file(args.spec)
    store = ResultStore(args.store or Path("out") / "sweeps" / _slug(sweep.name))
    todo, done = pending_jobs(sweep, store)
    if args.summary:
        table = store.summary()
        print(table.to_string(index=False) if len(table) else f"no finished runs in {store.root}")
        return 0
    if args.list:
        pending = {j.run_id for j in todo}
        for job in sweep.jobs():
            print(f"{'todo' if job.run_id in pending else 'done'}  {job.run_id}  {job.label()}")
        return 0
    print(f"synth: sweep {sweep.name!r}: {sweep.size} runs, {done} already in {store.root}, "
          f"{len(todo)} to run", file=sys.stderr, flush=True)
    charges = SweepCharges.for_jobs(todo)   # refused here if a table's total would be passed
    for name, account in charges.accounts().items():
        print(f"synth: note: dataset '{name}' has a budget account in the workbench's budgets "
              f"folder ('{account.path}', '{account.label}', {account.left_text()} left): "
              "each of its runs is charged to it", file=sys.stderr, flush=True)

    def start(job, i, total):
        print(f"synth: run {i + 1} of {total}: {job.label()}", file=sys.stderr, flush=True)

    def event(job, ev):
        if not args.quiet:
            print(f"  [{job.label()}] {ev.describe()}", file=sys.stderr, flush=True)

    failed = 0
    with _run_warnings_once():
        for row in run_sweep(sweep, store, isolate=args.isolate, quiet=args.quiet,
                             on_start=start, on_event=event, charge=charges):
            failed += row.get("status") != "finished"
            print(json.dumps({k: row.get(k) for k in RUN_COLUMNS if k != "config"},
                             default=str), flush=True)
    print(f"synth: sweep done: results in {store.root} (CURATOR-ONLY)"
          + (f"; {failed} run(s) failed (run again to retry)" if failed else ""), file=sys.stderr)
    return 1 if failed else 0


@contextlib.contextmanager
def _run_warnings_once():
    """Within the block, each distinct RunWarning is printed once as one line,
    ``synth: warning: ...`` (not Python's form with the source line); other
    warnings as usual."""
    import warnings

    from .api import RunWarning
    seen: set[str] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("always", RunWarning)
        shown = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if not issubclass(category, RunWarning):
                return shown(message, category, filename, lineno, file, line)
            if str(message) not in seen:
                seen.add(str(message))
                print(f"synth: warning: {message}", file=sys.stderr, flush=True)

        warnings.showwarning = show
        yield


def _slug(name: str) -> str:
    import re
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.") or "sweep"


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "schema":
            return _schema(args)
        if args.command == "whatif":
            return run_whatif(args)
        return _samples()
    except SynthError as exc:
        print(f"synth: error: {exc.text('cli')}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. a disk that filled up while writing
        where = f" '{exc.filename}'" if exc.filename else ""
        print(f"synth: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("synth: interrupted; nothing was written.", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
