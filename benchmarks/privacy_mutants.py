"""Mutation check of the privacy tests: does the suite notice a broken privacy constant?

Each mutant is one exact text substitution in ``synth_core/`` that breaks the
privacy of a mechanism while leaving it runnable: a selection sensitivity
halved, a noise std halved without its charge, the bounded-DP factor
dropped, a charge skipped, a selection parameter doubled without its charge.
For each one the package is copied to a temporary directory, the
substitution applied (the old text must occur exactly once, so a refactor
that moves it fails here loudly instead of silently testing nothing), and
the chosen privacy tests run against the copy in a subprocess. A mutant is
*killed* when a test fails.

Output: one JSON line per mutant
``{"mutant", "file", "killed", "by", "seconds"}`` and a final line with the
score (killed / total), the load average and the CPU seconds of the test
runs.

    python benchmarks/privacy_mutants.py              # every mutant
    python benchmarks/privacy_mutants.py --list
    python benchmarks/privacy_mutants.py --only aim-selection-sensitivity-halved
    python benchmarks/privacy_mutants.py --tests tests/test_sensitivity.py tests/test_audit.py
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "synth_core"
DEFAULT_TESTS = ("tests/test_sensitivity.py", "tests/test_ledger_properties.py")
PRIVACY_TESTS = ("tests/test_sensitivity.py", "tests/test_privacy.py",
                 "tests/test_ledger_properties.py", "tests/test_audit.py")
TIMEOUT_SECONDS = 900
#: a charge skipped: the call still evaluates its arguments, records nothing
SKIP = "(lambda *args, **kwargs: None)("


@dataclass(frozen=True)
class Mutant:
    """``old`` replaced by ``new`` in ``file`` (relative to ``synth_core/``)."""

    name: str
    file: str
    old: str
    new: str


MUTANTS = (
    # -- selection sensitivities --------------------------------------------------------
    Mutant("aim-selection-sensitivity-halved", "mechanisms/aim.py",
           "sens = max(self.weights.values()) *", "sens = 0.5 * max(self.weights.values()) *"),
    Mutant("aim-selection-sensitivity-doubled", "mechanisms/aim.py",
           "sens = max(self.weights.values()) *", "sens = 2 * max(self.weights.values()) *"),
    Mutant("aim-bounded-factor-dropped", "mechanisms/aim.py",
           "(2.0 if state.neighbours.n_is_public else 1.0)", "1.0"),
    Mutant("mwem-selection-sensitivity-halved", "mechanisms/mwem_pgm.py",
           "sensitivity=state.neighbours.marginal_l1_sensitivity,",
           "sensitivity=0.5 * state.neighbours.marginal_l1_sensitivity,"),
    Mutant("jam-selection-sensitivity-halved", "mechanisms/jam_pgm.py",
           "JAM_SCORE_SENSITIVITY = 4.0", "JAM_SCORE_SENSITIVITY = 2.0"),
    Mutant("jam-selection-sensitivity-doubled", "mechanisms/jam_pgm.py",
           "JAM_SCORE_SENSITIVITY = 4.0", "JAM_SCORE_SENSITIVITY = 8.0"),
    Mutant("vjam-selection-sensitivity-halved", "mechanisms/vjam_pgm.py",
           "VJAM_SCORE_SENSITIVITY = 2.0", "VJAM_SCORE_SENSITIVITY = 1.0"),
    Mutant("engine-selection-sensitivity-halved", "engine.py",
           "self.noise.select(scores, plan.epsilon, plan.sensitivity)",
           "self.noise.select(scores, plan.epsilon, plan.sensitivity / 2)"),
    Mutant("pmw-selection-sensitivity-halved", "mechanisms/pmw_pub.py",
           "eps0, sens)", "eps0, sens / 2)"),
    Mutant("gem-selection-sensitivity-halved", "mechanisms/gem.py",
           "eps_select, sens)", "eps_select, sens / 2)"),
    # -- the bounded factor --------------------------------------------------------------
    Mutant("bounded-l2-factor-dropped", "privacy.py",
           "return math.sqrt(2.0) if self is Neighbours.BOUNDED else 1.0", "return 1.0"),
    Mutant("bounded-l1-factor-dropped", "privacy.py",
           "return 2.0 if self is Neighbours.BOUNDED else 1.0", "return 1.0"),
    # -- noise std halved, its charge unchanged ---------------------------------------------
    Mutant("engine-noise-std-halved", "engine.py",
           "self.noise.measure(exact, noise_std)", "self.noise.measure(exact, noise_std / 2)"),
    Mutant("aim-noise-std-halved", "mechanisms/aim.py",
           "return state.neighbours.marginal_l2_sensitivity * sigma",
           "return state.neighbours.marginal_l2_sensitivity * sigma / 2"),
    Mutant("mwem-noise-std-halved", "mechanisms/mwem_pgm.py",
           "std = privacy.gaussian_std(rho_measure,", "std = 0.5 * privacy.gaussian_std(rho_measure,"),
    Mutant("jam-noise-std-halved", "mechanisms/jam_pgm.py",
           "std = privacy.gaussian_std(rho_measure,", "std = 0.5 * privacy.gaussian_std(rho_measure,"),
    Mutant("query-noise-std-halved", "mechanisms/query_release.py",
           "noise.noisy_fraction(true[q], n, sigma)", "noise.noisy_fraction(true[q], n, sigma / 2)"),
    Mutant("initial-measurements-undercharged", "engine.py",
           "rho_each = privacy.gaussian_rho(noise_std,", "rho_each = privacy.gaussian_rho(2 * noise_std,"),
    # -- a charge skipped --------------------------------------------------------------------
    Mutant("engine-select-charge-skipped", "engine.py",
           "self.ledger.charge(rho_select,", SKIP + "rho_select,"),
    Mutant("engine-measure-charge-skipped", "engine.py",
           "self.ledger.charge(rho_measure,", SKIP + "rho_measure,"),
    Mutant("pmw-select-charge-skipped", "mechanisms/pmw_pub.py",
           "ledger.charge(rho_select,", SKIP + "rho_select,"),
    Mutant("gem-select-charge-skipped", "mechanisms/gem.py",
           "ledger.charge(rho_select,", SKIP + "rho_select,"),
    Mutant("query-measure-charge-skipped", "mechanisms/query_release.py",
           "ledger.charge(rho, round=round_,", SKIP + "rho, round=round_,"),
    # -- selection epsilon doubled, its charge unchanged -----------------------------------------
    Mutant("engine-selection-epsilon-doubled", "engine.py",
           "self.noise.select(scores, plan.epsilon,", "self.noise.select(scores, 2 * plan.epsilon,"),
    Mutant("pmw-selection-epsilon-doubled", "mechanisms/pmw_pub.py",
           "eps0, sens)", "2 * eps0, sens)"),
    Mutant("gem-selection-epsilon-doubled", "mechanisms/gem.py",
           "eps_select, sens)", "2 * eps_select, sens)"),
)

BY_NAME = {m.name: m for m in MUTANTS}
#: the unmutated package (a control: the tests must pass on it)
ORIGINAL = Mutant("original", "", "", "")


def mutated_text(mutant: Mutant, package: Path) -> str:
    """The mutant's file under ``package`` with its substitution made; the old
    text must occur exactly once (else the mutant list is out of date: an error)."""
    text = (package / mutant.file).read_text()
    count = text.count(mutant.old)
    if count != 1:
        raise SystemExit(f"mutant {mutant.name}: {mutant.old!r} occurs {count} times in "
                         f"{PACKAGE}/{mutant.file} (expected once); update the mutant list")
    return text.replace(mutant.old, mutant.new)


def apply(mutant: Mutant, package: Path) -> None:
    """Substitute the mutant's text in the copy at ``package``."""
    if mutant is not ORIGINAL:
        (package / mutant.file).write_text(mutated_text(mutant, package))


def check_mutants(mutants=MUTANTS) -> None:
    """Every mutant's old text occurs exactly once in the checkout (before any run)."""
    for mutant in mutants:
        mutated_text(mutant, ROOT / PACKAGE)


def imported_from(workdir: Path, python: str = sys.executable) -> str:
    """Where a subprocess set up as :func:`run_mutant` sets it up imports ``synth_core`` from."""
    env = dict(os.environ, PYTHONPATH=str(workdir), PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([python, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
                          cwd=workdir, env=env, capture_output=True, text=True, check=True)
    return proc.stdout.strip()


def copy_tree(workdir: Path, tests: tuple[str, ...]) -> None:
    """The package, the tests' folder (its conftest) and the pytest settings, under ``workdir``."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / PACKAGE, workdir / PACKAGE, ignore=ignore)
    for folder in sorted({Path(t.split("::")[0]).parent for t in tests}):
        shutil.copytree(ROOT / folder, workdir / folder, ignore=ignore, dirs_exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", workdir / "pyproject.toml")


FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)")


def failed_tests(output: str) -> list[str]:
    """Test ids from pytest's short summary (``-rfE``)."""
    return [m.group(1) for line in output.splitlines() if (m := FAILED.match(line))]


def run_mutant(mutant: Mutant, tests=DEFAULT_TESTS, *, first_failure: bool = True,
               timeout: float = TIMEOUT_SECONDS, python: str = sys.executable,
               check_import: bool = False) -> dict:
    """Apply ``mutant`` to a copy of the package and run ``tests`` against it.

    ``tests`` are pytest arguments relative to the repository root (files,
    node ids). The subprocess runs in the copy with ``PYTHONPATH`` pointing at
    it, so the copy's ``synth_core`` is the one imported (``check_import``
    verifies it first). Returns the mutant's JSON record.
    """
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="privacy-mutant-") as tmp:
        workdir = Path(tmp)
        copy_tree(workdir, tuple(tests))
        apply(mutant, workdir / PACKAGE)
        if check_import:
            where = imported_from(workdir, python)
            if not where.startswith(str(workdir)):
                raise SystemExit(f"the test subprocess imports {PACKAGE} from {where}, not the copy")
        command = [python, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", "--run-slow",
                   *(["-x"] if first_failure else []), *tests]
        env = dict(os.environ, PYTHONPATH=str(workdir), PYTHONDONTWRITEBYTECODE="1")
        try:
            proc = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                  timeout=timeout)
            output, code, timed_out = proc.stdout + proc.stderr, proc.returncode, False
        except subprocess.TimeoutExpired as exc:
            output = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) \
                else (exc.stdout or "")
            code, timed_out = None, True
    by = failed_tests(output)
    record = {"mutant": mutant.name, "file": f"{PACKAGE}/{mutant.file}" if mutant.file else "",
              "killed": bool(by) and code not in (0, None), "by": by,
              "seconds": round(time.perf_counter() - started, 1)}
    if timed_out:
        record["timeout"] = True
    elif code not in (0, 1):   # 1: tests failed; anything else (collection, usage) is shown
        record["exit_code"] = code
        record["tail"] = output.strip().splitlines()[-5:]
    return record


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this mutant (repeatable)")
    parser.add_argument("--tests", nargs="+", default=list(DEFAULT_TESTS),
                        help=f"pytest files or node ids (default: {' '.join(DEFAULT_TESTS)}; "
                             f"all privacy tests: {' '.join(PRIVACY_TESTS)})")
    parser.add_argument("--all-failures", action="store_true",
                        help="run every test against each mutant (default: stop at the first failure)")
    parser.add_argument("--control", action="store_true",
                        help="also run the unmutated copy (it must pass)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_SECONDS)
    args = parser.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:40s} {PACKAGE}/{m.file}: {m.old!r} -> {m.new!r}")
        return 0
    unknown = [n for n in args.only or () if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown mutant(s) {', '.join(unknown)}; see --list")
    chosen = [BY_NAME[n] for n in args.only] if args.only else list(MUTANTS)
    check_mutants(chosen)
    started, cpu0 = time.perf_counter(), children_cpu_seconds()
    if args.control:
        control = run_mutant(ORIGINAL, args.tests, first_failure=not args.all_failures,
                             timeout=args.timeout, check_import=True)
        print(json.dumps(control), flush=True)
    killed = 0
    for i, mutant in enumerate(chosen):
        record = run_mutant(mutant, args.tests, first_failure=not args.all_failures,
                            timeout=args.timeout, check_import=i == 0)
        killed += record["killed"]
        print(json.dumps(record), flush=True)
    summary = {"score": f"{killed}/{len(chosen)}", "killed": killed, "total": len(chosen),
               "tests": args.tests, "seconds": round(time.perf_counter() - started, 1),
               "cpu_seconds": round(children_cpu_seconds() - cpu0, 1),
               "load_average": [round(x, 2) for x in os.getloadavg()]}
    if args.control:
        summary["control_passed"] = not control["by"] and "exit_code" not in control \
            and "timeout" not in control
    print(json.dumps(summary), flush=True)
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
