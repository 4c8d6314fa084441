"""SQL expressions that encode raw column values into a schema's integer codes.

One generator serves DuckDB and Spark SQL (both accept the expressions
``CASE``, ``TRY_CAST``, ``trim``, ``isnan``, ``floor``, ``coalesce``). The
rules follow :class:`synth_core.schema.ColumnSpec` and are derived from the
same objects (category lists, ``bin_edges()``, ``missing_code``), so that the
codes agree with ``Schema.encode`` on the same values:

* categorical, text categories: a value is matched by its text (numbers by
  their shortest text, ``1.0`` as ``"1"``, then as ``"1.0"``), booleans as
  ``True``/``False`` (or the one category that reads true/false);
* categorical, number categories: a value is matched by its number (text is
  parsed as a number first);
* numeric: the code is the number of interior bin edges ``<= x`` (equal to
  ``searchsorted(edges, x, "right") - 1`` clipped to the last bin, the
  schema's rule), for finite ``x`` inside ``[lower, upper]`` (with ``clip``,
  a finite ``x`` past a bound is first clipped to it);
* missing (NULL, NaN, blank text): the column's missing code.

An expression evaluates to :data:`MISSING_NOT_ALLOWED` for a missing value
in a column without a missing code and to :data:`NOT_IN_SCHEMA` for any other
value that does not fit, so one counting pass can validate the table.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from ..schema import ColumnSpec, _category_index

MISSING_NOT_ALLOWED = -1
NOT_IN_SCHEMA = -2

Kind = Literal["string", "integer", "float", "boolean"]


@dataclass(frozen=True)
class Dialect:
    """How one SQL engine spells identifiers and text types."""

    name: str
    quote: str
    text_type: str

    def ident(self, name: str) -> str:
        q = self.quote
        return q + name.replace(q, q + q) + q


DUCKDB = Dialect("duckdb", '"', "VARCHAR")
SPARK = Dialect("spark", "`", "STRING")


def text_literal(value: str) -> str:
    """A text constant valid in both engines (quotes and backslashes spelled
    with ``chr``, as the engines escape them differently)."""
    text = str(value)
    if "'" not in text and "\\" not in text:
        return f"'{text}'"
    parts = re.split(r"(['\\\\])", text)
    pieces = [f"chr({ord(p)})" if p in ("'", "\\") else f"'{p}'" for p in parts if p]
    return "(" + " || ".join(pieces) + ")"


def double_literal(value: float) -> str:
    """An exact DOUBLE constant (decimal literals would be DECIMAL in both engines)."""
    return f"CAST('{float(value)!r}' AS DOUBLE)"


def code_type(size: int) -> str:
    """The narrowest signed integer type that holds codes and the two markers."""
    if size <= 127:
        return "TINYINT"
    if size <= 32767:
        return "SMALLINT"
    return "INTEGER"


def code_expression(col: ColumnSpec, ref: str, kind: Kind, dialect: Dialect) -> str:
    """SQL for the code of column ``col``, whose raw values are ``ref`` of ``kind``."""
    missing = _missing_test(ref, kind)
    if col.kind == "numeric":
        present = _numeric_code(col, _as_double(ref, kind))
    elif isinstance(col.categories[0], str):
        present = _text_category_code(col, ref, kind, dialect)
    else:
        present = _number_category_code(col, ref, kind)
    when_missing = col.missing_code if col.missing else MISSING_NOT_ALLOWED
    return f"(CASE WHEN {missing} THEN {when_missing} ELSE {present} END)"


def _missing_test(ref: str, kind: Kind) -> str:
    if kind == "string":
        return f"({ref} IS NULL OR trim({ref}) = '')"
    if kind == "float":
        return f"({ref} IS NULL OR isnan({ref}))"
    return f"({ref} IS NULL)"


def _as_double(ref: str, kind: Kind) -> str:
    if kind == "string":
        return f"TRY_CAST(trim({ref}) AS DOUBLE)"
    return f"CAST({ref} AS DOUBLE)"


def _numeric_code(col: ColumnSpec, x: str) -> str:
    edges = col.bin_edges()
    lower, upper = double_literal(edges[0]), double_literal(edges[-1])
    interior = [f"CAST(({x} >= {double_literal(e)}) AS INTEGER)" for e in edges[1:-1]]
    count = " + ".join(interior) if interior else "0"
    if col.clip:
        # NULL, NaN and infinities do not fit; a finite value past a bound is clipped to it
        infinite = "CAST('Infinity' AS DOUBLE)"
        return (f"(CASE WHEN {x} IS NULL OR isnan({x}) OR {x} = {infinite} "
                f"OR {x} = -{infinite} THEN {NOT_IN_SCHEMA} WHEN {x} < {lower} THEN 0 "
                f"WHEN {x} > {upper} THEN {col.bins - 1} ELSE {count} END)")
    # NULL (text that is not a number), NaN/inf and values outside the bounds do not fit
    return (f"(CASE WHEN {x} IS NULL OR isnan({x}) OR {x} < {lower} OR {x} > {upper} "
            f"THEN {NOT_IN_SCHEMA} ELSE {count} END)")


def _text_keys_sql(ref: str, kind: Kind, dialect: Dialect) -> list[str]:
    """SQL for the texts a value may be written as, best first (schema._text_keys)."""
    t = dialect.text_type
    if kind == "string":
        return [f"trim({ref})"]
    if kind == "integer":
        return [f"CAST({ref} AS {t})"]
    # a whole float reads "1" first, then "1.0"; others their shortest text
    whole = f"(abs({ref}) < 1e15 AND {ref} = floor({ref}))"
    first = (f"(CASE WHEN {whole} THEN CAST(CAST({ref} AS BIGINT) AS {t}) "
             f"ELSE CAST({ref} AS {t}) END)")
    second = (f"(CASE WHEN {whole} THEN CAST(CAST({ref} AS BIGINT) AS {t}) || '.0' "
              f"ELSE CAST({ref} AS {t}) END)")
    return [first, second]


def _text_lookup(key: str, index: dict) -> str:
    branches = " ".join(f"WHEN {text_literal(c)} THEN {i}" for c, i in index.items())
    return f"(CASE {key} {branches} END)"


def _text_category_code(col: ColumnSpec, ref: str, kind: Kind, dialect: Dialect) -> str:
    index = _category_index(col.categories)
    if kind == "boolean":
        def code_of(value: bool) -> int:
            if str(value) in index:
                return index[str(value)]
            matches = [i for c, i in index.items() if c.strip().lower() == str(value).lower()]
            return matches[0] if len(matches) == 1 else NOT_IN_SCHEMA
        return f"(CASE WHEN {ref} THEN {code_of(True)} ELSE {code_of(False)} END)"
    keys = _text_keys_sql(ref, kind, dialect)
    lookups = ", ".join(_text_lookup(k, index) for k in keys)
    return f"coalesce({lookups}, {NOT_IN_SCHEMA})"


def _number_category_code(col: ColumnSpec, ref: str, kind: Kind) -> str:
    values = [float(c) for c in col.categories]
    k = len(values)
    if values == [float(i) for i in range(k)]:
        # codes 0..k-1 are their own categories (e.g. a Private-PGM domain)
        if kind == "integer":
            return f"(CASE WHEN {ref} >= 0 AND {ref} <= {k - 1} THEN {ref} ELSE {NOT_IN_SCHEMA} END)"
        x = _as_double(ref, kind)
        return (f"(CASE WHEN {x} >= 0 AND {x} <= {k - 1} AND {x} = floor({x}) "
                f"THEN CAST({x} AS INTEGER) ELSE {NOT_IN_SCHEMA} END)")
    x = _as_double(ref, kind)
    branches = " ".join(f"WHEN {double_literal(v)} THEN {i}" for i, v in enumerate(values)
                        if math.isfinite(v))
    return f"(CASE {x} {branches} ELSE {NOT_IN_SCHEMA} END)"


#: what a public-rows flag reads as (:func:`synth_core.tables._flag`'s rule)
FLAG_TRUE, FLAG_FALSE, FLAG_INVALID = 1, 0, -1


def flag_expression(ref: str, kind: Kind) -> str:
    """SQL that reads a public-rows flag: :data:`FLAG_TRUE` (true, yes, 1),
    :data:`FLAG_FALSE` (false, no, 0) or :data:`FLAG_INVALID` (anything else,
    missing values included), as ``synth_core.tables`` reads a flag column:
    booleans as themselves, numbers equal to 0 or 1, text (trimmed, any case)
    true/yes/1 or false/no/0."""
    if kind == "boolean":
        return (f"(CASE WHEN {ref} IS NULL THEN {FLAG_INVALID} WHEN {ref} THEN {FLAG_TRUE} "
                f"ELSE {FLAG_FALSE} END)")
    if kind == "string":
        t = f"lower(trim({ref}))"
        return (f"(CASE WHEN {t} IN ('true', 'yes', '1') THEN {FLAG_TRUE} "
                f"WHEN {t} IN ('false', 'no', '0') THEN {FLAG_FALSE} ELSE {FLAG_INVALID} END)")
    x = f"CAST({ref} AS DOUBLE)"  # NULL and NaN equal neither 0 nor 1
    return (f"(CASE WHEN {x} = 1 THEN {FLAG_TRUE} WHEN {x} = 0 THEN {FLAG_FALSE} "
            f"ELSE {FLAG_INVALID} END)")
