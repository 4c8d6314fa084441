"""The ``synth`` command line's parser (:func:`build_parser`) and the readers of its
option values. The commands themselves are in :mod:`synth_core.cli` and
:mod:`synth_core.cli_whatif`; the workbench reads a reproduce command back with this
parser (:mod:`synth_core.workbench.command`), so it imports nothing of either."""

from __future__ import annotations

import argparse
from pathlib import Path

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
                          "columns only (required by vjam-pgm, vpmw and vgem-pub; optional for "
                          "jam-pgm, and for aim with --conditional; other mechanisms refuse "
                          "them). With --backend "
                          "duckdb/spark, vjam-pgm counts their marginals in the engine; "
                          "--conditional loads these columns only (one value per record and column)")
    src.add_argument("--conditional", action="store_true",
                     help="conditional generation (aim, vjam-pgm; with --public-columns): "
                          "every record keeps its public values and only its private columns "
                          "are sampled from the model, conditioned on them (without public "
                          "columns the run is the plain mechanism, with a warning)")
    src.add_argument("--condition-max-mb", type=float, default=None, metavar="MB",
                     help="with --conditional: bound (MB of junction tree) on the exact public "
                          "marginals the model is fitted with (default: 5, capped at the max "
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
    mech.add_argument("--epsilon", type=float, default=1.0, help="epsilon, from 0.0001 to 1e6 (default: 1.0)")
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
                           "of columns); PMW-Pub, vPMW: rounds (default 500); GEM, GEM-Pub, "
                           "vGEM-Pub: rounds (default 50); MST, PrivBayes+PGM, Independent and "
                           "public-only set their own (a warning says it was not used)")
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
                           "fraction over 50 iterations, twice in a row after the first 50, so "
                           "only fits of more than 100 iterations (AIM's 1,000, --fit-iters) "
                           "can stop early (default: 1e-4)")
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
    _add_whatif_parser(sub)

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
  synth schema infer table.csv --public-flag is_public --out schema.json
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
    rows = infer.add_mutually_exclusive_group()
    rows.add_argument("--public", metavar="PATH",
                      help="public rows over the same columns: the domain covers their values too")
    rows.add_argument("--public-flag", metavar="COLUMN",
                      help="the rows of DATA this column marks true are public (as 'synth run "
                           "--public-flag'): the domain covers both parts' values and the "
                           "flag column is left out of the schema")
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
                             "hashes the loaded table, duckdb and spark the file's bytes); "
                             "registered in the budgets folder by a pointer file, so that the "
                             "workbench and later runs find it and another account of the "
                             "table is refused")
    budget.add_argument("--budget-total-epsilon", type=float, metavar="E",
                        help="with a new --budget-file: the table's total epsilon (an existing "
                             "account's total is never changed: a different one is refused)")
    budget.add_argument("--budget-label", metavar="TEXT",
                        help="with a new --budget-file: the table's name in the account and in "
                             "release reports (default: the sample's name, or the data file's "
                             "name without its folders)")
    budget.add_argument("--budget-delta", type=float, metavar="D",
                        help="with a new --budget-file: the total's delta (default: --delta)")


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


def missing_file(flag: str, path) -> SynthError:
    """The error for an input file that is not there (a relative path says where it
    was looked for), or that is a folder."""
    from .errors import DataError
    if Path(path).is_dir():
        return DataError(f"{flag}: '{path}' is a folder, not a file.", hint="Give one file.",
                         path=str(path))
    where = "" if Path(path).is_absolute() else \
        f" (a relative path is read from the current folder, {Path.cwd()})"
    return DataError(f"{flag}: file '{path}' not found.", hint=f"Check the path{where}.",
                     path=str(path))


def input_files(*, data=None, public=None, schema=None, budget_file=None) -> dict[str, object]:
    """The files a command reads, by what they are: no output may replace one."""
    named = {"the private table (--data)": data, "the public table (--public)": public,
             "the schema (--schema)": schema, "the budget account (--budget-file)": budget_file}
    return {what: path for what, path in named.items() if path}


def _parse_columns(value: str | None, flag: str = "--public-columns") -> tuple[str, ...]:
    """``--public-columns a,b,c`` (or another ``flag``) to a tuple of column names."""
    if value is None:
        return ()
    cols = tuple(c.strip() for c in value.split(","))
    if not any(cols) or not all(cols):
        raise SynthError(f"Cannot read {flag} {value!r}.",
                         hint=f"Give column names separated by commas, e.g. {flag} age,sex.")
    return cols



WHATIF_DESCRIPTION = (
    "Predict the workload error of mechanisms at each epsilon before spending any budget: "
    "each mechanism runs on a stand-in table built from public information only (the public "
    "rows, the public columns' values and, under bounded DP, the private row count), with its "
    "own simulated ledger. Nothing is charged to the table's budget. Prints each stand-in "
    "run as it starts, then one line per predicted point, what each curve is based on, and "
    "its caveats. A prediction is an estimate, not a bound (docs/whatif.md).")

WHATIF_EPILOG = """examples:
  synth whatif --sample titanic --mechanism jam-pgm aim --epsilons 0.1 1 10
  synth whatif --data private.csv --public public.csv --schema schema.json \\
               --mechanism jam-pgm mwem-pgm --epsilons 0.3 1 3 --seeds 2 --out whatif.json
"""


def _add_whatif_parser(sub) -> None:
    """The ``whatif`` sub-command of ``synth`` (importing nothing heavy: ``synth --help``
    stays fast; the stand-in names are checked when the what-if starts)."""
    p = sub.add_parser("whatif", help="predict error against epsilon at zero privacy cost",
                       description=WHATIF_DESCRIPTION, epilog=WHATIF_EPILOG,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    src = p.add_argument_group("table and public information (as for synth run)")
    src.add_argument("--data", metavar="PATH", help="private table (.csv, .csv.gz, .parquet): "
                     "only its row count (bounded DP) and its public columns' values are used")
    src.add_argument("--sample", metavar="NAME", help="a bundled sample instead of --data")
    src.add_argument("--public", metavar="PATH", help="public rows: a table over the same columns")
    src.add_argument("--public-flag", metavar="COLUMN",
                     help="public rows: rows of --data whose COLUMN is true/yes/1")
    src.add_argument("--no-public", action="store_true", help="ignore the sample's public table")
    src.add_argument("--public-columns", metavar="COL,COL,...",
                     help="public columns: known for every record")
    src.add_argument("--schema", metavar="PATH", help="declared schema (JSON)")
    what = p.add_argument_group("what to predict")
    what.add_argument("--mechanism", nargs="+", required=True, metavar="M",
                      help="mechanisms (registry names; 'aim+conditional' and "
                           "'vjam-pgm+conditional' for conditional generation)")
    what.add_argument("--epsilons", nargs="+", type=float, required=True, metavar="E",
                      help="the epsilon grid")
    what.add_argument("--target-error", type=float, metavar="Y",
                      help="also say, per mechanism, the smallest epsilon of the grid "
                           "predicted to reach a workload error of Y (0 to 2)")
    what.add_argument("--seeds", type=int, default=1, help="stand-in runs per point (1 to 10; "
                      "default 1: no spread shown)")
    what.add_argument("--standin", metavar="NAME",
                      help="the stand-in for the private table: public-rows, public-columns-fit "
                           "or independent (default: the best the public information allows, "
                           "in that order)")
    what.add_argument("--assumed-n", type=int, metavar="N",
                      help="unbounded DP without public rows: the row count to assume, "
                           "10 to 10,000,000 (default 1,000)")
    settings = p.add_argument_group("run settings (as for synth run; a mechanism's other "
                                    "options take their defaults)")
    settings.add_argument("--workload", help="default: all-3way")
    settings.add_argument("--delta", type=float, help="default: 1e-9")
    settings.add_argument("--neighbours", choices=["bounded", "unbounded"],
                          help="default: bounded")
    settings.add_argument("--rounds", type=int, help="the mechanism's rounds (default: its own)")
    settings.add_argument("--fit-iters", type=int, help="per-round fit iterations")
    settings.add_argument("--final-fit-iters", type=int, help="final fit iterations")
    p.add_argument("--out", metavar="PATH",
                   help="also write the curves as JSON: {\"what_if\": [one curve per "
                        "mechanism, each with its basis and predicted points, as a release "
                        "report's what_if block lists them], \"rho_spent_on_private\": 0}; "
                        "no private value")
    p.add_argument("--quiet", action="store_true", help="do not print progress")


