"""Shared fixtures: small data sets made here, so the suite never needs ../shared.

Also the ``slow`` marker's switch: a test marked ``@pytest.mark.slow`` (a
browser, a subprocess end to end, a long or exhaustive run) is skipped unless
pytest is given ``--run-slow``; plain ``pytest`` runs the fast set.
"""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np
import pandas as pd
import pytest

from synth_core.engine import PRIVATE
from synth_core.schema import Schema


def make_correlated(n: int, seed: int, female_share: float = 0.3) -> pd.DataFrame:
    """A small table with strong dependencies between its columns."""
    rng = np.random.default_rng(seed)
    sex = np.where(rng.random(n) < female_share, "F", "M")
    age = rng.integers(18, 80, n)
    edu = np.where(age + rng.normal(0, 15, n) > 45, "high", np.where(rng.random(n) < 0.5, "mid", "low"))
    p_income = 0.15 + 0.4 * (edu == "high") + 0.2 * (sex == "M")
    income = np.where(rng.random(n) < p_income, ">50K", "<=50K")
    hours = np.clip(rng.normal(40 + 8 * (income == ">50K"), 8, n).round(), 1, 99).astype(int)
    return pd.DataFrame({"sex": sex, "age": age, "edu": edu, "income": income, "hours": hours})


SMALL_SCHEMA = {
    "columns": [
        {"name": "sex", "kind": "categorical", "categories": ["F", "M"]},
        {"name": "age", "kind": "numeric", "lower": 18, "upper": 80, "bins": 4},
        {"name": "edu", "kind": "categorical", "categories": ["low", "mid", "high"]},
        {"name": "income", "kind": "categorical", "categories": ["<=50K", ">50K"]},
        {"name": "hours", "kind": "numeric", "lower": 1, "upper": 99, "bins": 4},
    ]
}


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run the tests marked slow (the whole suite)")


def pytest_collection_modifyitems(config, items):
    """Skip the slow tests unless ``--run-slow`` (a skip, not a deselection: a
    run of slow tests only reports them skipped and never collects nothing)."""
    if config.getoption("--run-slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --run-slow")
    for item in items:
        if item.get_closest_marker("slow") is not None:
            item.add_marker(skip)


def wait_until(predicate: Callable[[], object], timeout: float, what: str,
               interval: float = 0.05) -> None:
    """Poll ``predicate`` until it returns a true value; fail the test naming
    ``what`` if ``timeout`` seconds pass first. For waits on something that is
    not a worker (a worker has ``wait(timeout)``)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


@pytest.fixture(scope="session")
def small_schema() -> Schema:
    return Schema.from_json(SMALL_SCHEMA)


@pytest.fixture(scope="session")
def small_private() -> pd.DataFrame:
    return make_correlated(3000, seed=1, female_share=0.3)


@pytest.fixture(scope="session")
def small_public() -> pd.DataFrame:
    return make_correlated(400, seed=2, female_share=0.5)


def all_keys(obj):
    """Every key of a nested dict/list structure (e.g. a parsed report), depth first."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from all_keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from all_keys(v)


def replay_jam_schedule(ledger, rounds, rho, used, T, alpha):
    """Replay JAM-PGM's budget schedule with frugal budgeting over rounds 1..T.

    ``used`` is what the initialisation (round 0) spent. Round t gets
    ``rho_t = (rho - used) / (T - t)``: a share ``1 - alpha`` selects, and a
    private pick measures with ``alpha`` at sigma ``1 / sqrt(alpha rho_t)``
    (bounded DP); a free pick (exact public columns, public-row proxy)
    spends only the selection. Checks every charge and the total, and returns
    ``[(event, rho_t, used after the round)]`` and the unspent measure share
    of a free last round, for the caller's own per-round checks.
    """
    assert [e.round for e in rounds] == list(range(1, T + 1))
    replay = []
    rho_t = 0.0
    for t, event in enumerate(rounds):
        rho_t = (rho - used) / (T - t)
        charges = [c for c in ledger.charges if c.round == event.round]
        select = [c.rho for c in charges if c.step == "select"]
        measure = [c.rho for c in charges if c.step == "measure"]
        assert select == [pytest.approx((1 - alpha) * rho_t, rel=1e-9)]
        if event.source == PRIVATE:
            assert measure == [pytest.approx(alpha * rho_t, rel=1e-9)]
            assert event.sigma == pytest.approx(1 / math.sqrt(alpha * rho_t), rel=1e-9)
        else:
            assert measure == [] and event.sigma is None
        used += math.fsum(select + measure)
        replay.append((event, rho_t, used))
    assert ledger.spent == pytest.approx(used, rel=1e-12)
    unspent = alpha * rho_t if rounds[-1].source != PRIVATE else 0.0
    assert ledger.spent + unspent == pytest.approx(rho, rel=1e-12)
    assert ledger.spent <= rho * (1 + 1e-12)
    return replay, unspent


@pytest.fixture(autouse=True)
def fresh_app_registry():
    """Each test's app sessions start from an empty registry of Workbenches.

    The app keeps at most ``SYNTH_WORKBENCH_SESSIONS`` (32) sessions with work
    per process and turns new visitors away when all of them hold work, as it
    should; AppTests of one pytest process would otherwise fill it and later
    ones would meet the "maximum of sessions" page instead of the app.
    """
    yield
    import sys
    sessions = sys.modules.get("app_pages.sessions")
    if sessions is not None:
        sessions.registry.clear()


@pytest.fixture(autouse=True)
def no_pretrain_cache(monkeypatch):
    """GEM-Pub trains its generator in every test unless the test turns the cache on
    (``benchmarks/reproduce.py``'s main sets SYNTH_PRETRAIN_CACHE for its runs, and a
    developer's shell may have it)."""
    from synth_core.mechanisms.pretrain_cache import PRETRAIN_CACHE_ENV

    monkeypatch.delenv(PRETRAIN_CACHE_ENV, raising=False)


@pytest.fixture(autouse=True)
def own_workbench_out(tmp_path_factory, monkeypatch):
    """Each test's workbench folder (budget accounts, Compare results) is its own:
    ``synth run``, ``synth sweep`` and repeat notebooks charge the account the
    workbench keeps for their table, so an account left in ``./out/budgets`` by an
    app session (or by another test) must not cap or refuse a later test's runs.
    A test that sets SYNTH_WORKBENCH_OUT itself overrides this."""
    monkeypatch.setenv("SYNTH_WORKBENCH_OUT", str(tmp_path_factory.mktemp("workbench_out")))
