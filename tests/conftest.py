"""Shared fixtures: small data sets made here, so the suite never needs ../shared."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

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
