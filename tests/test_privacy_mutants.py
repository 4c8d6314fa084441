"""The privacy mutation benchmark in brief (benchmarks/privacy_mutants.py runs
every mutant): one mutant of each kind (a selection sensitivity halved, a
noise std halved, a charge skipped, a selection epsilon doubled without its
charge), each killed by the privacy test aimed at it, and the unmutated copy
passing the same tests, so the harness does not "kill" everything."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_benchmark():
    spec = importlib.util.spec_from_file_location("privacy_mutants",
                                                  ROOT / "benchmarks" / "privacy_mutants.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module   # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


mutants = load_benchmark()

SENSITIVITY = "tests/test_sensitivity.py"
#: (mutant, the test that must kill it)
CASES = [
    ("aim-selection-sensitivity-halved",
     f"{SENSITIVITY}::test_pgm_sensitivities_are_reached[aim-bounded]"),
    ("engine-noise-std-halved", f"{SENSITIVITY}::test_every_draw_is_charged[mwem-pgm-unbounded]"),
    ("pmw-select-charge-skipped", f"{SENSITIVITY}::test_every_draw_is_charged[pmw-pub-bounded]"),
    ("engine-selection-epsilon-doubled",
     f"{SENSITIVITY}::test_every_draw_is_charged[mwem-pgm-unbounded]"),
]


def test_every_mutant_applies_exactly_once():
    mutants.check_mutants()
    assert len({m.name for m in mutants.MUTANTS}) == len(mutants.MUTANTS)


@pytest.mark.slow
def test_the_unmutated_copy_passes():
    """The control: with every mutant killed below, it also shows that the tests
    import the copy (a test importing the checkout would kill no mutant)."""
    record = mutants.run_mutant(mutants.ORIGINAL, sorted({test for _, test in CASES}))
    assert record["by"] == [] and not record["killed"], record
    assert "exit_code" not in record and "timeout" not in record, record


@pytest.mark.slow
@pytest.mark.parametrize("name, test", CASES, ids=[name for name, _ in CASES])
def test_mutant_is_killed(name, test):
    record = mutants.run_mutant(mutants.BY_NAME[name], [test])
    assert record["killed"] and record["by"] == [test], record
