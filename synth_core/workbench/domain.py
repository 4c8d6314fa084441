"""The session's domain: the schema, how it was made, and its editing
column by column (the spec an edit form describes, the table the Data page shows)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ..errors import DataError, SchemaError, SynthError
from ..schema import REVIEW_KEY, ColumnSpec, Schema


def schema_table(schema: Schema, problems: dict[str, str]) -> pd.DataFrame:
    """One row per schema column: kind, size, domain summary and the problem
    the last edit of it met (if any)."""
    rows = []
    for c in schema.columns:
        if c.kind == "categorical":
            cats = [str(v) for v in c.categories]
            domain = ", ".join(cats[:8]) + (f", … ({len(cats)} in all)" if len(cats) > 8 else "")
        else:
            domain = f"[{c.lower}, {c.upper}] in {c.bins} bins" + (
                ", values past the bounds clipped into the end bins" if c.clip else "")
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
               missing: bool = False, clip: bool = False) -> ColumnSpec:
    """The column spec an edit describes (SchemaError naming the column when it
    is incomplete). ``shown`` is the table (or its preview) the edit was made on;
    ``clip`` applies to numeric columns only."""
    if kind == "categorical":
        cats = _categories(schema.column(name), shown, name, categories)
        return ColumnSpec(name, "categorical", categories=tuple(cats), missing=bool(missing))
    if kind == "numeric":
        return ColumnSpec(name, "numeric", lower=_number(name, lower, "lower"),
                          upper=_number(name, upper, "upper"), bins=_number(name, bins, "bins"),
                          missing=bool(missing), clip=bool(clip))
    raise SchemaError(f"column '{name}': unknown kind {kind!r}.",
                      hint="Use categorical or numeric.", column=name)


@dataclass
class Domain:
    """The schema in use and how it was made. Every change of the schema bumps
    :attr:`version` (the pages reset their editors when it changes)."""

    schema: Schema | None = None
    version: int = 0
    #: read off data (not declared)
    inferred: bool = False
    #: changed in the editor since it was read or declared
    edited: bool = False
    #: the bundled sample's declared schema (the CLI finds it by the sample's name)
    sample_schema: Schema | None = None
    #: column -> the problem its last edit met
    errors: dict[str, str] = field(default_factory=dict)
    #: (column, why) left out of the schema
    left_out: list[tuple[str, str]] = field(default_factory=list)
    #: the columns whose domain was read off the private table and not declared
    #: since (the schema's source is "private" while there is one)
    private_columns: frozenset[str] = frozenset()

    def replace(self, schema: Schema | None, *, inferred: bool | None = None,
                private_columns: Sequence[str] | None = None) -> None:
        """Use ``schema`` (and say whether it was read off data, and which of its
        columns were read off the private table, when given; else a schema read
        off the private table has all of them, any other none, and an unchanged
        source keeps the list)."""
        previous = self.schema
        self.schema = schema
        self.version += 1
        if inferred is not None:
            self.inferred = inferred
        if schema is None or schema.source != "private":
            self.private_columns = frozenset()
        elif private_columns is not None:
            self.private_columns = frozenset(private_columns) & set(schema.names)
        elif previous is not None and previous.source == "private":
            self.private_columns = self.private_columns & set(schema.names)
        else:
            self.private_columns = frozenset(schema.names)

    def use(self, schema: Schema | None, *, inferred: bool,
            private_columns: Sequence[str] | None = None) -> None:
        """A schema read or declared whole: not edited, no problems."""
        if private_columns is None:
            private_columns = () if schema is None else schema.names
        self.replace(schema, inferred=inferred, private_columns=private_columns)
        self.edited = False
        self.errors = {}

    def reset(self, schema: Schema | None, *, inferred: bool, sample_schema: Schema | None = None,
              left_out: Sequence[tuple[str, str]] = ()) -> None:
        """The domain of a newly loaded table."""
        self.use(schema, inferred=inferred)
        self.sample_schema = sample_schema
        self.left_out = list(left_out)

    def use_reviewed(self, schema: Schema, left_out: Sequence[tuple[str, str]],
                     private_columns: Sequence[str] = ()) -> None:
        """A proposed schema the user reviewed, with the columns it leaves out (and
        why) and those it read off the private table."""
        self.use(schema, inferred=True, private_columns=private_columns)
        self.left_out = list(left_out)

    @property
    def is_sample_schema(self) -> bool:
        """The bundled sample's declared schema, unedited."""
        return self.sample_schema is not None and not self.edited \
            and self.schema is self.sample_schema

    def read_unedited_from(self, source: str) -> bool:
        """Read off the ``source`` data (``public``, ``private``) and not edited since."""
        return self.inferred and not self.edited and self.schema.source == source

    def _require(self) -> Schema:
        if self.schema is None:
            raise DataError("No table is loaded yet.",
                            hint="Load a bundled sample or upload a table on the Data page.")
        return self.schema

    def table(self) -> pd.DataFrame:
        """One row per schema column: kind, size and domain summary."""
        return schema_table(self._require(), self.errors)

    def json_bytes(self) -> bytes:
        """The schema as the JSON file a run (``--schema``) reads. Its review block
        lists the columns still read off the private table: not those the user has
        since declared public knowledge (the page no longer lists them either)."""
        schema = self._require()
        obj = schema.to_json()
        still = [n for n in schema.names if n in self.private_columns]
        if REVIEW_KEY in obj and still:   # (none recorded: every column stays listed)
            obj[REVIEW_KEY]["read_off_private"] = still
        return (json.dumps(obj, indent=2) + "\n").encode("utf-8")

    def edit_column(self, name: str, shown: pd.DataFrame | None,
                    check_fits: Callable[[Schema, str], None], *, kind: str,
                    categories=None, lower=None, upper=None, bins=None,
                    missing: bool = False, declared: bool = False, clip: bool = False) -> None:
        """Replace one column's domain. Raises SchemaError/DataError naming the
        column (and records the message in :attr:`errors`) if the new spec is
        invalid or ``check_fits(schema, name)`` finds data that do not fit it;
        the schema is then unchanged. ``declared``: the user states that the
        new domain is public knowledge, not read off the private table; the
        column then no longer counts as read off it, and once no column does,
        the schema's source is "declared"."""
        schema = self._require()
        try:
            spec = build_spec(schema, shown, name, kind, categories, lower, upper, bins, missing,
                              clip)
            left = self.private_columns - {name} if declared else self.private_columns
            source = "declared" if schema.source == "private" and not left else schema.source
            new = Schema(tuple(spec if c.name == name else c for c in schema.columns),
                         source=source)
            check_fits(new, name)
        except SynthError as exc:
            self.errors[name] = str(exc)
            raise
        self.errors.pop(name, None)
        self.replace(new, private_columns=left)
        self.edited = True

    def drop_column(self, name: str) -> None:
        """Leave a column out of the schema (and so out of the synthetic data)."""
        schema = self._require()
        schema.column(name)
        keep = [n for n in schema.names if n != name]
        if not keep:
            raise SchemaError("the schema needs at least one column.", column=name)
        left = self.private_columns - {name}
        projected = schema.project(keep)
        if schema.source == "private" and not left:   # the last column read off it goes
            projected = Schema(projected.columns, source="declared")
        self.replace(projected, private_columns=left)
        self.errors.pop(name, None)
        self.left_out = [x for x in self.left_out if x[0] != name] + [(name, "left out by you")]
