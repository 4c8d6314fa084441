"""Ledger properties of the AIM paper's baselines (MST, PrivBayes+PGM, Independent)
over random small configurations, with the checks of tests/test_ledger_properties.py:
the ledger never exceeds rho and ends at exactly rho, every charge is what its
released std or selection parameter costs, and the events agree with the ledger."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_ledger_properties import SETTINGS, check_all, check_exact, configs, run


def checked_run(mechanism: str, cfg, **options):
    """A run whose ledger passes every common check and ends at exactly rho:
    (result, events, number of columns, rho)."""
    result, events = run(mechanism, cfg, **options)
    check_all(result, events, cfg)
    check_exact(result)
    return result, events, len(cfg["sizes"]), result.ledger.total


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(cfg=configs(unbounded_ok=True))
def test_mst_ledger(cfg):
    result, events, d, rho = checked_run("mst", cfg)
    # a third on the 1-ways, the tree's selections and its measurements
    for step, round0 in (("measure", True), ("select", False), ("measure", False)):
        spent = sum(c.rho for c in result.ledger.charges
                    if c.step == step and (c.round == 0) == round0)
        assert spent == pytest.approx(rho / 3, rel=1e-9)
    assert [e.round for e in events] == list(range(d))


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(cfg=configs(unbounded_ok=False), degree=st.integers(1, 3))
def test_privbayes_pgm_ledger(cfg, degree):
    result, _, d, rho = checked_run("privbayes-pgm", cfg, degree=degree)
    k = min(degree, d - 1)
    selects = [c.rho for c in result.ledger.charges if c.step == "select"]
    assert selects == pytest.approx([0.3 * rho / (d - 1)] * (d - 1), rel=1e-9)
    measures = [c.rho for c in result.ledger.charges if c.step == "measure"]
    assert measures == pytest.approx([0.7 * rho / (d - k)] * (d - k), rel=1e-9)


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(cfg=configs(unbounded_ok=True))
def test_independent_ledger(cfg):
    result, _, d, rho = checked_run("independent", cfg)
    assert [c.rho for c in result.ledger.charges] == pytest.approx([rho / d] * d, rel=1e-12)
