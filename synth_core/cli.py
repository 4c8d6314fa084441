"""Command line: ``synth run`` (one release), ``synth sweep`` (many runs, resumable),
``synth samples`` (bundled data), ``synth schema infer`` (a schema proposed for review),
``synth whatif`` (:mod:`synth_core.cli_whatif`). The parser is
:mod:`synth_core.cli_parser` (the workbench reads its reproduce commands back with it)."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path

from .cli_parser import (_parse_columns, _parse_options, build_parser, input_files,
                         missing_file)
from .cli_whatif import run as run_whatif
from .errors import SynthError


def _loaded(args, data, data_name):
    """The data and its name as the run takes them: the memory backend's table is
    loaded here, once (its budget account is found by its records), and the run
    reuses the frame; an engine backend's file is left where it is."""
    import pandas as pd

    from .tables import load_table
    if args.backend == "memory" and not isinstance(data, pd.DataFrame):
        data, data_name = load_table(data), data_name or Path(data).name
    return data, data_name


def _budget_account(args, data):
    """The run's table's budget account (:func:`~synth_core.workbench.budget.run_account`:
    the --budget-file account, else the one the workbench keeps for this table, else
    None)."""
    from .budget import table_label
    from .workbench.budget import ENGINE_NO_ACCOUNT, account_place, run_account
    account = run_account(data, budget_file=args.budget_file,
                          label=table_label(args.data, args.budget_label or args.sample),
                          epsilon=args.budget_total_epsilon, delta=args.budget_delta,
                          default_delta=args.delta)
    if account is not None and not args.budget_file:
        print(f"synth: note: this table has a budget account, '{account.label}' "
              f"{account_place(account)} ({account.left_text(args.delta)} left): the run is "
              "charged to it", file=sys.stderr)
    if account is None and args.backend != "memory":
        print("synth: note: " + ENGINE_NO_ACCOUNT.format(backend=args.backend), file=sys.stderr)
    if args.budget_label and account is not None and args.budget_label != account.label:
        print(f"synth: note: the budget account keeps its label '{account.label}' "
              "(--budget-label names a new account only)", file=sys.stderr)
    return account


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
    for flag, path in (("--data", args.data), ("--public", args.public),
                       ("--schema", args.schema)):
        if not path or "://" in str(path) or any(ch in str(path) for ch in "*?["):
            continue
        if not Path(path).exists():
            raise missing_file(flag, path)


def _run(args) -> int:
    import warnings

    from .api import (PRIVATE_DOMAIN_WARNING, RunConfig, RunWarning, Synthesizer, check_outputs,
                      load_sample)
    from .explain import unspent_note
    from .tables import set_max_input_mb

    set_max_input_mb(args.max_input_mb)
    if bool(args.data) == bool(args.sample):
        raise SynthError("Give exactly one of --data PATH or --sample NAME.",
                         hint="'synth samples' lists the bundled samples.")
    # before any budget is spent: every output can be written, every input exists
    check_outputs(out=args.out, report=args.report, diagnostics=args.diagnostics,
                  inputs=input_files(data=args.data, public=args.public, schema=args.schema,
                                     budget_file=args.budget_file))
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
    data, data_name = _loaded(args, data, data_name)
    run_inputs = dict(schema=schema, public_flag=args.public_flag, public_columns=public_columns,
                      data_name=data_name, public_name=public_name, backend=args.backend,
                      drop_columns=drop_columns)
    with warnings.catch_warnings():   # printed once below, as "synth: warning: ..."
        warnings.simplefilter("ignore", RunWarning)
        if args.budget_file and not Path(args.budget_file).exists():
            # a new account's total is fixed once it is made: make it for sound inputs only
            synth.prepare(data, public, **run_inputs)
        budget = _budget_account(args, data)
        for event in synth.run(data, public, budget=budget, **run_inputs):
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
    unspent = unspent_note(result.events, ledger.total, ledger.spent, listed=0)
    if unspent:
        say(unspent + " (docs/explanations.md, 'Unspent budget')")
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

    from .report import JSON_SUFFIXES, atomic_write_bytes, check_distinct, check_output_path
    from .schema_infer import propose_schema, read_leading_zeros
    from .tables import load_table, set_max_input_mb

    set_max_input_mb(args.max_input_mb)
    if args.out:
        check_output_path(args.out, JSON_SUFFIXES, "schema")
        check_distinct([args.out], input_files(data=args.data, public=args.public))
    private = load_table(args.data)
    public = load_table(args.public) if args.public else None
    if args.public_flag:
        from .tables import PublicRows
        private, public = PublicRows(flag_column=args.public_flag).split(private)
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
    run = ["--data", args.data]
    if args.public:
        run += ["--public", args.public]
    if args.public_flag:
        run += ["--public-flag", args.public_flag]
    run += ["--schema", args.out or "SCHEMA.json"]
    if proposal.drops:
        run += ["--drop", ",".join(proposal.drops)]
    # quoted for a shell: names with spaces ("patient id") paste as one argument
    lines.append("synth: review it, then: synth run " + " ".join(shlex.quote(a) for a in run)
                 + " --mechanism ... --epsilon ...")
    return lines


def _samples() -> int:
    from .api import list_samples

    for p in list_samples():
        print(f"{p['name']:<16} {p.get('title', '')}")
    return 0


def _sweep(args) -> int:
    import json

    from .experiments import RUN_COLUMNS, ResultStore, Sweep, pending_jobs, run_sweep
    from .workbench.budget import SweepCharges, account_place

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
        print(f"synth: note: dataset '{name}' has a budget account, '{account.label}' "
              f"{account_place(account)} ({account.left_text()} left): "
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
