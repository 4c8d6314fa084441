"""A schema proposed for review: from a raw table (and public rows) to a domain.

:func:`propose_schema` reads a table the way an analyst would before a run
and proposes one decision per column, each with a reason:

* **identifier** (proposed: leave out): a distinct value in at least
  :data:`ID_SHARE` of the rows (at least :data:`ID_MIN_ROWS` rows), text or
  whole numbers; a row number or record ID carries no pattern to learn.
* **code** (proposed: categorical): whole numbers with more distinct values
  than a numeric column has bins, that read as codes, not quantities: every
  value has the same number of digits (at least 3), the file writes some
  with leading zeros, or the column's name says so (zip, fips, code, ...).
  Binned as numbers, codes would come back as numbers that are no code.
* **numeric**: numbers with more distinct values than bins; bounds are the
  observed min/max, whole numbers decode to whole numbers, other numbers to
  the data's own number of decimals. Empty cells get the missing code, so an
  integer column with blanks stays numeric.
* **categorical**: at most ``bins`` distinct numbers, or at most
  ``max_categories`` distinct texts.
* **mixed** (numbers and text in one column): categorical (every cell fits as
  text) when it has at most ``max_categories`` values, else left out.
* **too many texts** or **empty**: left out.

The caller's choices (``numeric``, ``categorical``, ``drop``) override the
proposal. With public rows the domain covers the union of both tables' values
(so the public rows fit it), and :attr:`Proposal.private_values` says which
parts of it were read off the private table only: categories, bounds, a
missing-value code, more decimals than the public rows have, and a kind
other than the one the public rows alone give.

Privacy: every category list and bound read off the private table is a
function of the private records that no mechanism protects. The proposal is a
draft for review: :attr:`Proposal.read_off_private` names the columns whose
domain still holds private values; replace them with public knowledge
(code lists, ranges) before a release.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from .errors import ConfigError, SynthError, render_controls
from .schema import (DEFAULT_BINS, INFER_DECIMALS, REVIEW_KEY, ColumnSpec, Schema,
                     _format_examples, _is_blank, _show_list, _value_counts, decimals_of,
                     infer_schema)
from .tables import CSV_SUFFIXES, PublicRows, _written_code

#: an identifier has a distinct value in at least this share of its rows ...
ID_SHARE = 0.95
#: ... and at least this many rows
ID_MIN_ROWS = 10
#: the fewest digits of a fixed-width code
CODE_MIN_DIGITS = 3
#: names that say a column of whole numbers is a code (whole words of the name)
CODE_NAME_WORDS = ("zip", "zipcode", "postcode", "postal", "fips", "code", "geo", "geoid",
                   "county", "tract", "puma", "naics", "icd", "sic", "area")

WARNING = ("Values in this schema were read off the private table: category lists, bounds "
           "and kinds are a function of the private records, and no privacy mechanism protects "
           "them. Until you review it, this schema leaks them: replace every category list, "
           "bound and kind of the columns in 'read_off_private' with public knowledge (a code "
           "list, a known range), then delete this '" + REVIEW_KEY + "' block.")


@dataclass(frozen=True)
class ColumnDecision:
    """What the proposal does with one column, and why.

    ``spec`` is None for a column left out. ``note`` may name controls with
    :func:`~synth_core.errors.render_controls` placeholders.
    """

    name: str
    role: str
    spec: ColumnSpec | None
    note: str = ""
    #: values (categories, or "lower"/"upper" bounds) seen in the private table only
    private_values: tuple = ()
    #: the caller chose this column's kind or left it out
    chosen: bool = False
    #: kept as categories though nearly every row has its own value (the caller's choice)
    one_per_record: bool = False

    @property
    def kept(self) -> bool:
        return self.spec is not None


@dataclass(frozen=True)
class Proposal:
    """The proposed schema: one :class:`ColumnDecision` per column of the private table."""

    decisions: tuple[ColumnDecision, ...]
    has_public: bool
    bins: int = DEFAULT_BINS

    def decision(self, name: str) -> ColumnDecision:
        for d in self.decisions:
            if d.name == name:
                return d
        raise ConfigError(f"unknown column '{name}'.",
                          hint=f"Known columns: {_show_list(d.name for d in self.decisions)}.")

    @property
    def drops(self) -> tuple[str, ...]:
        """Columns the proposal leaves out."""
        return tuple(d.name for d in self.decisions if not d.kept)

    @property
    def codes(self) -> tuple[str, ...]:
        """Columns of whole numbers proposed as categorical codes."""
        return tuple(d.name for d in self.decisions if d.role == "code" and d.kept)

    @property
    def read_off_private(self) -> tuple[str, ...]:
        """Kept columns whose domain holds values read off the private table."""
        return tuple(d.name for d in self.decisions
                     if d.kept and (not self.has_public or d.private_values))

    @property
    def one_per_record(self) -> tuple[str, ...]:
        """Columns kept as categories (the caller's choice) though nearly every row
        has its own value: their category list is almost the column itself."""
        return tuple(d.name for d in self.decisions if d.kept and d.one_per_record)

    @property
    def private_values(self) -> dict[str, list]:
        """Column -> values of its domain seen in the private table only (with public rows)."""
        return {d.name: list(d.private_values) for d in self.decisions
                if d.kept and d.private_values}

    def schema(self) -> Schema:
        """The kept columns as a Schema: source "private" while any column's domain
        holds private values, else "public"."""
        specs = tuple(d.spec for d in self.decisions if d.kept)
        if not specs:
            raise ConfigError("every column is left out, so there is nothing to synthesise.",
                              hint="Keep at least one column ({numeric} or {categorical}).")
        return Schema(specs, source="private" if self.read_off_private else "public")

    def notes(self, interface: str = "api") -> dict[str, str]:
        """Column -> the reason for its decision, controls named as ``interface`` names them."""
        return {d.name: render_controls(d.note, interface) for d in self.decisions if d.note}

    def review(self, interface: str = "api") -> dict:
        """The file's review block: the warning, the decisions to check, and the
        values read off the private table."""
        out = {"warning": WARNING if self.read_off_private else None,
               "read_off_private": list(self.read_off_private),
               "proposed_drops": list(self.drops),
               "flagged_codes": list(self.codes),
               "one_category_per_record": list(self.one_per_record),
               "notes": self.notes(interface)}
        if self.has_public:
            out["private_only_values"] = self.private_values
        return out

    def to_json(self, interface: str = "api") -> dict:
        """The schema file ``synth run --schema`` reads, with its review block."""
        spec = self.schema().to_json()
        spec.pop(REVIEW_KEY, None)    # this review names the columns one by one
        return {REVIEW_KEY: self.review(interface), **spec}

    def differences(self, in_use: Schema) -> list[str]:
        """Columns whose proposed kind differs from the schema ``in_use`` (kept against
        left out, categorical against numeric), each as "column: in use ...;
        proposed ..."."""
        out = []
        for d in self.decisions:
            now = in_use.column(d.name) if d.name in in_use.names else None
            if (now is None) == (d.spec is None) and (now is None or now.kind == d.spec.kind):
                continue
            was = "left out" if now is None else _kind_summary(now)
            out.append(f"{d.name}: in use {was}; proposed "
                       + (_kind_summary(d.spec) if d.kept else f"left out ({d.role})"))
        return out

    def table(self, interface: str = "app") -> pd.DataFrame:
        """One row per column: decision, kind, domain summary, private values, note."""
        rows = []
        for d in self.decisions:
            rows.append({"column": d.name, "decision": _decision_label(d),
                         "kind": d.spec.kind if d.kept else "",
                         "domain": _domain_summary(d.spec) if d.kept else "",
                         "from private table only": _private_summary(d, self.has_public),
                         "note": render_controls(d.note, interface) or ""})
        return pd.DataFrame(rows)


# ---------------------------------------------------------------- proposing


def propose_schema(private: pd.DataFrame, public: pd.DataFrame | None = None, *,
                   numeric: Iterable[str] = (), categorical: Iterable[str] = (),
                   drop: Iterable[str] = (), bins: int = DEFAULT_BINS,
                   max_categories: int = 100,
                   leading_zeros: Iterable[str] = ()) -> Proposal:
    """One decision per column of ``private`` (see the module docstring).

    ``public``: public rows over some or all of the same columns; the domain
    covers both tables' values. ``numeric``/``categorical``/``drop``: the
    caller's choices, which win over the proposal. ``leading_zeros``: columns
    the file writes with leading zeros (a loaded table has lost them).
    """
    choices = _choices(private, numeric, categorical, drop)
    zeros = set(leading_zeros)
    decisions = []
    for name in private.columns:
        name = str(name)
        values = private[name]
        pub = public[name] if public is not None and name in public.columns else None
        both = values if pub is None else pd.concat([values, pub], ignore_index=True)
        decision = _decide(name, values, both, choices.get(name), bins=bins,
                           max_categories=max_categories, leading_zero=name in zeros)
        if decision.kept and public is not None:
            decision = _with_private_values(decision, pub, both)
            if pub is not None and name not in choices:
                decision = _with_private_kind(decision, _decide(
                    name, pub, pub, None, bins=bins, max_categories=max_categories,
                    leading_zero=name in zeros))
        decisions.append(_with_missing_words_note(decision))
    return Proposal(tuple(decisions), has_public=public is not None, bins=bins)


#: texts that often stand for a missing value; a loaded table keeps them as text (only
#: empty cells are missing), so a proposal that makes them categories says so
MISSING_WORDS = frozenset({"NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None", "?", "-",
                           "missing", "unknown"})


def _with_missing_words_note(decision: ColumnDecision) -> ColumnDecision:
    """``decision`` with a note when its categories hold words such as "NA"."""
    spec = decision.spec
    if spec is None or decision.role != "categorical":   # a mixed column's note names them
        return decision
    words = [c for c in spec.categories if isinstance(c, str) and c in MISSING_WORDS]
    if not words:
        return decision
    note = (f"its categories include {', '.join(repr(w) for w in words)}, kept as values "
            "(only empty cells are missing values): if they mean missing, empty those cells.")
    return dataclasses.replace(decision, note=" ".join(n for n in (decision.note, note) if n))


def _choices(df: pd.DataFrame, numeric, categorical, drop) -> dict[str, str]:
    """Column -> the caller's choice ("numeric", "categorical" or "drop");
    ConfigError for an unknown column or two choices for one column."""
    out: dict[str, str] = {}
    for choice, names in (("numeric", numeric), ("categorical", categorical), ("drop", drop)):
        for col in names:
            if col not in df.columns:
                raise ConfigError(
                    f"'{col}', chosen as a {choice} column, is not a column of the table.",
                    hint=f"Correct {{{choice}:{col}}}; the table's columns are: "
                         f"{_show_list(df.columns)}.", column=col)
            if out.get(col, choice) != choice:
                raise ConfigError(f"column '{col}' is chosen both {out[col]} and {choice}.",
                                  hint="Choose one for each column.", column=col)
            out[col] = choice
    return out


@dataclass(frozen=True)
class _Profile:
    """What one column's non-empty cells are."""

    present: pd.Series
    missing: bool
    distinct: int
    #: "number", "text", "mixed" or "bool"
    kind: str
    #: every number is whole (False unless kind is "number")
    whole: bool
    #: number of text cells (kind "mixed")
    text_cells: int = 0


def _profile(values: pd.Series) -> _Profile:
    present = values.dropna()
    if not pd.api.types.is_numeric_dtype(values.dtype) or pd.api.types.is_bool_dtype(values.dtype):
        present = present[~present.map(_is_blank).to_numpy(dtype=bool)]
    missing = len(present) < len(values)
    distinct = int(present.astype(str).nunique()) if len(present) else 0
    if pd.api.types.is_bool_dtype(values.dtype) or (
            len(present) and present.map(lambda v: isinstance(v, (bool, np.bool_))).all()):
        return _Profile(present, missing, distinct, "bool", False)
    numbers = pd.to_numeric(present.astype(object), errors="coerce")
    text_cells = int(numbers.isna().sum())
    if text_cells == len(present):
        return _Profile(present, missing, distinct, "text", False)
    if text_cells:
        return _Profile(present, missing, distinct, "mixed", False, text_cells)
    x = numbers.to_numpy(dtype=float)
    whole = bool(np.all(np.isfinite(x)) and np.all(np.mod(x, 1) == 0))
    return _Profile(present, missing, int(pd.unique(x).size), "number", whole)


def _decide(name: str, private: pd.Series, values: pd.Series, choice: str | None, *,
            bins: int, max_categories: int, leading_zero: bool) -> ColumnDecision:
    """The decision for one column: its kind from the private table's cells
    (``private``), its domain from both tables' cells (``values``)."""
    if choice == "drop":
        return ColumnDecision(name, "dropped", None, "left out on request.", chosen=True)
    prof = _profile(private)
    if prof.distinct == 0:
        return ColumnDecision(name, "empty", None, "every cell is empty: left out.")
    if choice is not None:
        unique = choice == "categorical" and _is_identifier(prof)
        return ColumnDecision(name, choice, _spec(name, values, choice, bins),
                              _one_per_record_note(name, prof) if unique else "",
                              chosen=True, one_per_record=unique)
    if prof.kind == "text" and _dates(prof.present):
        return ColumnDecision(name, "dates", None, (
            "dates (such as 2023-05-13): a schema has no date kind, so it is left out "
            f"({{drop:{name}}}). To keep what matters of it, add a column with the year or month "
            "(a number or category) to the table before loading it."))
    if _is_identifier(prof):
        return ColumnDecision(name, "identifier", None, (
            f"a distinct value in {prof.distinct:,} of {len(prof.present):,} rows: it looks like "
            "an identifier (a row number or record ID), which has no pattern to learn. Proposed: "
            f"leave it out ({{drop:{name}}}); to keep it, choose {{numeric:{name}}} or "
            f"{{categorical:{name}}}."))
    if prof.kind == "number":
        return _decide_number(name, values, prof, bins=bins,
                              leading_zero=leading_zero or _written_code(prof.present))
    if prof.kind == "mixed":
        return _decide_mixed(name, values, prof, bins=bins, max_categories=max_categories)
    if prof.distinct > max_categories:
        return ColumnDecision(name, "too many values", None, (
            f"{prof.distinct:,} distinct texts, more than {max_categories} categories: left out. "
            f"To keep every value as a category, choose {{categorical:{name}}}."))
    return ColumnDecision(name, "categorical", _spec(name, values, "categorical", bins))


#: a date as tables usually write one: 2023-05-13, 13/05/2023, 05.13.2023, with a time perhaps
_DATE = re.compile(r"(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4})"
                   r"([ T]\d{1,2}:\d{2}(:\d{2})?)?")


def _dates(present: pd.Series) -> bool:
    """Nearly every cell (95%) is written as a date."""
    texts = present.astype(str).str.strip()
    return len(texts) > 0 and texts.map(lambda v: _DATE.fullmatch(v) is not None).mean() >= 0.95


def _is_identifier(prof: _Profile) -> bool:
    rows = len(prof.present)
    return (rows >= ID_MIN_ROWS and prof.distinct >= ID_SHARE * rows
            and (prof.kind in ("text", "mixed") or prof.whole))


def _one_per_record_note(name: str, prof: _Profile) -> str:
    """The warning on a column chosen categorical that has a distinct value in
    (almost) every row: its category list is (almost) the column itself."""
    return (f"your choice keeps {prof.distinct:,} categories for {len(prof.present):,} rows, "
            "nearly one per record: the category list is almost every record's value of this "
            "column, and a schema read off the private table publishes it with the release. "
            f"Keep it only if these values are public knowledge; else leave it out "
            f"({{drop:{name}}}).")


def _decide_number(name: str, values: pd.Series, prof: _Profile, *, bins: int,
                   leading_zero: bool) -> ColumnDecision:
    if prof.distinct <= bins:
        return ColumnDecision(name, "categorical", _spec(name, values, "categorical", bins))
    why = _code_reason(name, prof, leading_zero) if prof.whole else None
    if why:
        return ColumnDecision(name, "code", _spec(name, values, "categorical", bins), (
            f"whole numbers with {prof.distinct:,} distinct values that look like codes ({why}): "
            "proposed categorical, so every synthetic value is a code that exists (binned as "
            f"numbers, most would not be). If it is a quantity, choose {{numeric:{name}}}."))
    note = ("has empty cells: numeric with a missing-value code." if prof.missing else "")
    spec = _spec(name, values, "numeric", bins)
    crowded = _crowded_bin_note(spec, _numbers(values))
    return ColumnDecision(name, "numeric", spec, " ".join(n for n in (note, crowded) if n))


#: the share of a numeric column's values in one bin past which schema infer says
#: that extreme values set the bounds
CROWDED_BIN_SHARE = 0.9


def _crowded_bin_note(spec: ColumnSpec, x: np.ndarray) -> str:
    """A note when one bin of ``spec`` holds most of the values ``x``: the bounds were
    stretched by a few extreme values, and the synthetic values will be spread over
    bins the data hardly uses."""
    if spec.bins < 4 or len(x) == 0:
        return ""
    counts = np.bincount(spec.bin_codes(x), minlength=spec.bins)
    if counts.max() < CROWDED_BIN_SHARE * len(x):
        return ""
    return (f"{counts.max():,} of its {len(x):,} values fall in one of its {spec.bins} bins: "
            "a few extreme "
            f"values (from {spec.lower:g} to {spec.upper:g}) set the bounds. Declare bounds "
            "that cover the usual values, from public knowledge, with \"clip\": true (values "
            "past them go to the first or last bin; docs/schema.md).")


def _code_reason(name: str, prof: _Profile, leading_zero: bool) -> str | None:
    """Why a column of whole numbers reads as a code, or None."""
    if leading_zero:
        return "the file writes some with leading zeros"
    words = set(re.split(r"[^a-z0-9]+", name.lower()))
    if words & set(CODE_NAME_WORDS):
        return f"the name '{name}'"
    x = pd.to_numeric(prof.present.astype(object)).to_numpy(dtype=float)
    if np.all(x >= 0):
        digits = np.unique(np.char.str_len(np.abs(x).astype(np.int64).astype(str)))
        if len(digits) == 1 and digits[0] >= CODE_MIN_DIGITS:
            return f"every value has {digits[0]} digits"
    return None


def _decide_mixed(name: str, values: pd.Series, prof: _Profile, *, bins: int,
                  max_categories: int) -> ColumnDecision:
    texts = prof.present[pd.to_numeric(prof.present.astype(object), errors="coerce")
                         .isna().to_numpy()]
    share = 100 * (1 - prof.text_cells / len(prof.present))
    what = (f"mixes numbers ({share:.0f}% of its cells) and text "
            f"({_format_examples(_value_counts(texts))})")
    to_numeric = (f"To make it numeric, replace the text cells with empty cells (missing values) "
                  f"and choose {{numeric:{name}}}.")
    if prof.distinct > max_categories:
        return ColumnDecision(name, "mixed", None, (
            f"{what}, with {prof.distinct:,} distinct values: too many for categories, so it is "
            f"left out. {to_numeric}"))
    as_text = values.map(lambda v: v if isinstance(v, str) or pd.isna(v) else _number_text(v))
    return ColumnDecision(name, "mixed", _spec(name, as_text, "categorical", bins), (
        f"{what}: proposed categorical, every value as text, so every cell fits. {to_numeric}"))


def _number_text(value) -> str:
    """A number as a CSV writes it: 3, not 3.0."""
    value = value.item() if isinstance(value, np.generic) else value
    return str(int(value)) if float(value).is_integer() else str(value)


def _spec(name: str, values: pd.Series, kind: str, bins: int) -> ColumnSpec:
    """The column's domain read off ``values`` as ``kind``."""
    chosen = {"numeric_columns" if kind == "numeric" else "categorical_columns": [name]}
    try:
        return infer_schema(values.to_frame(name), source="private", bins=bins,
                            **chosen).columns[0]
    except SynthError as exc:
        raise type(exc)(exc.message, hint=exc.hint_template, column=name) from None


def _with_private_values(decision: ColumnDecision, public: pd.Series | None,
                         both: pd.Series) -> ColumnDecision:
    """``decision`` with the parts of its domain that the public rows do not show:
    categories, bounds, a missing-value code (empty cells in the private rows only)
    and, for numbers, more decimals than the public rows have (``both``: the two
    tables' cells, from which the domain was read)."""
    spec = decision.spec
    if public is None:
        only = ("every value (the public rows lack this column)",)
    elif spec.kind == "categorical":
        seen = _category_keys(public.dropna())
        only = tuple(c for c in spec.categories if str(c) not in seen)
    else:
        x = _numbers(public)
        low_seen = len(x) > 0 and x.min() <= spec.lower
        high_seen = len(x) > 0 and x.max() >= spec.upper
        only = tuple(text for text, seen in ((f"lower bound {spec.lower:g}", low_seen),
                                             (f"upper bound {spec.upper:g}", high_seen))
                     if not seen)
        if len(x):
            mine, theirs = _precision(_numbers(both)), _precision(x)
            if mine > theirs:
                only += (f"{_precision_text(mine)} (the public rows have "
                         f"{_precision_text(theirs)})",)
    if public is not None and spec.missing and not _profile(public).missing:
        only += ("a missing-value code (only the private rows have empty cells)",)
    if not only:
        return decision
    return dataclasses.replace(decision, private_values=only)


def _with_private_kind(decision: ColumnDecision, alone: ColumnDecision) -> ColumnDecision:
    """``decision`` (kind read off the private cells) with its kind listed among the
    parts read off the private table when the public rows alone (``alone``) give
    another: e.g. numeric because the private rows hold more distinct values than
    the public ones, which a released schema would then tell."""
    kind = decision.spec.kind
    if alone.kept and alone.spec.kind == kind:
        return decision
    theirs = alone.spec.kind if alone.kept else f"none: {alone.role}"
    return dataclasses.replace(decision, private_values=decision.private_values + (
        f"the kind {kind} (the public rows alone give {theirs})",))


def _numbers(values: pd.Series) -> np.ndarray:
    """The numeric cells of ``values`` (others and empty cells left out)."""
    return pd.to_numeric(values.dropna().astype(object), errors="coerce").dropna() \
        .to_numpy(dtype=float)


#: :func:`_precision` of numbers that need more decimals than inference declares
_MORE_DECIMALS = INFER_DECIMALS + 1


def _precision(x: np.ndarray) -> int:
    """The fewest decimals that write every number of ``x``: 0 for whole numbers,
    ``_MORE_DECIMALS`` when more than ``INFER_DECIMALS`` are needed (the inferred
    column then decodes to real numbers)."""
    d = decimals_of(x[np.isfinite(x)])
    return _MORE_DECIMALS if d is None else d


def _precision_text(decimals: int) -> str:
    if decimals == 0:
        return "whole numbers"
    if decimals == _MORE_DECIMALS:
        return f"more than {INFER_DECIMALS} decimals"
    return f"{decimals} decimal{'s' if decimals > 1 else ''}"


def _category_keys(values: pd.Series) -> set[str]:
    """Texts of ``values`` as categories are written: 3 for 3.0."""
    return {v if isinstance(v, str) else _number_text(v) if not isinstance(v, bool) else str(v)
            for v in values}


# ---------------------------------------------------------------- showing


def _decision_label(d: ColumnDecision) -> str:
    labels = {"identifier": "leave out: identifier?", "code": "categorical: code",
              "mixed": "categorical: mixed types" if d.kept else "leave out: mixed types",
              "too many values": "leave out: too many values", "empty": "leave out: empty",
              "dropped": "leave out (your choice)", "dates": "leave out: dates"}
    if d.chosen and d.kept:
        return f"{d.role} (your choice)"
    return labels.get(d.role, d.role)


def _kind_summary(spec: ColumnSpec) -> str:
    """A column's kind and size: "categorical (63 categories)", "numeric (32 bins)"."""
    if spec.kind == "categorical":
        return f"categorical ({len(spec.categories):,} categories)"
    return f"numeric ({spec.bins} bins)"


def _domain_summary(spec: ColumnSpec) -> str:
    extra = ", missing code" if spec.missing else ""
    if spec.kind == "categorical":
        cats = [str(c) for c in spec.categories]
        shown = ", ".join(cats[:6]) + (f", … ({len(cats):,} in all)" if len(cats) > 6 else "")
        return shown + extra
    precision = ("whole numbers" if spec.integer else
                 f"{spec.decimals} decimals" if spec.decimals is not None else "real numbers")
    return f"[{spec.lower}, {spec.upper}] in {spec.bins} bins, {precision}{extra}"


def _private_summary(d: ColumnDecision, has_public: bool) -> str:
    if not d.kept:
        return ""
    if not has_public:
        return "every value"
    shown = [str(v) for v in d.private_values[:6]]
    more = len(d.private_values) - len(shown)
    return ", ".join(shown) + (f" and {more:,} more" if more > 0 else "")


def leading_zero_columns(frame_as_text: pd.DataFrame) -> tuple[str, ...]:
    """Columns of a table read as text whose cells include a whole number written
    with a leading zero ("02134"): the loaded table has lost the zero."""
    out = []
    for name in frame_as_text.columns:
        cells = frame_as_text[name].dropna().astype(str).str.strip()
        if cells.str.fullmatch(r"0\d+").any() and cells.str.fullmatch(r"\d*").all():
            out.append(str(name))
    return tuple(out)


def read_leading_zeros(path) -> tuple[str, ...]:
    """The columns of a CSV file that write whole numbers with leading zeros
    (none for other files: Parquet keeps such codes as text)."""
    path = Path(path)
    if not path.name.lower().endswith(CSV_SUFFIXES):
        return ()
    text = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""],
                       encoding_errors="replace", index_col=False)
    text.columns = [str(c).strip() for c in text.columns]
    return leading_zero_columns(text)


# ---------------------------------------------------------------- a run's domain


def domain_with_choices(data: pd.DataFrame, public: pd.DataFrame | None = None, *,
                        flag: str | None = None, drop: Iterable[str] = (),
                        numeric: Iterable[str] = (), categorical: Iterable[str] = ()) -> Schema:
    """A run's domain read off data with the caller's kinds: off the public rows
    (``public``, or the rows of ``data`` that ``flag`` marks) when there are
    some (source "public"), else off ``data`` (source "private": not
    privacy-protected). Columns in ``drop`` are left out."""
    private = data
    if flag:
        private, public = PublicRows(flag_column=flag).split(data)
    base, source = (private, "private") if public is None else (public, "public")
    base = base.drop(columns=[c for c in drop if c in base.columns])
    return infer_schema(base, source=source, numeric_columns=numeric,
                        categorical_columns=categorical)


def suspicious_columns(data: pd.DataFrame, schema: Schema | None = None, *,
                       interface: str = "api") -> list[str]:
    """Warnings for columns of ``data`` a run would synthesise as they are but
    that look like identifiers, like codes binned as numbers, or like numbers
    with one category per value. ``schema``: the
    run's domain (None: the one a run reads off ``data``). None when the
    table cannot be read this way (the run then names the problem itself)."""
    try:
        decisions = propose_schema(data).decisions
    except SynthError:
        return []
    out = []
    for d in decisions:
        spec = _run_spec(data[d.name], d.name, schema)
        kind = None if spec is None else spec.kind
        if d.role == "identifier" and kind is not None:
            out.append(f"column '{d.name}' is synthesised as {kind} data, but it has "
                       + render_controls(d.note, interface))
        elif d.role == "code" and kind == "numeric":
            out.append(f"column '{d.name}' is binned as numbers, but it has "
                       + render_controls(d.note, interface))
        elif d.role == "numeric" and kind == "categorical":
            out.append(render_controls(
                f"column '{d.name}' becomes {len(spec.categories)} categories (one per "
                f"value); to bin it as numbers, choose {{numeric:{d.name}}}.", interface))
        elif d.role == "mixed" and kind == "categorical":
            out.append(f"column '{d.name}' is synthesised as categories, because it "
                       + render_controls(d.note, interface))
    return out


def _run_spec(values: pd.Series, name: str, schema: Schema | None) -> ColumnSpec | None:
    """The column's domain in a run: the schema's, else the one read off it."""
    if schema is not None:
        return schema.column(name) if name in schema.names else None
    try:
        return infer_schema(values.to_frame(name), source="private").columns[0]
    except SynthError:
        return None
