"""The conditional fits' oracle rule and the vertical speed benchmark's phase timers."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from synth_core import conditional
from synth_core.conditional import ConditionalSetup

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))


def _setup(kept: int) -> ConditionalSetup:
    setup = ConditionalSetup("AIM", ("a",), True, conditional.CONDITION_MAX_MB)
    setup.kept = [(f"c{i}",) for i in range(kept)]
    return setup


@pytest.mark.parametrize("iters", [1, 100, conditional.IMPLICIT_FROM_FIT_ITERS - 1])
def test_many_conditioning_marginals_and_short_fits_use_hugin(iters):
    many = _setup(conditional.HUGIN_ABOVE_CONDITIONING + 1)
    assert many.fit_oracle("auto", iters) == "hugin"


@pytest.mark.parametrize("iters", [conditional.IMPLICIT_FROM_FIT_ITERS, 1000])
def test_long_fits_keep_the_size_rule_however_many_marginals(iters):
    many = _setup(conditional.HUGIN_ABOVE_CONDITIONING + 1)
    assert many.fit_oracle("auto", iters) == "auto"
    assert many.fit_oracle("implicit", iters) == "implicit"


def test_few_conditioning_marginals_keep_the_size_rule():
    few = _setup(conditional.HUGIN_ABOVE_CONDITIONING)
    assert few.fit_oracle("auto", 100) == "auto"


def test_phase_timers_count_a_phase_once_when_nested():
    """A function of a phase calling another of the same phase is timed once;
    different phases nest (counting inside scoring counts in both)."""
    from vertical_speed import PhaseTimers

    class Work:
        def spin(self, k):
            total = 0
            for i in range(200_000 * k):
                total += i
            return total

        def outer(self):
            return self.spin(1) + self.inner()

        def inner(self):
            return self.spin(1)

    timers = PhaseTimers()
    timers.wrap(Work, "outer", "scoring")
    timers.wrap(Work, "inner", "scoring")
    timers.wrap(Work, "spin", "counting")
    Work().outer()
    scoring, counting = timers.seconds["scoring"], timers.seconds["counting"]
    assert scoring > 0 and counting > 0
    assert counting <= scoring * 1.5   # both spins are inside the one timed outer call
    Work().inner()
    assert timers.seconds["scoring"] > scoring


@pytest.mark.slow
def test_vjam_pgm_rounds_keep_the_oracle_rule_and_the_final_fit_restores_it(monkeypatch):
    """Plain vJAM-PGM's round fits keep the estimator's oracle rule (``auto``: the fit
    path's cost model decides, and the final fit can reuse a round's compiled program).
    A conditional run with many conditioning marginals fits its rounds with Hugin, and
    its final fit goes back to ``auto``."""
    from synth_core import Synthesizer, conditional
    from tiny_tables import FIT, PRIVATE, SCHEMA

    monkeypatch.setenv("SYNTH_FIT_PATH", "jax")
    plain = Synthesizer("vjam-pgm", epsilon=1.0, seed=0, rounds=3, workload="all-2way", **FIT)
    oracles = [plain.engine.estimator.oracle
               for _ in plain.run(PRIVATE, schema=SCHEMA, public_columns=["a", "b"])]
    assert oracles and set(oracles) == {"auto"}
    assert plain.engine.estimator.last_oracle == "hugin"   # a small model: the size rule's
    monkeypatch.setattr(conditional, "CONDITIONAL_MODEL", "joint")
    monkeypatch.setattr(conditional, "HUGIN_ABOVE_CONDITIONING", 0)
    many = Synthesizer("vjam-pgm", epsilon=1.0, seed=0, rounds=3, workload="all-2way",
                       conditional=True, **FIT)
    oracles = [many.engine.estimator.oracle
               for _ in many.run(PRIVATE, schema=SCHEMA, public_columns=["a", "b"])]
    assert oracles and set(oracles[:-1]) == {"hugin"}
    assert many.engine.estimator.oracle == "auto"
