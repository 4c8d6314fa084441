"""``synth whatif``: the workbench's what-if preview on the command line.

Predicted workload error against epsilon for one or more mechanisms, from
public information only (:mod:`synth_core.whatif`), at zero privacy cost: the
mechanisms run on stand-in tables built from the public rows, the declared
public columns' values and, under bounded DP, the private row count. The
command drives a :class:`~synth_core.workbench.Workbench` (one code path with
the app's Workload page): it loads the table and its public information as
the Data and Public information pages do, then runs ``start_what_if`` and
prints the curves, what each is based on, and the notes the page shows.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _workbench(args):
    """A Workbench with the table, its public information and the settings of ``args``."""
    from .errors import SynthError
    from .workbench import Workbench

    if bool(args.data) == bool(args.sample):
        raise SynthError("Give exactly one of --data PATH or --sample NAME.",
                         hint="'synth samples' lists the bundled samples.")
    wb = Workbench()
    if args.sample:
        wb.load_sample(args.sample)
    else:
        wb.load_upload(Path(args.data).name, _read(args.data, "--data"))
    if args.schema:
        wb.load_schema_file(Path(args.schema).name, _read(args.schema, "--schema"))
    if args.no_public:
        wb.clear_public_rows()
    if args.public:
        wb.set_public_table(Path(args.public).name, _read(args.public, "--public"))
    if args.public_flag:
        wb.set_public_flag(args.public_flag)
    if args.public_columns:
        wb.set_public_columns([c.strip() for c in args.public_columns.split(",") if c.strip()])
    changes = {k: getattr(args, k) for k in ("workload", "delta", "neighbours", "rounds",
                                             "fit_iters", "final_fit_iters")
               if getattr(args, k) is not None}
    if changes:
        wb.update_settings(**changes)
    return wb


def _read(path: str, flag: str) -> bytes:
    from .cli_parser import missing_file
    if not Path(path).is_file():
        raise missing_file(flag, path)
    return Path(path).read_bytes()


def _print_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as the command line says it (not Python's file and line)."""
    print(f"synth: warning: {message}", file=sys.stderr)


def run(args) -> int:
    """Predict, print and (with --out) write the curves; 0 when every curve is complete."""
    import warnings
    shown = warnings.showwarning
    warnings.showwarning = _print_warning       # this process is the command line's own
    try:
        return _run(args)
    finally:
        warnings.showwarning = shown


def _run(args) -> int:
    from .report import atomic_write_bytes, check_release
    from .errors import SynthError
    from .side_by_side import WORKLOAD_ERROR_SCALE
    from .whatif import ACCURACY_NOTE, NOTHING_SPENT, ranking_note, target_note
    from .workbench.guide import key_title

    if args.target_error is not None and not 0 < args.target_error < 2:
        raise SynthError(f"--target-error is a workload error, between 0 and 2 (2 is the "
                         f"worst possible), not {args.target_error:g}.")
    if args.out:        # before the stand-in runs: a file that takes the result, no input
        from .cli_parser import input_files
        from .report import JSON_SUFFIXES, check_distinct, check_output_path
        check_output_path(args.out, JSON_SUFFIXES, "what-if result")
        check_distinct([args.out], input_files(data=args.data, public=args.public,
                                               schema=args.schema))
    wb = _workbench(args)
    worker = wb.start_what_if(args.mechanism, args.epsilons, args.seeds, args.standin,
                              args.assumed_n)
    try:
        printed = 0     # every job that has started is named once, however short it was
        while worker is not None:
            finished = worker.wait(0.2)
            done, total = worker.progress
            started = done if finished else min(done + 1, total)
            for i in range(printed, started if not args.quiet else 0):
                job = worker.jobs[i]
                print(f"synth: stand-in run {i + 1} of {total}: "
                      f"{key_title(job.get('mechanism', '?'))} at epsilon "
                      f"{job.get('epsilon', 0):g}, seed {job.get('seed', 0)}",
                      file=sys.stderr, flush=True)
            printed = max(printed, started)
            if finished:
                break
    except KeyboardInterrupt:
        wb.whatif.stop()
        raise
    curves = wb.whatif.curves()
    print("mechanism                epsilon  predicted   min       max       seeds  kind")
    for c in curves:
        for p in c.points:
            print(f"{key_title(c.mechanism):<24} {p.epsilon:<8g} {p.mean:<9.4f} {p.low:<9.4f} "
                  f"{p.high:<9.4f} {len(p.errors):<6} {p.kind}")
    for basis in dict.fromkeys(c.basis for c in curves):
        names = ", ".join(key_title(c.mechanism) for c in curves if c.basis == basis)
        print(f"\nWhat the prediction for {names} is based on: {basis}")
    for c in curves:
        if c.flat_note:
            print(f"\n{key_title(c.mechanism)}: a flat prediction. {c.flat_note}")
        for failure in c.failures:
            print(f"\n{key_title(c.mechanism)}: {failure}")
    if args.target_error is not None:
        print()
        for c in curves:
            if c.points:
                print(target_note(c, args.target_error, key_title(c.mechanism)))
    ranking = ranking_note(curves)
    if ranking:
        print(f"\nRanking mechanisms on this stand-in: {ranking}")
    print(f"\n{WORKLOAD_ERROR_SCALE} A prediction is an estimate, not a bound. {ACCURACY_NOTE} "
          f"{NOTHING_SPENT}")
    if args.out:
        block = {"what_if": [dict(c.to_release(), title=key_title(c.mechanism)) for c in curves],
                 "rho_spent_on_private": 0.0}
        check_release(block)
        atomic_write_bytes(Path(args.out), (json.dumps(block, indent=2) + "\n").encode("utf-8"))
        print(f"synth: wrote {args.out}", file=sys.stderr)
    return 0 if curves and all(c.complete for c in curves) else 1
