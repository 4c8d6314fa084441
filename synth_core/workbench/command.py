"""The ``synth run`` command that repeats a workbench run, built from data.

Each part of the session contributes its arguments and notes as data (a
:class:`CommandParts`): the table source its ``--data``/``--sample``
arguments, the public-information choice its public rows and columns, the
session its schema file and budget account. :func:`reproduce_command` joins
them with the run's settings, once.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from ..budget import run_rho
from ..errors import ConfigError
from .catalog import RunSettings

#: mechanism options that ``synth run`` takes as flags of their own
OPTION_FLAGS = {"conditional": "--conditional", "condition_max_mb": "--condition-max-mb"}


def comment(text: str) -> str:
    """``text`` as one shell comment line. Characters that are not printable
    (newline, carriage return, other control characters, Unicode line
    separators) are shown as escapes (``\\n``), so the comment ends only at
    its own end of line and nothing after it can run."""
    return "# " + "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def arg(flag: str, value) -> list[str]:
    """A flag and its value as command arguments: ``[flag, value]``, or
    ``[flag=value]`` when the value starts with ``-`` (the CLI's parser would
    take it for an option)."""
    value = str(value)
    return [f"{flag}={value}"] if value.startswith("-") else [flag, value]


def number(x: float) -> str:
    """``x`` in short form (``%g``) when that reads back as the same float, else
    in full (``repr``), so the command repeats the exact budget."""
    short = f"{x:g}"
    return short if float(short) == float(x) else repr(float(x))


def option_value(value) -> str | None:
    """A mechanism option value as the CLI's ``--option KEY=VALUE`` reads it
    (numbers, text, or a comma-separated list of numbers); None if it has no
    such form (a flag, a nested value)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        return number(value)
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool)
                                                for v in value):
        return ",".join(map(str, value))
    return None


def option_args(options: dict) -> tuple[list[str], list[str]]:
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
            args += arg(OPTION_FLAGS[key], number(value))
        elif (text := option_value(value)) is not None:
            args += arg("--option", f"{key}={text}")
        else:
            notes.append(f"mechanism option {key}={value!r} has no command-line form")
    return args, notes


def column_list_notes(columns) -> list[str]:
    """Notes on column names a comma-separated ``--public-columns`` list cannot
    carry (the CLI splits at commas and strips spaces)."""
    bad = [c for c in columns if "," in c or c != c.strip()]
    if not bad:
        return []
    return [f"the CLI cannot name the column(s) {', '.join(map(repr, bad))} in --public-columns "
            "(a comma, or spaces at either end): rename them in the table"]


@dataclass(frozen=True)
class CommandParts:
    """The session's contributions to a reproduce command (arguments and the
    comment notes that go with them)."""

    #: the private table (``--sample NAME``, ``--data PATH [--backend duckdb]``)
    data: tuple[str, ...]
    #: public rows and public columns
    public: tuple[str, ...] = ()
    public_notes: tuple[str, ...] = ()
    #: ``--schema schema.json`` when the CLI would not find the same domain itself
    schema: tuple[str, ...] = ()
    schema_notes: tuple[str, ...] = ()
    #: the table has a budget account in the workbench's folder (the command finds it)
    has_budget_account: bool = False


BUDGET_NOTE = ("this table has a budget account in the workbench's budgets folder "
               "($SYNTH_WORKBENCH_OUT/budgets, default out/budgets): run this where the "
               "workbench runs (or with its SYNTH_WORKBENCH_OUT) and synth finds the account "
               "by the table's content, charges the run to it and refuses it past the "
               "table's total; elsewhere add --budget-file with that account's path (another "
               "account for the same table, new or a copy, is refused while that one is in "
               "reach)")
REPEAT_NOTE = ("running this reads the private table again and spends its budget again "
               "(every run on a table counts, and a release chosen among repeats is covered "
               "only by all of them together: docs/trust.md)")
SEED_NOTE = ("this run was seeded: an exact repeat needs its seed, which only the "
             "curator sees (the Run page, the CLI's diagnostics file), never this script")


def reproduce_command(s: RunSettings, parts: CommandParts) -> str:
    """A ``synth run`` command (with comments) that repeats a run with settings ``s``.

    Inert whatever the data holds: every argument is shell-quoted
    (``shlex.quote``) and every comment shows its text through
    :func:`comment`, so a file, column or category name can neither end a
    comment line nor a quoted argument. The command carries no seed (a
    seed regenerates a research-mode run's noise); a seeded run gets a
    comment saying that the exact repeat needs it.
    """
    option_list, option_notes = option_args(s.options)
    lines = [
        ["synth", "run", *parts.data, *parts.public, *parts.schema],
        ["--mechanism", s.mechanism, "--epsilon", number(s.epsilon),
         "--delta", number(s.delta), "--neighbours", s.neighbours, *option_list],
        [*arg("--workload", s.workload),
         *(["--rounds", str(s.rounds)] if s.rounds is not None else []),
         *(["--mode", s.run_mode] if s.mode is not None or s.seed is not None else [])],
        ["--max-model-size", number(s.max_model_size),
         *(["--fit-iters", str(s.fit_iters)] if s.fit_iters is not None else []),
         "--final-fit-iters", str(s.final_fit_iters), "--fit-tol", number(s.fit_tol)],
        ["--out", "synthetic.csv", "--report", "report.json"],
    ]
    repeat = [REPEAT_NOTE] if run_rho(s.mechanism, s.epsilon, s.delta) > 0 else []
    notes = [*repeat, *parts.public_notes, *parts.schema_notes, *option_notes,
             *([SEED_NOTE] if s.seed is not None else []),
             *([BUDGET_NOTE] if parts.has_budget_account else [])]
    return "\n".join([comment(n) for n in notes]
                     + [" \\\n  ".join(shlex.join(line) for line in lines if line)])


def command_argv(command: str) -> tuple[list[str], list[str]]:
    """(the arguments, the comment notes) of a command made by
    :func:`reproduce_command`: comment lines give the notes (without ``# ``),
    the rest is split as the shell would (a backslash-newline outside quotes
    continues the line; ``shlex.quote`` leaves no other backslash outside quotes)."""
    lines = command.split("\n")
    notes = []
    while lines and lines[0].startswith("# "):
        notes.append(lines.pop(0)[2:])
    body, quote, out, i = "\n".join(lines), None, [], 0
    while i < len(body):
        ch = body[i]
        if quote is None and ch == "\\" and body[i + 1:i + 2] == "\n":
            out.append(" ")
            i += 2
            continue
        if ch in "'\"" and quote in (None, ch):
            quote = None if quote == ch else ch
        out.append(ch)
        i += 1
    return shlex.split("".join(out)), notes


def command_recipe(command: str, plan=(), seeded: bool = False):
    """The :class:`~synth_core.notebook.RunRecipe` of a reproduce command: the
    CLI's own parser reads its arguments, so the notebook repeats exactly what
    the shell script would (same inputs, settings and notes; no seed)."""
    from ..cli_parser import _parse_columns, _parse_options, build_parser
    from ..notebook import RunRecipe

    argv, notes = command_argv(command)
    try:
        args = build_parser().parse_args(argv[1:])   # argv[0] is "synth"
    except SystemExit:
        raise ConfigError("The reproduce command cannot be read back as a `synth run` command.",
                          hint="Download reproduce.sh instead.") from None
    options = _parse_options(args.option, args.mechanism)
    if args.conditional:
        options["conditional"] = True
    if args.condition_max_mb is not None:
        options["condition_max_mb"] = args.condition_max_mb
    config = {"mechanism": args.mechanism, "epsilon": args.epsilon, "delta": args.delta,
              "neighbours": args.neighbours, "workload": args.workload, "rounds": args.rounds,
              "max_model_size": args.max_model_size, "fit_iters": args.fit_iters,
              "final_fit_iters": args.final_fit_iters, "fit_tol": args.fit_tol,
              "options": options, "mode": args.mode}
    return RunRecipe(config, sample=args.sample, data=args.data, backend=args.backend,
                     public=args.public, public_flag=args.public_flag, no_public=args.no_public,
                     public_columns=_parse_columns(args.public_columns, "--public-columns"),
                     schema=args.schema, budget_file=args.budget_file, plan=tuple(plan),
                     drop_columns=_parse_columns(args.drop_columns, "--drop"),
                     notes=tuple(notes), seeded=seeded)


def reproduce_notebook(command: str, report: dict | None = None) -> bytes:
    """The ``.ipynb`` file that repeats the run of a reproduce command (the
    Release page offers it beside ``reproduce.sh``), with the measurement plan
    of the run's release ``report``. Every value is a Python literal
    (:func:`synth_core.notebook.literal`); like the script it holds no seed."""
    from ..notebook import notebook_bytes, plan_of

    plan = plan_of(report) if report is not None else ()
    seeded = bool(report and report["privacy"].get("seeded"))
    return notebook_bytes(command_recipe(command, plan, seeded))
