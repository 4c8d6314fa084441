"""Editing a domain column by column: the spec an edit form describes, and
the table the Data page shows."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ..errors import SchemaError
from ..schema import ColumnSpec, Schema


def schema_table(schema: Schema, problems: dict[str, str]) -> pd.DataFrame:
    """One row per schema column: kind, size, domain summary and the problem
    the last edit of it met (if any)."""
    rows = []
    for c in schema.columns:
        if c.kind == "categorical":
            cats = [str(v) for v in c.categories]
            domain = ", ".join(cats[:8]) + (f", … ({len(cats)} in all)" if len(cats) > 8 else "")
        else:
            domain = f"[{c.lower}, {c.upper}] in {c.bins} bins"
        rows.append({"column": c.name, "kind": c.kind, "domain": domain,
                     "missing code": c.missing, "cells": c.size,
                     "problem": problems.get(c.name, "")})
    return pd.DataFrame(rows)


def _as_numbers(cats: list) -> list:
    """``cats`` as numbers when every one reads as a number, else unchanged."""
    try:
        return [int(c) if float(c).is_integer() else float(c) for c in cats]
    except (TypeError, ValueError):
        return cats


def _categories(old: ColumnSpec, shown: pd.DataFrame | None, name: str,
                categories: str | Sequence | None) -> list:
    """The categories an edit lists; numbers stay numbers when the column's
    values are numbers (in the old domain, or else in the table)."""
    if isinstance(categories, str):
        cats = [c.strip() for c in categories.split(",") if c.strip() != ""]
    else:
        cats = list(categories or [])
    if old.kind == "categorical" and old.categories and all(
            isinstance(v, (int, float, np.number)) for v in old.categories):
        return _as_numbers(cats)
    if shown is not None and name in shown and pd.api.types.is_numeric_dtype(shown[name].dtype):
        return _as_numbers(cats)
    return cats


def _number(name: str, value, what: str):
    if value is None or (isinstance(value, str) and not value.strip()):
        raise SchemaError(f"column '{name}': a numeric column needs '{what}'.",
                          hint="Enter a number.", column=name)
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise SchemaError(f"column '{name}': '{what}' must be a number, not {value!r}.",
                          column=name) from None
    return int(f) if f.is_integer() else f


def build_spec(schema: Schema, shown: pd.DataFrame | None, name: str, kind: str,
               categories=None, lower=None, upper=None, bins=None,
               missing: bool = False) -> ColumnSpec:
    """The column spec an edit describes (SchemaError naming the column when it
    is incomplete). ``shown`` is the table (or its preview) the edit was made on."""
    if kind == "categorical":
        cats = _categories(schema.column(name), shown, name, categories)
        return ColumnSpec(name, "categorical", categories=tuple(cats), missing=bool(missing))
    if kind == "numeric":
        return ColumnSpec(name, "numeric", lower=_number(name, lower, "lower"),
                          upper=_number(name, upper, "upper"), bins=_number(name, bins, "bins"),
                          missing=bool(missing))
    raise SchemaError(f"column '{name}': unknown kind {kind!r}.",
                      hint="Use categorical or numeric.", column=name)
