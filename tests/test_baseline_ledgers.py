"""Ledger properties of the AIM paper's baselines (MST, PrivBayes+PGM, Independent)
over random small configurations, with the checks of tests/test_ledger_properties.py:
the ledger never exceeds rho and ends at exactly rho, every charge is what its
released std or selection parameter costs, and the events agree with the ledger."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_ledger_properties import SETTINGS, check_all, check_exact, configs, run


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(cfg=configs(unbounded_ok=True))
def test_mst_ledger(cfg):
    result, events = run("mst", cfg)
    check_all(result, events, cfg)
    check_exact(result)
    d = len(cfg["sizes"])
    rho = result.ledger.total
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
    result, events = run("privbayes-pgm", cfg, degree=degree)
    check_all(result, events, cfg)
    check_exact(result)
    d, rho = len(cfg["sizes"]), result.ledger.total
    k = min(degree, d - 1)
    selects = [c.rho for c in result.ledger.charges if c.step == "select"]
    assert selects == pytest.approx([0.3 * rho / (d - 1)] * (d - 1), rel=1e-9)
    measures = [c.rho for c in result.ledger.charges if c.step == "measure"]
    assert measures == pytest.approx([0.7 * rho / (d - k)] * (d - k), rel=1e-9)


@pytest.mark.slow
@settings(max_examples=12, **SETTINGS)
@given(cfg=configs(unbounded_ok=True))
def test_independent_ledger(cfg):
    result, events = run("independent", cfg)
    check_all(result, events, cfg)
    check_exact(result)
    d, rho = len(cfg["sizes"]), result.ledger.total
    assert [c.rho for c in result.ledger.charges] == pytest.approx([rho / d] * d, rel=1e-12)
