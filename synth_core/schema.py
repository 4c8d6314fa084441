"""Table schemas: the finite domain of every column.

Private-PGM works on integer codes ``0 .. size-1`` per column. A ``Schema``
says how each column's values map to codes and back:

* a categorical column lists its categories (code = position in the list);
* a numeric column is cut into ``bins`` equal-width bins over
  ``[lower, upper]`` (the upper bound belongs to the last bin);
* either kind may have one extra code, the last one, for missing values
  (NaN, None or an empty string).

A numeric column decodes a code to a value drawn uniformly inside its bin:
a whole number for an ``integer`` column, a multiple of ``10**-decimals``
for a column with ``decimals`` (so synthetic values have the data's own
precision), any real number otherwise.

Domain privacy: category lists and bounds are an input of the mechanisms.
This module does no privacy accounting; ``Schema.source`` records where the
domain came from ("declared", "public" or "private") so that reports can say
"domain not privacy-protected" when it was read off the private data.
"""

from __future__ import annotations

import json
import math
import numbers
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Literal

import numpy as np
import pandas as pd

from .errors import DataError, SchemaError

DEFAULT_BINS = 32
#: the most bins a numeric column may have (its edges are an array of bins + 1 floats)
MAX_BINS = 100_000
#: :func:`infer_schema`: a column with more distinct values is binned (numbers) or refused (text)
INFER_MAX_CATEGORIES = 100
MISSING_LABEL = "<missing>"
KINDS = ("categorical", "numeric")
SOURCES = ("declared", "public", "private")

_MAX_EXAMPLES = 5
_JSON_KEYS = {
    "categorical": ("name", "kind", "categories", "missing"),
    "numeric": ("name", "kind", "lower", "upper", "bins", "missing", "integer", "decimals",
                "clip"),
}
#: the categories of a true/false column, as a schema writes them: decoded as booleans
BOOLEAN_CATEGORIES = frozenset({"False", "True"})
#: the most decimals a numeric column may declare
MAX_DECIMALS = 12
#: the optional top-level key of a schema file that ``synth schema infer`` writes
REVIEW_KEY = "review"
#: the review warning of a schema file written from a domain read off the private table
PRIVATE_FILE_WARNING = ("This domain was read off the private table: its categories and "
                        "bounds reveal private values, and a run with it is not privacy-"
                        "protected. Replace them with public knowledge, then delete this "
                        "'review' block.")
# Markers used while encoding a column, before the final codes are known.
_IS_MISSING = -1
_NOT_IN_SCHEMA = -2


# ---------------------------------------------------------------- columns


@dataclass(frozen=True)
class ColumnSpec:
    """The domain of one column.

    ``integer`` (numeric columns only) makes ``decode`` return whole numbers.
    Leave it ``None`` to infer it: True when both bounds are ints (not
    floats), no ``decimals`` are given and every bin contains a whole number
    (always so when the bin width is at least 1). After construction it is
    always a bool.

    ``decimals`` (non-integer numeric columns only) makes ``decode`` return
    multiples of ``10**-decimals``: the value drawn in bin ``[a, b)`` is
    ``k / 10**decimals`` for ``k`` uniform over the whole numbers in
    ``[a * 10**decimals, b * 10**decimals)`` (a bin holding no such multiple
    gets a uniform real draw). None: no rounding.

    ``clip`` (numeric columns only) puts a finite value below ``lower`` in the
    first bin and one above ``upper`` in the last, instead of refusing it: the
    bounds then come from public knowledge (say, incomes up to 250,000) and a
    few extreme records do not stretch the bins. Clipping is a function of each
    record alone, so it changes no sensitivity.
    """

    name: str
    kind: Literal["categorical", "numeric"]
    categories: tuple | None = None
    lower: float | None = None
    upper: float | None = None
    bins: int | None = None
    missing: bool = False
    integer: bool | None = None
    decimals: int | None = None
    clip: bool = False

    def __post_init__(self):
        _check_column_name(self.name)
        if self.kind not in KINDS:
            raise SchemaError(f"column '{self.name}': unknown kind {self.kind!r}.",
                              hint="Use 'categorical' or 'numeric'.", column=self.name)
        if not isinstance(self.missing, (bool, np.bool_)):
            self._fail(f"'missing' must be true or false, not {self.missing!r}.")
        object.__setattr__(self, "missing", bool(self.missing))
        if not isinstance(self.clip, (bool, np.bool_)):
            self._fail(f"'clip' must be true or false, not {self.clip!r}.")
        object.__setattr__(self, "clip", bool(self.clip))
        if self.kind == "categorical" and self.clip:
            self._fail("'clip' applies to numeric columns only.", "Remove it.")
        if self.kind == "categorical":
            self._init_categorical()
        else:
            self._init_numeric()

    # -- validation

    def _fail(self, message: str, hint: str | None = None):
        raise SchemaError(f"column '{self.name}': {message}", hint=hint, column=self.name)

    def _init_categorical(self):
        for key in ("lower", "upper", "bins"):
            if getattr(self, key) is not None:
                self._fail(f"'{key}' applies to numeric columns only.",
                           "Remove it, or set kind: numeric.")
        if self.integer:
            self._fail("'integer' applies to numeric columns only.")
        if self.decimals is not None:
            self._fail("'decimals' applies to numeric columns only.")
        object.__setattr__(self, "integer", False)
        cats = self.categories
        if cats is None or isinstance(cats, (str, bytes)) or not isinstance(cats, Iterable):
            self._fail("a categorical column needs a list of categories.")
        cats = tuple(_plain(c) for c in cats)
        if not cats:
            self._fail("the list of categories is empty.",
                       "List at least one category.")
        if all(isinstance(c, str) for c in cats):
            blank = [c for c in cats if not c.strip()]
            if blank:
                self._fail("empty categories are not allowed: empty cells are missing values.",
                           "Remove the empty category and set missing: true.")
            keys = cats
        elif all(_is_number(c) for c in cats):
            if not all(math.isfinite(c) for c in cats):
                self._fail("categories must be finite numbers (NaN marks a missing value).",
                           "Remove NaN/inf and set missing: true.")
            keys = tuple(float(c) for c in cats)
        else:
            kinds = sorted({type(c).__name__ for c in cats})
            self._fail(f"categories must be all text or all numbers; found {', '.join(kinds)}.",
                       "Write every category as text (in quotes) or every one as a number.")
        dupes = [cats[keys.index(k)] for k, n in Counter(keys).items() if n > 1]
        if dupes:
            self._fail(f"duplicate categories: {_show_list(dupes)}.",
                       "List every category once.")
        object.__setattr__(self, "categories", cats)

    def _init_numeric(self):
        if self.categories is not None:
            self._fail("'categories' applies to categorical columns only.",
                       "Remove it, or set kind: categorical.")
        for key in ("lower", "upper"):
            value = _plain(getattr(self, key))
            if value is None:
                self._fail(f"a numeric column needs '{key}'.",
                           "Declare lower and upper bounds for its values.")
            if not _is_number(value) or not math.isfinite(value):
                self._fail(f"'{key}' must be a finite number, not {value!r}.")
            object.__setattr__(self, key, value)
        if not self.lower < self.upper:
            self._fail(f"lower ({self.lower}) must be less than upper ({self.upper}).")
        bins = DEFAULT_BINS if self.bins is None else _plain(self.bins)
        if not _is_whole(bins) or bins < 1:
            self._fail(f"'bins' must be a whole number of at least 1, not {bins!r}.")
        if bins > MAX_BINS:      # before its edges are made: 1e9 bins would take 8 GB
            self._fail(f"'bins' is {bins:g}; at most {MAX_BINS:,} bins are accepted.",
                       "Use fewer bins (32 is the default; a marginal's size is the product "
                       "of its columns' bins).")
        object.__setattr__(self, "bins", int(bins))
        if not np.all(np.diff(self.bin_edges()) > 0):
            self._fail(f"{self.bins} bins over [{self.lower}, {self.upper}] are too narrow "
                       "to tell apart in floating point.", "Use fewer bins or wider bounds.")
        if self.integer is None:   # inferred; a column given decimals is not integer
            ints = isinstance(self.lower, numbers.Integral) and isinstance(self.upper, numbers.Integral)
            object.__setattr__(self, "integer", ints and self.decimals is None
                               and self._whole_in_every_bin())
        elif not isinstance(self.integer, (bool, np.bool_)):
            self._fail(f"'integer' must be true or false, not {self.integer!r}.")
        elif self.integer and not self._whole_in_every_bin():
            self._fail(f"integer: true needs a whole number in every bin, but {self.bins} bins "
                       f"over [{self.lower}, {self.upper}] are narrower than 1.",
                       "Use fewer bins, or set integer: false.")
        object.__setattr__(self, "integer", bool(self.integer))
        self._init_decimals()

    def _init_decimals(self):
        if self.decimals is None:
            return
        decimals = _plain(self.decimals)
        if not _is_whole(decimals) or not 0 <= decimals <= MAX_DECIMALS:
            self._fail(f"'decimals' must be a whole number from 0 to {MAX_DECIMALS}, "
                       f"not {decimals!r}.")
        if self.integer:
            self._fail("'decimals' applies to non-integer columns; an integer column "
                       "decodes to whole numbers.", "Remove 'decimals', or set integer: false.")
        object.__setattr__(self, "decimals", int(decimals))

    # -- properties

    @property
    def size(self) -> int:
        """Number of integer codes (categories or bins, plus one if missing)."""
        n = len(self.categories) if self.kind == "categorical" else self.bins
        return n + int(self.missing)

    @property
    def missing_code(self) -> int | None:
        """The code of missing values (the last code), or None."""
        return self.size - 1 if self.missing else None

    def bin_edges(self) -> np.ndarray:
        """The ``bins + 1`` edges of a numeric column's bins."""
        if self.kind != "numeric":
            raise SchemaError(f"column '{self.name}' is categorical: it has no bins.",
                              column=self.name)
        return np.linspace(self.lower, self.upper, self.bins + 1)

    def bin_codes(self, x: np.ndarray) -> np.ndarray:
        """The bin of each number of ``x`` (finite, within the bounds): the number of
        interior edges at or below it, the upper bound in the last bin."""
        return np.minimum(np.searchsorted(self.bin_edges(), x, side="right") - 1, self.bins - 1)

    def labels(self) -> list[str]:
        """A human-readable label for every code, in code order: a category, the
        whole numbers an integer column's bin holds ("20–21"), or a bin's interval."""
        if self.kind == "categorical":
            out = [str(c) for c in self.categories]
        elif self.integer:    # the whole numbers each bin holds (and decodes to)
            dash = " to " if self.lower < 0 else "–"
            out = [str(lo) if lo == hi else f"{lo}{dash}{hi}"
                   for lo, hi in zip(*self._integer_ranges())]
        else:
            edges = _compact_numbers(self.bin_edges())
            out = [f"[{lo}, {hi})" for lo, hi in zip(edges[:-1], edges[1:])]
            out[-1] = out[-1][:-1] + "]"
        return out + [MISSING_LABEL] * self.missing

    # -- JSON

    def to_json(self) -> dict:
        """This column in the schema-file format."""
        out: dict = {"name": self.name, "kind": self.kind}
        if self.kind == "categorical":
            out["categories"] = list(self.categories)
        else:
            out.update(lower=self.lower, upper=self.upper, bins=self.bins)
        out["missing"] = self.missing
        if self.kind == "numeric":
            inferred = ColumnSpec(self.name, "numeric", lower=self.lower, upper=self.upper,
                                  bins=self.bins, decimals=self.decimals).integer
            if self.integer != inferred:
                out["integer"] = self.integer
            if self.decimals is not None:
                out["decimals"] = self.decimals
            if self.clip:
                out["clip"] = True
        return out

    @classmethod
    def from_json(cls, obj) -> "ColumnSpec":
        """A column from one entry of a schema file's ``columns`` list."""
        if not isinstance(obj, dict):
            raise SchemaError(f"every column must be a JSON object, not {obj!r}.")
        name = obj.get("name")
        if name is None:
            raise SchemaError(f"a column has no 'name': {json.dumps(obj)[:80]}.")
        _check_column_name(name)
        kind = obj.get("kind")
        if kind not in KINDS:
            raise SchemaError(f"column '{name}': unknown kind {kind!r}.",
                              hint="Use 'categorical' or 'numeric'.", column=name)
        unknown = [k for k in obj if k not in _JSON_KEYS[kind]]
        if unknown:
            raise SchemaError(
                f"column '{name}': unknown key(s) {_show_list(unknown)} for a {kind} column.",
                hint=f"Allowed keys: {', '.join(_JSON_KEYS[kind])}.", column=name)
        if kind == "categorical" and not isinstance(obj.get("categories"), list):
            raise SchemaError(f"column '{name}': 'categories' must be a list.", column=name)
        return cls(**obj)

    # -- encoding (used by Schema)

    def _encode(self, values: pd.Series) -> tuple[np.ndarray, list[str]]:
        """Codes for ``values`` and a list of problems (empty if all fit)."""
        if self.kind == "categorical":
            codes, problems = self._encode_categorical(values)
        else:
            codes, problems = self._encode_numeric(values)
        is_missing = codes == _IS_MISSING
        if is_missing.any():
            if self.missing:
                codes[is_missing] = self.missing_code
            else:
                n = int(is_missing.sum())
                problems.insert(0, (
                    f"column '{self.name}' has missing values (empty cells) in {_rows(n)}. "
                    "Set missing: true for this column in the schema, or fill or drop those rows."))
        return codes, problems

    def _encode_categorical(self, values: pd.Series):
        try:
            inverse, uniques = pd.factorize(values, use_na_sentinel=True)
        except TypeError:  # unhashable cells: lists, dicts, arrays
            raise _not_single_values(self.name, values) from None
        index = _category_index(self.categories)
        # One slot per distinct value, plus a last slot that inverse == -1 (NaN) picks.
        per_unique = np.full(len(uniques) + 1, _IS_MISSING, dtype=np.int64)
        for i, value in enumerate(uniques):
            if not _is_blank(value):
                per_unique[i] = _lookup(index, value, self.categories)
        codes = per_unique[inverse]
        problems = []
        unknown = np.flatnonzero(per_unique[:-1] == _NOT_IN_SCHEMA)
        if unknown.size:
            counts = np.bincount(inverse[inverse >= 0], minlength=len(uniques))
            pairs = [(uniques[i], int(counts[i])) for i in unknown]
            problems.append(
                f"column '{self.name}' has values not in the schema: {_format_examples(pairs)}. "
                "Add them to the column's categories in the schema, or fix the data."
                + _lost_zeros_note([v for v, _ in pairs], self.categories))
        return codes, problems

    def _encode_numeric(self, values: pd.Series):
        problems = []
        if pd.api.types.is_numeric_dtype(values.dtype):
            x = values.to_numpy(dtype=float, na_value=np.nan)
            missing = np.isnan(x)
        else:
            raw = values.astype(object)
            x = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            missing = raw.isna().to_numpy(copy=True)
            failed = np.isnan(x) & ~missing
            if failed.any():
                blank = raw[failed].map(_is_blank).to_numpy(dtype=bool)
                missing[np.flatnonzero(failed)[blank]] = True
                text = raw[failed][~blank]
                if len(text):
                    problems.append(
                        f"column '{self.name}' is numeric but has non-numeric values: "
                        f"{_format_examples(_value_counts(text))}. "
                        "Fix those cells, or declare the column categorical.")
        codes = np.full(len(x), _IS_MISSING, dtype=np.int64)
        infinite = np.isinf(x)
        if infinite.any():
            problems.append(
                f"column '{self.name}' has infinite values in {_rows(int(infinite.sum()))}. "
                "Replace them with finite numbers or empty cells.")
        finite = np.isfinite(x)
        if self.clip:
            x = np.where(finite, np.clip(x, self.lower, self.upper), x)
        outside = finite & ((x < self.lower) | (x > self.upper))
        if outside.any():
            problems.append(
                f"column '{self.name}' has values outside the bounds "
                f"[{self.lower}, {self.upper}]: {_format_examples(_value_counts(x[outside]))}. "
                "Widen the bounds (lower/upper) in the schema, or set \"clip\": true on the "
                "column to put such values in its first or last bin.")
        inside = finite & ~outside
        codes[inside] = self.bin_codes(x[inside])
        codes[~finite & ~missing] = _NOT_IN_SCHEMA
        codes[outside] = _NOT_IN_SCHEMA
        return codes, problems

    def _decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """Values for ``codes`` (already checked to be in range)."""
        present = codes != self.missing_code if self.missing else np.ones(len(codes), bool)
        if self.kind == "categorical":
            cats = self.categories
            if set(cats) == BOOLEAN_CATEGORIES:
                # a true/false column (the schema writes its values as text): booleans again
                truth = np.array([c == "True" for c in cats])[np.where(present, codes, 0)]
                return pd.Series(pd.array(truth, dtype="boolean")).mask(~present) \
                    if self.missing else pd.Series(truth)
            if all(isinstance(c, str) for c in cats):
                table = np.array(cats + (None,), dtype=object)
                return pd.Series(table[np.where(present, codes, len(cats))], dtype="str")
            values = np.array(cats)[np.where(present, codes, 0)]
        elif self.integer:
            low, high = self._integer_ranges()
            picked = np.where(present, codes, 0)
            values = rng.integers(low[picked], high[picked] + 1)
        else:
            picked = np.where(present, codes, 0)
            values = self._uniform_draws(picked, rng)
            if self.decimals is not None:
                values = self._round_draws(picked, values, rng)
        if values.dtype.kind in "iu":
            if self.missing:
                return pd.Series(pd.array(values, dtype="Int64")).mask(~present)
            return pd.Series(values.astype(np.int64))
        return pd.Series(np.where(present, values, np.nan).astype(float))

    def _uniform_draws(self, picked: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A real value uniform inside the bin of every code in ``picked``."""
        edges = self.bin_edges()
        lo, hi = edges[picked], edges[picked + 1]
        values = lo + (hi - lo) * rng.random(len(picked))
        # Keep draws inside half-open bins despite rounding (the last bin is closed).
        spill = (values >= hi) & (picked < self.bins - 1)
        values[spill] = np.nextafter(hi[spill], lo[spill])
        return values

    def _round_draws(self, picked: np.ndarray, values: np.ndarray,
                     rng: np.random.Generator) -> np.ndarray:
        """Multiples of ``10**-decimals`` drawn uniformly inside each code's bin;
        ``values`` (real draws) where a bin holds no multiple, or where the
        decimal's nearest float falls outside the bin."""
        scale = 10.0 ** self.decimals
        low, high = self._integer_ranges(scale)
        has = low[picked] <= high[picked]
        out = values.copy()
        if has.any():
            k = rng.integers(low[picked][has], high[picked][has] + 1)
            out[has] = k / scale
        stray = self.bin_codes(out) != picked
        out[stray] = values[stray]
        return out

    def _integer_ranges(self, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
        """Smallest and largest whole number ``k`` with ``k / scale`` in every bin
        (low > high if none); ``scale=1``: the bin's whole numbers."""
        edges = self.bin_edges() * scale
        low = np.ceil(edges[:-1])
        high = np.ceil(edges[1:]) - 1
        high[-1] = np.floor(edges[-1])  # the last bin includes its upper edge
        return low.astype(np.int64), high.astype(np.int64)

    def _whole_in_every_bin(self) -> bool:
        low, high = self._integer_ranges()
        return bool(np.all(low <= high))


# ---------------------------------------------------------------- schemas


@dataclass(frozen=True)
class Schema:
    """The columns of a table and where their domain came from.

    ``source`` is "declared" (a schema file or explicit spec), "public"
    (inferred from public data) or "private" (inferred from the private data:
    the domain itself is then NOT privacy-protected).
    """

    columns: tuple[ColumnSpec, ...]
    source: Literal["declared", "public", "private"] = "declared"

    def __post_init__(self):
        cols = tuple(self.columns)
        if not cols:
            raise SchemaError("the schema has no columns.", hint="Declare at least one column.")
        if not all(isinstance(c, ColumnSpec) for c in cols):
            raise SchemaError("schema columns must be ColumnSpec objects.")
        dupes = [n for n, k in Counter(c.name for c in cols).items() if k > 1]
        if dupes:
            raise SchemaError(f"duplicate column names in the schema: {_show_list(dupes)}.",
                              hint="Give every column a distinct name.", column=dupes[0])
        if self.source not in SOURCES:
            raise SchemaError(f"unknown schema source {self.source!r}.",
                              hint=f"Use one of: {', '.join(SOURCES)}.")
        object.__setattr__(self, "columns", cols)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def sizes(self) -> dict[str, int]:
        """Number of codes per column, in column order (Private-PGM's domain)."""
        return {c.name: c.size for c in self.columns}

    @property
    def domain_protected(self) -> bool:
        """False when the domain was read off the private data."""
        return self.source != "private"

    def column(self, name: str) -> ColumnSpec:
        for col in self.columns:
            if col.name == name:
                return col
        raise SchemaError(f"unknown column '{name}'.",
                          hint=f"Known columns: {_show_list(self.names)}.", column=name)

    def project(self, names: Iterable[str]) -> "Schema":
        """A schema with only ``names``, in the order given."""
        names = [names] if isinstance(names, str) else list(names)
        return Schema(tuple(self.column(n) for n in names), source=self.source)

    def without_flag(self, column: str) -> "Schema":
        """This schema without the public-row flag column ``column`` (itself
        when it has no such column); SchemaError if the flag is its only column."""
        if column not in self.names:
            return self
        keep = [n for n in self.names if n != column]
        if not keep:
            raise SchemaError("the flag column is the only column.", column=column)
        return self.project(keep)

    # -- encoding

    def encode(self, df: pd.DataFrame, *, table_name: str = "data",
               role: str = "table") -> pd.DataFrame:
        """Integer codes (int64) for the schema columns of ``df``, in schema order.

        Columns of ``df`` that are not in the schema are ignored here (a run's
        :func:`~synth_core.backends.inputs.prepare_inputs` refuses them unless they are
        dropped on request, so no column is lost silently). Values that
        do not fit raise DataError naming the table (``f"{role} '{table_name}'"``),
        the column, the number of rows and some example values.
        """
        label = f"{role} '{table_name}'"
        self._check_columns(df, label)
        out, problems, first_bad = {}, [], None
        for col in self.columns:
            codes, col_problems = col._encode(df[col.name])
            out[col.name] = codes
            if col_problems and first_bad is None:
                first_bad = col.name
            problems += col_problems
        if problems:
            if len(problems) == 1:
                message = f"{label}: {problems[0]}"
            else:
                lines = "\n".join(f"  - {p}" for p in problems)
                message = f"{label} does not fit the schema ({len(problems)} problems):\n{lines}"
            raise DataError(message, column=first_bad,
                            hint=PRIVATE_VALUES_NOTE if role == "private table" else None)
        return pd.DataFrame(out, index=df.index)

    def check_fits(self, df: pd.DataFrame, table_name: str, *, role: str = "table") -> None:
        """Raise DataError, as ``encode`` would, if ``df`` does not fit."""
        self.encode(df, table_name=table_name, role=role)

    def _check_columns(self, df: pd.DataFrame, label: str) -> None:
        absent = [n for n in self.names if n not in df.columns]
        if absent:
            raise DataError(
                f"{label} is missing schema column(s) {_show_list(absent)}.",
                hint=(f"Its columns are: {_show_list(df.columns)}. Column names are "
                      "case-sensitive; rename the columns or drop them from the schema."),
                column=absent[0])
        doubled = sorted({n for n in df.columns[df.columns.duplicated()] if n in self.names})
        if doubled:
            raise DataError(f"{label} has more than one column named {_show_list(doubled)}.",
                            hint="Rename or drop the duplicates.", column=doubled[0])

    def decode(self, codes: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """Values for integer ``codes``: a category, a value drawn uniformly
        inside the bin (a whole number for integer columns), or NaN/None for
        the missing code. ``encode(decode(codes)) == codes``.
        """
        self._check_columns(codes, "codes table")
        out = {}
        for col in self.columns:
            values = codes[col.name].to_numpy()
            if values.dtype.kind not in "iu":
                if values.dtype.kind != "f" or not np.all(np.mod(values, 1) == 0):
                    raise DataError(f"codes for column '{col.name}' must be whole numbers.",
                                    column=col.name)
            values = values.astype(np.int64)
            if len(values) and (values.min() < 0 or values.max() >= col.size):
                raise DataError(
                    f"codes for column '{col.name}' must lie in 0..{col.size - 1}, "
                    f"found {int(values.min())}..{int(values.max())}.", column=col.name)
            out[col.name] = col._decode(values, rng).set_axis(codes.index)
        return pd.DataFrame(out, index=codes.index)

    # -- JSON

    def to_json(self) -> dict:
        """The schema-file format: ``{"columns": [...]}``. A domain read off the
        private table also gets a ``review`` block that lists every column as read
        off it, so the file keeps saying so: read back (:meth:`from_json`, a run's
        ``--schema``) it is still not privacy-protected until someone replaces the
        values with public knowledge and deletes the block."""
        out = {"columns": [c.to_json() for c in self.columns]}
        if self.source == "private":
            out = {REVIEW_KEY: {"warning": PRIVATE_FILE_WARNING,
                                "read_off_private": list(self.names)}, **out}
        return out

    def _repr_html_(self) -> str:
        """Jupyter's view: a table of the columns and their domains."""
        from .display import schema_html
        return schema_html(self)

    @classmethod
    def from_json(cls, obj, *, source: str = "declared") -> "Schema":
        """A schema from the schema-file format, or from Private-PGM's domain
        format ``{"age": 32, "sex": 2}`` (integer-coded categorical columns).
        """
        if not isinstance(obj, dict):
            raise SchemaError("a schema must be a JSON object.",
                              hint='Use {"columns": [...]} or a Private-PGM domain {"col": size}.')
        if isinstance(obj.get("columns"), list):
            extra = [k for k in obj if k not in ("columns", REVIEW_KEY)]
            if extra:
                raise SchemaError(f"unknown top-level key(s) {_show_list(extra)}.",
                                  hint=f'A schema file has "columns" and, optionally, '
                                       f'"{REVIEW_KEY}".')
            if _unreviewed_private(obj.get(REVIEW_KEY)):
                source = "private"
            return cls(tuple(ColumnSpec.from_json(c) for c in obj["columns"]), source=source)
        return cls(tuple(_domain_column(n, s) for n, s in obj.items()), source=source)


def _unreviewed_private(review) -> list[str]:
    """The columns a schema file's review block lists as read off the private
    table (the file then still leaks them: its domain is not privacy-protected)."""
    if review is None:
        return []
    if not isinstance(review, dict):
        raise SchemaError(f"'{REVIEW_KEY}' must be a JSON object.",
                          hint=f"Delete the '{REVIEW_KEY}' block once the schema is reviewed.")
    names = review.get("read_off_private", [])
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise SchemaError(f"'{REVIEW_KEY}.read_off_private' must be a list of column names.")
    return names


def _domain_column(name, size) -> ColumnSpec:
    """A column of Private-PGM's domain format: codes ``0 .. size-1``."""
    _check_column_name(name)
    if not _is_whole(size) or size < 1:
        raise SchemaError(
            f"column '{name}': a Private-PGM domain gives each column its number of codes, "
            f"a whole number of at least 1, not {size!r}.",
            hint='Use {"col": size, ...} or the {"columns": [...]} schema format.', column=name)
    return ColumnSpec(name, "categorical", categories=tuple(range(int(size))))


def declared_schema(value) -> Schema | None:
    """A schema given as a Schema, a schema file path or a JSON-like dict; None for None."""
    if value is None or isinstance(value, Schema):
        return value
    if isinstance(value, (str, Path)):
        return load_schema(value)
    if isinstance(value, dict):
        return Schema.from_json(value)
    from .errors import ConfigError

    raise ConfigError(f"schema must be a Schema, a dict or a path, not {type(value).__name__}.")


def load_schema(path) -> Schema:
    """Read a schema file (either JSON format of ``Schema.from_json``)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SchemaError(f"schema file '{path}' not found.", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SchemaError(f"cannot read schema file '{path}': {exc}.",
                          hint="Save it as UTF-8 JSON.", path=str(path)) from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SchemaError(
            f"schema file '{path}' is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}.", path=str(path)) from exc
    try:
        return Schema.from_json(obj)
    except SchemaError as exc:
        raise SchemaError(f"schema file '{path}': {exc.message}", hint=exc.hint,
                          column=exc.column, path=str(path)) from exc


# ---------------------------------------------------------------- inference


def infer_schema(df: pd.DataFrame, *, source: Literal["public", "private"],
                 max_categories: int = INFER_MAX_CATEGORIES, bins: int = DEFAULT_BINS,
                 numeric_columns: Iterable[str] | None = None,
                 categorical_columns: Iterable[str] | None = None) -> Schema:
    """Read a domain off a table.

    Numeric columns with more than ``max_categories`` distinct values, and
    every column in ``numeric_columns``, become numeric with the observed
    min/max as bounds and ``bins`` bins (``decimals``: the most decimals a
    value has, up to 6); the rest, and every column in
    ``categorical_columns`` whatever its number of values, become categorical
    with their sorted distinct values. Columns with empty cells get a missing
    code. ``source`` says whose data this is; "private" marks the domain as
    not privacy-protected.
    """
    if source not in ("public", "private"):
        raise SchemaError(f"infer_schema source must be 'public' or 'private', not {source!r}.")
    if max_categories < 1 or bins < 1:
        raise SchemaError("max_categories and bins must be at least 1.")
    if len(df) == 0 or len(df.columns) == 0:
        raise DataError("cannot infer a schema from an empty table.",
                        hint="Load a table with at least one row, or declare a schema file.")
    forced = _check_forced(df, numeric_columns, categorical_columns)
    columns = tuple(_infer_column(str(name), df[name], max_categories=max_categories,
                                  bins=bins, force=forced.get(name))
                    for name in df.columns)
    return Schema(columns, source=source)


def _check_forced(df: pd.DataFrame, numeric_columns, categorical_columns) -> dict[str, str]:
    """Column -> the kind the caller chose for it; SchemaError for an unknown
    column or one chosen both numeric and categorical."""
    forced: dict[str, str] = {}
    for kind, names in (("numeric", numeric_columns), ("categorical", categorical_columns)):
        names = list(names or ())
        unknown = [n for n in names if n not in df.columns]
        if unknown:
            raise SchemaError(f"the {kind} columns name unknown column(s) {_show_list(unknown)}.",
                              hint=f"Known columns: {_show_list(df.columns)}.", column=unknown[0])
        both = [n for n in names if forced.get(n, kind) != kind]
        if both:
            raise SchemaError(f"column(s) {_show_list(both)} chosen both numeric and "
                              "categorical.", hint="Choose one kind for each column.",
                              column=both[0])
        forced.update(dict.fromkeys(names, kind))
    return forced


def _infer_column(name: str, values: pd.Series, *, max_categories: int, bins: int,
                  force: str | None = None) -> ColumnSpec:
    present = values.dropna()
    numeric_dtype = (pd.api.types.is_numeric_dtype(values.dtype)
                     and not pd.api.types.is_bool_dtype(values.dtype))
    if not numeric_dtype:
        present = present[~present.map(_is_blank).to_numpy(dtype=bool)]
    missing = len(present) < len(values)
    if len(present) == 0:
        raise SchemaError(f"column '{name}' has no values: every cell is empty.",
                          hint=f"Drop the column ({{drop:{name}}}), or declare it in a schema "
                               "file.", column=name)
    try:
        distinct = pd.unique(present.to_numpy())
    except TypeError:  # unhashable cells: lists, dicts, arrays
        raise _not_single_values(name, present) from None
    if force == "numeric" or (force is None and numeric_dtype and len(distinct) > max_categories):
        return _infer_numeric(name, present, bins=bins, missing=missing)
    if force is None and len(distinct) > max_categories:
        note = _looks_numeric_note(present)
        numeric = (f"Empty those cells and declare it numeric with bins ({{numeric:{name}}}, or "
                   "a schema file), or k" if note else "K")
        raise SchemaError(
            f"column '{name}' has {len(distinct):,} distinct values, more than "
            f"max_categories={max_categories}{note}.",
            hint=f"{numeric}eep every value as a category ({{categorical:{name}}}), or drop the "
                 f"column ({{drop:{name}}}).", column=name)
    if numeric_dtype:
        numbers_ = [_plain(v) for v in distinct]
        if all(float(v).is_integer() for v in numbers_):
            numbers_ = [int(v) for v in numbers_]
        categories = tuple(sorted(numbers_))
    else:
        categories = tuple(sorted({_text_keys(v)[0] for v in distinct}))
    return ColumnSpec(name, "categorical", categories=categories, missing=missing)


def _infer_numeric(name: str, present: pd.Series, *, bins: int, missing: bool) -> ColumnSpec:
    x = pd.to_numeric(present.astype(object), errors="coerce")
    text = present[x.isna().to_numpy()]
    if len(text):
        raise DataError(f"column '{name}' cannot be numeric: it has non-numeric values "
                        f"{_format_examples(_value_counts(text))}.",
                        hint="Fix those cells, or leave the column categorical.", column=name)
    x = x.to_numpy(dtype=float)
    if not np.isfinite(x).all():
        raise DataError(f"column '{name}' has infinite values.",
                        hint="Replace them with finite numbers or empty cells.", column=name)
    lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        raise SchemaError(f"column '{name}' has a single value ({lo:g}), so it cannot be "
                          "numeric (lower must be less than upper).",
                          hint="Leave it categorical.", column=name)
    if np.all(np.mod(x, 1) == 0):  # whole numbers: int bounds, integer decoding if bins allow
        return ColumnSpec(name, "numeric", lower=int(lo), upper=int(hi), bins=bins,
                          missing=missing)
    return ColumnSpec(name, "numeric", lower=lo, upper=hi, bins=bins, missing=missing,
                      integer=False, decimals=decimals_of(x))


#: the most decimals :func:`infer_schema` gives a numeric column (more: real numbers)
INFER_DECIMALS = 6


def decimals_of(x: np.ndarray, most: int = INFER_DECIMALS) -> int | None:
    """The fewest decimals ``d <= most`` that write every value of ``x``
    (``round(v, d) == v`` up to float error), or None if more are needed."""
    scale = np.maximum(np.abs(x), 1.0)
    for d in range(most + 1):
        if np.all(np.abs(np.round(x, d) - x) <= 1e-9 * scale):
            return d
    return None


def _not_single_values(name: str, values: pd.Series) -> DataError:
    """The error for a column whose cells are lists, dicts or arrays."""
    kinds = sorted({type(v).__name__ for v in values
                    if isinstance(v, (list, tuple, dict, set, np.ndarray))})
    return DataError(f"column '{name}' holds {', '.join(kinds) or 'unhashable'} values, not "
                     "single values.", hint="Flatten or drop that column.", column=name)


def _looks_numeric_note(present: pd.Series) -> str:
    """Explain a text column that is mostly numbers (e.g. 'NA' or '?' cells)."""
    text = present[pd.to_numeric(present.astype(object), errors="coerce").isna().to_numpy()]
    if 0 < len(text) <= len(present) / 2:
        return (f"; it looks numeric but has non-numeric cells "
                f"{_format_examples(_value_counts(text))}")
    return ""


# ---------------------------------------------------------------- helpers


def _check_column_name(name) -> None:
    if not isinstance(name, str) or not name.strip():
        raise SchemaError(f"column names must be non-empty text, not {name!r}.")
    if name != name.strip():
        raise SchemaError(f"column name {name!r} has leading or trailing spaces.",
                          hint="Files are loaded with spaces around names removed, so a "
                               "schema names the column without them; rename it in a table "
                               "you pass yourself (df.columns = df.columns.str.strip()) and in "
                               "the schema.", column=name)


def _plain(value):
    """Python scalars for numpy scalars (for JSON and for type checks)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _is_whole(value) -> bool:
    return _is_number(value) and math.isfinite(value) and float(value).is_integer()


def _is_blank(value) -> bool:
    return isinstance(value, str) and not value.strip()


def _category_index(categories: tuple) -> dict:
    """Category -> code. Number categories are keyed by value (1 == 1.0)."""
    if isinstance(categories[0], str):
        return {c: i for i, c in enumerate(categories)}
    return {float(c): i for i, c in enumerate(categories)}


def _lookup(index: dict, value, categories: tuple) -> int:
    """The code of a data value, or _NOT_IN_SCHEMA."""
    value = _plain(value)
    if isinstance(categories[0], str):
        for key in _text_keys(value):
            if key in index:
                return index[key]
        if isinstance(value, bool):  # a CSV's true/false read as bool; category "true"
            matches = [i for c, i in index.items() if c.strip().lower() == str(value).lower()]
            if len(matches) == 1:
                return matches[0]
        return _NOT_IN_SCHEMA
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return _NOT_IN_SCHEMA
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return index.get(float(value), _NOT_IN_SCHEMA)
    return _NOT_IN_SCHEMA


def _lost_zeros_note(unknown: list, categories: tuple) -> str:
    """A sentence for values not in the schema that are categories with their
    leading zeros lost (2134 for "02134"), else ""."""
    if not isinstance(categories[0], str):
        return ""
    stripped = {c.lstrip("0"): c for c in categories if c[:1] == "0" and c.isdigit()}
    lost = [(_text_keys(v)[0], stripped[_text_keys(v)[0]]) for v in unknown
            if _text_keys(v)[0] in stripped]
    if not lost:
        return ""
    value, category = lost[0]
    return (f" The schema writes codes with leading zeros ('{category}') and the data has lost "
            f"them ({value}): keep the file's text (a CSV keeps the codes as written; a "
            "spreadsheet export may not), or write the categories without the zeros.")


def _text_keys(value) -> list[str]:
    """Texts a value may be written as, best first: 1 and 1.0 both read "1"."""
    value = _plain(value)
    if isinstance(value, str):
        return [value, value.strip()]
    if isinstance(value, bool):
        return [str(value)]
    if isinstance(value, numbers.Integral):
        return [str(int(value))]
    if isinstance(value, numbers.Real) and math.isfinite(value) and float(value).is_integer():
        return [str(int(value)), str(value)]
    return [str(value)]


def _value_counts(values) -> list[tuple[object, int]]:
    """(value, rows) pairs, most frequent first."""
    counts = pd.Series(values).value_counts(dropna=False)
    return [(_plain(v), int(n)) for v, n in counts.items()]


def _format_examples(pairs: list[tuple[object, int]]) -> str:
    """``'F' (12 rows), 'X' (1 row)``, with the rest summarised."""
    pairs = sorted(pairs, key=lambda p: -p[1])
    shown = ", ".join(f"{_show(v)} ({_rows(n)})" for v, n in pairs[:_MAX_EXAMPLES])
    if len(pairs) > _MAX_EXAMPLES:
        shown += (f" and {len(pairs) - _MAX_EXAMPLES:,} more values "
                  f"({_rows(sum(n for _, n in pairs))} in all)")
    return shown


def _show(value) -> str:
    value = _plain(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "<empty>"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 40 else text[:37] + "..."


#: said with an error that quotes private values: they are exact, with no noise
PRIVATE_VALUES_NOTE = ("CURATOR-ONLY: the values and row counts in this message come from the "
                       "private table, without noise; keep it out of shared logs and saved "
                       "notebooks.")


def _show_list(values) -> str:
    return ", ".join(_show(v) if not isinstance(v, str) else repr(v) for v in values)


def _rows(n: int) -> str:
    return f"{n:,} row" if n == 1 else f"{n:,} rows"


def _compact_numbers(values: np.ndarray) -> list[str]:
    """Shortest decimals that place every value within 1% of the smallest gap."""
    tolerance = float(np.min(np.diff(values))) / 100
    for digits in range(16):
        rounded = np.round(values, digits)
        if np.all(np.abs(rounded - values) <= tolerance):
            break
    return [_trim(f"{v:.{digits}f}") for v in rounded]


def _trim(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text
