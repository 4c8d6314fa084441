"""Loading tables and splitting them into private and public parts.

``load_table`` reads CSV (optionally gzipped) and Parquet files and turns
every problem into a DataError that names the file. Every read is bounded:
a file whose decompressed bytes (Parquet: its decoded size) pass
:func:`max_input_bytes` is refused before it is parsed, and every stream a
load or a diagnostic opens counts its decompressed bytes and stops at the
bound, so a small file that expands to gigabytes (a compression bomb) costs
at most one streaming pass. ``PublicInfo`` describes
the public information of a run (public rows and/or public columns); the
column checks here are what a run's input path
(:func:`synth_core.backends.inputs.prepare_inputs`) applies to its tables.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import os
import re
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from .errors import ConfigError, DataError, SchemaError
from .schema import Schema, _format_examples, _show_list

CSV_SUFFIXES = (".csv", ".csv.gz")
PARQUET_SUFFIXES = (".parquet", ".pq")
ENCODINGS = ("utf-8", "utf-8-sig")

#: the default bound on a table file's size once decompressed, in MB (2^20 bytes)
MAX_INPUT_MB_DEFAULT = 2048.0
#: the environment variable that sets the bound (the app's setting)
MAX_INPUT_ENV = "SYNTH_MAX_INPUT_MB"
#: bytes per MB
MB = 2 ** 20
#: chunk size of the streaming passes
_CHUNK = MB

_RAGGED = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


# ---------------------------------------------------------------- input bound

_max_input_mb: float | None = None   # set_max_input_mb's value (None: the environment's)


def _positive_mb(value, what: str) -> float:
    """``value`` as a positive number of MB (ConfigError naming ``what`` if not)."""
    try:
        mb = float(value)
    except (TypeError, ValueError):
        mb = float("nan")
    if not mb > 0 or mb == float("inf"):
        raise ConfigError(f"{what} must be a positive number of MB, got {value!r}.",
                          hint=f"For example {MAX_INPUT_MB_DEFAULT:g}.")
    return mb


def set_max_input_mb(mb: float | None) -> None:
    """Bound every table load of this process to ``mb`` MB decompressed
    (``synth run --max-input-mb``); None goes back to ``$SYNTH_MAX_INPUT_MB``
    or the default."""
    global _max_input_mb
    _max_input_mb = None if mb is None else _positive_mb(mb, "--max-input-mb")


def max_input_mb() -> float:
    """The bound in MB: :func:`set_max_input_mb`'s, else ``$SYNTH_MAX_INPUT_MB``,
    else :data:`MAX_INPUT_MB_DEFAULT` (2048)."""
    if _max_input_mb is not None:
        return _max_input_mb
    raw = os.environ.get(MAX_INPUT_ENV, "").strip()
    return _positive_mb(raw, MAX_INPUT_ENV) if raw else MAX_INPUT_MB_DEFAULT


def max_input_bytes() -> int:
    """The bound in bytes: ``floor(max_input_mb() * 2^20)``."""
    return int(max_input_mb() * MB)


def _too_large(label: str, path: Path, what: str) -> DataError:
    """The one-line refusal of a file past the bound."""
    return DataError(f"'{label}' is larger than the input limit of {max_input_mb():g} MB "
                     f"{what}; it was not loaded.",
                     hint=f"Raise the limit with 'synth run --max-input-mb MB' or the "
                          f"{MAX_INPUT_ENV} environment variable (read by the command line "
                          "and the app; set it where the app starts), or load a smaller "
                          "file.", path=str(path))


class _BoundedReader(io.RawIOBase):
    """A binary stream passing ``raw``'s bytes through and counting them; once
    more than ``limit`` bytes have come through it raises the refusal
    (:func:`_too_large`), so no reader gets more than ``limit`` + one chunk."""

    def __init__(self, raw, limit: int, label: str, path: Path):
        self._raw, self._limit, self._label, self._path = raw, limit, label, path
        self.count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self._raw.readinto(buffer)
        self.count += n
        if self.count > self._limit:
            raise _too_large(self._label, self._path, "decompressed")
        return n

    def close(self) -> None:
        self._raw.close()
        super().close()


def _is_gzip(path: Path) -> bool:
    return path.name.lower().endswith(".gz")


def _open_binary(path: Path, label: str) -> io.BufferedReader:
    """The file's decompressed bytes (gunzipped for ``.gz``), bounded by
    :func:`max_input_bytes`."""
    raw = gzip.open(path, "rb") if _is_gzip(path) else open(path, "rb")
    return io.BufferedReader(_BoundedReader(raw, max_input_bytes(), label, path), _CHUNK)


def _check_csv_size(path: Path, label: str) -> None:
    """Refuse a CSV file past the bound before parsing it: a plain file by its
    size on disk, a gzip file by one streaming pass that counts its
    decompressed bytes in 1 MB chunks and stops at the bound (the gzip
    trailer's size field is not trusted: it is the size modulo 2^32)."""
    if not _is_gzip(path):
        if path.stat().st_size > max_input_bytes():
            raise _too_large(label, path, "on disk")
        return
    with _open_binary(path, label) as handle:
        while handle.read(_CHUNK):
            pass


# ---------------------------------------------------------------- loading


def check_table_file(path: Path, label: str, missing_hint: str | None = None) -> None:
    """DataError unless ``path`` has a CSV/Parquet name and is an existing
    file; ``label`` is how the error names it, ``missing_hint`` what to do
    when it does not exist."""
    if path.is_dir():
        raise DataError(f"cannot read '{label}': it is a folder, not a table file.",
                        hint=f"Give one file ({', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}).",
                        path=str(path))
    if not path.name.lower().endswith(CSV_SUFFIXES + PARQUET_SUFFIXES):
        raise DataError(f"cannot read '{label}': unsupported file type.",
                        hint=f"Supported formats: {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)}.",
                        path=str(path))
    if not path.exists():
        raise DataError(f"file '{label}' not found.", hint=missing_hint, path=str(path))
    if not path.is_file():
        raise DataError(f"'{label}' is not a file.", path=str(path))


def load_table(path, *, name: str | None = None) -> pd.DataFrame:
    """Read a .csv, .csv.gz, .parquet or .pq file into a DataFrame.

    ``name`` is how errors refer to the file (e.g. the original name of an
    upload); it defaults to ``path``. Only empty cells are missing values
    (text such as "NA" is kept as text). Spaces around column names and text
    cells are removed. A CSV column of whole numbers written with leading
    zeros ("02134", a zip or FIPS code) is kept as the file's text. The
    result has a fresh RangeIndex. A file past
    :func:`max_input_bytes` once decompressed is refused (DataError).
    """
    path = Path(path)
    label = name or str(path)
    check_table_file(path, label)
    lower = path.name.lower()
    if lower.endswith(CSV_SUFFIXES):
        df = _read_csv(path, label)
        _refuse_other_separator(df, label, path)
        kind = "a header"
    else:
        df = _read_parquet(path, label)
        kind = "columns"
    df = _clean_cells(df)
    if len(df) == 0:
        raise DataError(f"'{label}' has {kind} but no rows.",
                        hint="Add data rows to the file.", path=str(path))
    return df


#: separators other than the comma that a one-column CSV's header may betray
OTHER_SEPARATORS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _refuse_other_separator(df: pd.DataFrame, label: str, path: Path) -> None:
    """DataError for a CSV read as one column whose header holds another
    separator ("name;age;city"): its records would become one text column."""
    if len(df.columns) != 1:
        return
    header = str(df.columns[0])
    for sep, what in OTHER_SEPARATORS.items():
        if sep in header:
            raise DataError(
                f"'{label}' reads as one column named {header[:60]!r}: it looks separated by "
                f"{what}, not commas.",
                hint="Save it as comma-separated CSV (in Excel: 'CSV UTF-8 (Comma "
                     "delimited)').", path=str(path))


def _read_csv(path: Path, label: str) -> pd.DataFrame:
    gz = _is_gzip(path)
    try:
        _check_csv_size(path, label)
        for encoding in ENCODINGS:
            try:
                return _read_csv_as(path, label, encoding)
            except UnicodeDecodeError:
                continue
    except (OSError, EOFError, zlib.error) as exc:  # damaged or not gzip; unreadable
        what = "a valid gzip file" if gz else "readable"
        raise DataError(f"cannot read '{label}': it is not {what} "
                        f"({str(exc).strip().rstrip('.') or type(exc).__name__}).",
                        hint="Check that the file is complete; a .csv.gz file must be "
                             "gzip-compressed CSV." if gz else "Check the file's permissions.",
                        path=str(path)) from None
    line = _first_undecodable_line(path, label)
    where = f" (line {line})" if line else ""
    looks = _looks_like(path, label)
    raise DataError(f"cannot decode '{label}'{where}: it is not UTF-8 text "
                    f"(tried {', '.join(ENCODINGS)}){looks}.",
                    hint="Save the file as UTF-8 (in Excel: 'CSV UTF-8').", path=str(path))


def _looks_like(path: Path, label: str) -> str:
    """What an undecodable file seems to be, for the error message ("" if unsure)."""
    try:
        with _open_binary(path, label) as handle:
            head = handle.read(4096)
    except (OSError, EOFError, zlib.error):
        return ""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or head[1:64:2].count(0) > 16:
        return "; it looks like UTF-16 or UTF-32 text"
    if head.startswith(b"PAR1"):
        return "; it looks like a Parquet file (name it .parquet)"
    if head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        return "; it looks like an Excel workbook (export it as CSV UTF-8)"
    if head.count(0) > 0:
        return "; it looks like a binary file, not text"
    return ""


def _read_csv_as(path: Path, label: str, encoding: str) -> pd.DataFrame:
    options = dict(encoding=encoding, keep_default_na=False, na_values=[""],
                   index_col=False, low_memory=False)
    try:
        with _open_binary(path, label) as handle:
            header = pd.read_csv(handle, header=None, nrows=1, dtype=str, **options)
        names = _clean_names(header.iloc[0].tolist(), label, path)
        with warnings.catch_warnings(), _open_binary(path, label) as handle:
            # A first data row longer than the header only warns, and loses data.
            warnings.simplefilter("error", pd.errors.ParserWarning)
            df = pd.read_csv(handle, **options)
    except pd.errors.EmptyDataError:
        raise DataError(f"'{label}' is empty: it has no header row.",
                        hint="Check that you picked the right file.", path=str(path)) from None
    except pd.errors.ParserWarning:
        line, fields = _first_long_row(path, label, encoding, len(names))
        raise _ragged_error(label, path, line, fields, len(names)) from None
    except pd.errors.ParserError as exc:
        match = _RAGGED.search(str(exc))
        if match:
            expected, line, saw = map(int, match.groups())
            raise _ragged_error(label, path, line, saw, expected) from None
        raise DataError(f"cannot read '{label}' as CSV: {str(exc).strip().rstrip('.')}.",
                        path=str(path)) from None
    df.columns = names
    return _keep_written_codes(df, path, label, options)


#: a whole number written with a leading zero: "02134", "007"
_LEADING_ZERO = re.compile(r"0\d+")


#: floats hold every whole number up to 2^53 exactly; past it, distinct written
#: numbers can read as one (123456789012345671 and ...664)
EXACT_FLOAT_LIMIT = 2.0 ** 53


def _keep_written_codes(df: pd.DataFrame, path: Path, label: str, options: dict) -> pd.DataFrame:
    """``df`` with the file's text, not numbers, in two kinds of column, read a
    second time as text:

    - whole numbers that the file writes with a leading zero ("02134"): codes
      (zip, FIPS) keep their written form, so categories, encoding and the
      synthetic CSV all read "02134", not 2134;
    - whole numbers written as integers ("123456789012345671") that floats do
      not hold exactly, read as floats because the column has empty cells (long
      account or record codes): as floats, distinct codes would become one value.
      A column that writes them otherwise ("1.3e+16"), or whose integers floats
      hold exactly (10**19), stays numeric."""
    whole = [i for i, name in enumerate(df.columns) if _whole_numbers(df[name])]
    inexact = [i for i, name in enumerate(df.columns) if _past_exact_floats(df[name])]
    zeros = whole if whole and _has_leading_zero_field(path, label) else []
    again = sorted(set(zeros) | set(inexact))
    if not again:
        return df
    with _open_binary(path, label) as handle:
        text = pd.read_csv(handle, usecols=again, dtype=str, **options)
    df = df.copy()
    for i in again:
        cells = text.iloc[:, again.index(i)]
        if (i in inexact and _integers_floats_change(cells)) or \
                (i in zeros and _written_code(cells)):
            df[df.columns[i]] = cells.astype(object)
    return df


#: a whole number written as one: digits, with a sign perhaps
_INTEGER_TEXT = re.compile(r"[+-]?\d+")


def _integers_floats_change(cells: pd.Series) -> bool:
    """Every non-empty text cell is a whole number written as digits, and a float
    does not hold one of them exactly (it would read as another number)."""
    texts = [v.strip() if isinstance(v, str) else v for v in pd.unique(cells.dropna())]
    if not all(isinstance(v, str) and _INTEGER_TEXT.fullmatch(v) for v in texts):
        return False
    return any(int(float(v)) != int(v) for v in texts)


def _past_exact_floats(column: pd.Series) -> bool:
    """A floating-point column with a value past :data:`EXACT_FLOAT_LIMIT`."""
    if not pd.api.types.is_float_dtype(column.dtype):
        return False
    x = column.to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    return bool(len(x)) and float(np.abs(x).max()) >= EXACT_FLOAT_LIMIT


#: a "0" followed by a digit and not preceded by a digit or a point ("02134",
#: not "100" or "0.05"); a literal first, so a search runs at about 1 ms per MB
_LEADING_ZERO_BYTES = re.compile(rb"0(?<![0-9.]0)[0-9]")


def _has_leading_zero_field(path: Path, label: str) -> bool:
    """Whether some field of the file may be a number written with a leading
    zero: one streaming pass over the bytes in 1 MB chunks (each searched with
    the previous chunk's last two bytes), stopping at the first hit. A hit in a
    text field only costs the second read of :func:`_keep_written_codes`."""
    tail = b""
    with _open_binary(path, label) as handle:
        while chunk := handle.read(_CHUNK):
            if _LEADING_ZERO_BYTES.search(tail + chunk):
                return True
            tail = chunk[-2:]
    return False


def _written_code(cells: pd.Series) -> bool:
    """Some text cell is a whole number with a leading zero ("02134")."""
    return any(isinstance(v, str) and _LEADING_ZERO.fullmatch(v.strip()) is not None
               for v in pd.unique(cells.dropna()))


def _whole_numbers(column: pd.Series) -> bool:
    """Every non-empty cell of a numeric column is a whole number."""
    if not pd.api.types.is_numeric_dtype(column.dtype) or pd.api.types.is_bool_dtype(column.dtype):
        return False
    x = column.dropna().to_numpy(dtype=float)
    return bool(len(x)) and bool(np.all(np.isfinite(x)) and np.all(np.mod(x, 1) == 0))


def _ragged_error(label, path, line, fields, expected) -> DataError:
    other = _header_separator(path, label)
    hint = (f"The header is separated by {OTHER_SEPARATORS[other]}, not commas, so the commas "
            "in its rows (decimal commas, say) split them: save it as comma-separated CSV "
            "(in Excel: 'CSV UTF-8 (Comma delimited)')." if other else
            "Every row needs one value per column; check for unquoted commas or a missing "
            "header name.")
    return DataError(f"'{label}' line {line} has {fields} fields, but the header has {expected}.",
                     hint=hint, path=str(path))


def _header_separator(path: Path, label: str) -> str | None:
    """The separator other than the comma that the file's first line uses and the
    comma does not appear in (a semicolon file with decimal commas), or None."""
    try:
        with _open_binary(path, label) as handle:
            first = handle.read(_CHUNK).split(b"\n", 1)[0]
    except (OSError, EOFError, zlib.error):
        return None
    if b"," in first:
        return None
    return next((sep for sep in OTHER_SEPARATORS if sep.encode() in first), None)


def _open_text(path: Path, label: str, encoding: str):
    """The file's decompressed text, bounded as :func:`_open_binary`."""
    return io.TextIOWrapper(_open_binary(path, label), encoding=encoding, newline="")


def _first_long_row(path: Path, label: str, encoding: str,
                    expected: int) -> tuple[int | str, int]:
    """Line number and field count of the first row longer than the header
    (``"?"`` if the csv module cannot find it, e.g. a field past its size limit)."""
    with _open_text(path, label, encoding) as handle:
        reader = csv.reader(handle)
        try:
            next(reader, None)
            for row in reader:
                if len(row) > expected:
                    return reader.line_num, len(row)
        except csv.Error:
            pass
    return "?", expected + 1


def _first_undecodable_line(path: Path, label: str) -> int | None:
    """The line (1-based) of the first byte that is not UTF-8, streaming: the
    bytes are decoded in 1 MB chunks (an incremental decoder carries a
    character split between chunks) and the newlines before the error are
    counted, so it stops at the first bad byte and never holds the file."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    newlines = 0
    with _open_binary(path, label) as handle:
        while True:
            chunk = handle.read(_CHUNK)
            pending = decoder.getstate()[0]   # a character's first bytes, held back
            try:
                decoder.decode(chunk, final=not chunk)
            except UnicodeDecodeError as exc:
                return newlines + (pending + chunk).count(b"\n", 0, exc.start) + 1
            if not chunk:
                return None
            newlines += chunk.count(b"\n")


def _read_parquet(path: Path, label: str) -> pd.DataFrame:
    try:
        df = _read_parquet_bounded(path, label)
    except DataError:
        raise
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read '{label}' as Parquet: {str(exc).rstrip('.')}.",
                        hint="Check that the file is a Parquet file.", path=str(path)) from None
    df = df.reset_index(drop=True)
    df.columns = _clean_names(list(df.columns), label, path)
    for name in df.columns:
        if df[name].dtype == object:
            nested = df[name].map(lambda v: isinstance(v, (list, tuple, dict, set, np.ndarray)))
            if nested.any():
                raise DataError(f"'{label}' column '{name}' holds lists or records (nested "
                                "Parquet values), not single values.",
                                hint="Flatten or drop that column before loading the file.",
                                column=name, path=str(path))
    return df


def _read_parquet_bounded(path: Path, label: str) -> pd.DataFrame:
    """Read a Parquet file within :func:`max_input_bytes`. Refused before
    reading when its footer says more: the data's uncompressed size, or
    8 bytes per value (rows x columns; a run-length or dictionary encoded
    column can be far smaller on disk than in memory). Then read in batches
    of 65,536 rows whose Arrow sizes are added up, stopping at the bound
    (a footer can lie)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    limit = max_input_bytes()
    with pq.ParquetFile(path) as parquet:
        meta = parquet.metadata
        stored = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        if max(stored, 8 * meta.num_rows * meta.num_columns) > limit:
            raise _too_large(label, path, "decoded (from its footer)")
        batches, size = [], 0
        for batch in parquet.iter_batches(batch_size=65_536):
            size += batch.nbytes
            if size > limit:
                raise _too_large(label, path, "decoded")
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=parquet.schema_arrow)
    return table.to_pandas()


def _clean_names(raw: list, label: str, path: Path) -> list[str]:
    """Header names with spaces removed; blank or duplicated names fail."""
    names = ["" if pd.isna(n) else str(n).strip() for n in raw]
    blank = [i + 1 for i, n in enumerate(names) if not n]
    if blank:
        raise DataError(f"'{label}' has blank column names (column {', '.join(map(str, blank))}).",
                        hint="Give every column a name in the header row.", path=str(path))
    doubled = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    if doubled:
        raise DataError(f"'{label}' has duplicated column names: {_show_list(doubled)}.",
                        hint="Rename the columns so that every name is distinct.",
                        path=str(path))
    return names


def _clean_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Strip spaces around text cells; blank cells become NaN. A text column
    that holds only numbers once blanks are gone becomes numeric, unless it
    writes some with leading zeros (codes keep their written form) or floats
    could not tell its numbers apart (past :data:`EXACT_FLOAT_LIMIT`)."""
    df = df.copy()
    for name in df.columns:
        column = df[name]
        if isinstance(column.dtype, pd.StringDtype):
            stripped = column.str.strip()
        elif column.dtype == object:
            stripped = column.map(lambda v: v.strip() if isinstance(v, str) else v)
        else:
            continue
        stripped = stripped.mask(stripped.eq("").fillna(False).astype(bool))
        if not stripped.equals(column) and not _written_code(stripped):
            try:
                numbers = pd.to_numeric(stripped)
            except (ValueError, TypeError):
                numbers = None
            if numbers is not None and not (_past_exact_floats(numbers)
                                            and _integers_floats_change(stripped)):
                stripped = numbers
        df[name] = stripped
    return df


# ---------------------------------------------------------------- public data


@dataclass(frozen=True, eq=False)
class PublicRows:
    """Public records: a separate ``table`` (named ``source_name`` in messages)
    or a boolean ``flag_column`` of the loaded table. Exactly one of the two."""

    table: pd.DataFrame | None = None
    source_name: str | None = None
    flag_column: str | None = None

    def __post_init__(self):
        if (self.table is None) == (self.flag_column is None):
            raise ConfigError("public rows need exactly one of a public table "
                              "or a flag column.")
        if self.table is not None and self.source_name is None:
            object.__setattr__(self, "source_name", "public data")

    @property
    def label(self) -> str:
        """How messages refer to the public rows."""
        if self.table is not None:
            return f"public table '{self.source_name}'"
        return f"public rows (flag column '{self.flag_column}')"

    def split(self, df: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(private rows, public rows). With a flag column, rows flagged true
        are public and the flag column is dropped from both parts."""
        if self.table is not None:
            return df, self.table
        if self.flag_column not in df.columns:
            raise DataError(f"the public-rows flag column '{self.flag_column}' is not in the table.",
                            hint=f"Its columns are: {_show_list(df.columns)}.",
                            column=self.flag_column)
        public = _parse_flags(df[self.flag_column], self.flag_column)
        rest = df.drop(columns=[self.flag_column])
        return (rest[~public].reset_index(drop=True),
                rest[public].reset_index(drop=True))


def _parse_flags(values: pd.Series, column: str) -> np.ndarray:
    """True/false per row from bools, 0/1 or true/false/yes/no text."""
    inverse, uniques = pd.factorize(values, use_na_sentinel=True)
    per_unique = np.array([_flag(v) for v in uniques] + [-1], dtype=np.int8)
    flags = per_unique[inverse]
    bad = flags < 0
    if bad.any():
        counts = pd.Series(values[bad].to_numpy(dtype=object)).value_counts(dropna=False)
        pairs = [(v, int(n)) for v, n in counts.items()]
        raise DataError(
            f"flag column '{column}' has {int(bad.sum()):,} rows that are not true or false: "
            f"{_format_examples(pairs)}.",
            hint="Use true/false, yes/no or 1/0 in every row.", column=column)
    return flags.astype(bool)


def _flag(value) -> int:
    """1 for true, 0 for false, -1 for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, str):
        text = value.strip().lower()
        return 1 if text in _TRUE else 0 if text in _FALSE else -1
    try:
        return {0: 0, 1: 1}.get(float(value), -1)
    except (TypeError, ValueError):
        return -1


@dataclass(frozen=True)
class PublicInfo:
    """The public information of a run: public rows (horizontal) and/or
    public columns (vertical: known for every record)."""

    rows: PublicRows | None = None
    columns: tuple[str, ...] = ()

    def __post_init__(self):
        columns = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        object.__setattr__(self, "columns", columns)

    @property
    def has_public_rows(self) -> bool:
        return self.rows is not None

    @property
    def has_public_columns(self) -> bool:
        return bool(self.columns)

    def validate(self, schema: Schema, allow_all_public: bool = False) -> None:
        """SchemaError if a public column is unknown or repeated, or if every
        column is public (nothing would be left to protect) unless
        ``allow_all_public`` (a run: the mechanism decides, e.g. vJAM-PGM
        warns and spends nothing)."""
        unknown = [c for c in self.columns if c not in schema.names]
        if unknown:
            raise SchemaError(f"public columns not in the schema: {_show_list(unknown)}.",
                              hint=f"Known columns: {_show_list(schema.names)}.",
                              column=unknown[0])
        doubled = list(dict.fromkeys(c for c in self.columns if self.columns.count(c) > 1))
        if doubled:
            raise SchemaError(f"public columns listed twice: {_show_list(doubled)}.",
                              column=doubled[0])
        if set(self.columns) == set(schema.names) and not allow_all_public:
            raise SchemaError("every column is marked public, so there is nothing private "
                              "to protect.", hint="Leave at least one column private.")


# ---------------------------------------------------------------- columns


def check_column_names(df: pd.DataFrame, label: str) -> None:
    """DataError unless every column name of ``df`` (called ``label``) is text and
    distinct; the error names the others."""
    untyped = [c for c in df.columns if not isinstance(c, str)]
    if untyped:
        raise DataError(f"{label} has column names that are not text: "
                        f"{_show_list(untyped)} (a table read without its header "
                        "row, or built from an array?).",
                        hint="Name every column with text, e.g. df.columns = "
                             "[str(c) for c in df.columns], or read the file with its header "
                             "row.", column=str(untyped[0]))
    names = list(df.columns)
    doubled = list(dict.fromkeys(n for n in names if names.count(n) > 1))
    if doubled:
        raise DataError(f"{label} has duplicated column names: {_show_list(doubled)}.",
                        hint="Rename or remove the repeated columns so that every name is "
                             "distinct.", column=doubled[0])


def check_drop_columns(columns, drop: tuple[str, ...], *, table_label: str,
                       flag_column: str | None = None, public_columns=()) -> None:
    """ConfigError unless every column of ``drop`` is a data column of the table
    (``columns``: its names), named once, and neither the flag nor a public column."""
    columns = list(columns)
    unknown = [c for c in drop if c not in columns or c == flag_column]
    if unknown:
        raise ConfigError(f"columns to drop are not data columns of {table_label}: "
                          f"{_show_list(unknown)}.",
                          hint=f"Its columns are: {_show_list(c for c in columns if c != flag_column)}.",
                          column=unknown[0])
    doubled = list(dict.fromkeys(c for c in drop if drop.count(c) > 1))
    if doubled:
        raise ConfigError(f"columns to drop listed twice: {_show_list(doubled)}.",
                          column=doubled[0])
    both = [c for c in drop if c in public_columns]
    if both:
        raise ConfigError(f"columns both dropped and public: {_show_list(both)}.",
                          hint="Drop a column or mark it public, not both.", column=both[0])
    if drop and all(c in drop for c in columns if c != flag_column):
        raise ConfigError(f"every data column of {table_label} is dropped: nothing would be "
                          "synthesised.", hint="Keep at least one column.")


def check_no_column_lost(columns, schema: Schema, *, table_label: str,
                         flag_column: str | None = None, drop: tuple[str, ...] = ()) -> None:
    """DataError if a data column of the private table (``columns``: its names)
    is neither in ``schema`` nor dropped on request: the synthetic data would
    silently lack it. The public-rows flag column is not a data column."""
    lost = [c for c in columns if c not in schema.names and c != flag_column and c not in drop]
    if not lost:
        return
    where = {"public": "the public rows (the domain was read off them)",
             "declared": "the schema",
             "private": "the schema"}[schema.source]
    raise DataError(
        f"{table_label} has column(s) {_show_list(lost)} that are not in {where}; the "
        f"synthetic data would not have them.",
        hint=(f"Add them to the schema ({{schema}}) or to the public table, or drop them "
              f"explicitly with {{drop:{','.join(lost)}}}; the report then lists them as "
              "dropped."),
        column=lost[0])


def without_dropped(schema: Schema, drop: tuple[str, ...]) -> Schema:
    """``schema`` without the dropped columns (itself when it has none of them)."""
    if not any(c in schema.names for c in drop):
        return schema
    keep = [c for c in schema.names if c not in drop]
    if not keep:
        raise SchemaError("every schema column is dropped, so there is nothing to synthesise.",
                          hint="Drop fewer columns.")
    return schema.project(keep)


#: a missing value in a text column, as :func:`canonical_column` writes it
MISSING_TEXT = "\x00missing"


def canonical_column(column: pd.Series):
    """A column's values as content comparisons see them: numbers (and booleans) as
    float64, so that 1 and 1.0 are one value; anything else as text, every missing
    value one token (the budget fingerprint and the public-table check use it)."""
    if pd.api.types.is_bool_dtype(column) or pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(dtype="float64", na_value=np.nan)
    return column.astype("string").fillna(MISSING_TEXT).to_numpy(dtype=object)


def record_hashes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """The sorted 64-bit hashes of ``frame``'s records over ``columns`` (in that order),
    each value as :func:`canonical_column` sees it: equal for two tables that hold
    the same records, however their rows are ordered or their numbers written."""
    if not len(columns):
        return np.zeros(0, dtype=np.uint64)
    canonical = pd.DataFrame({k: canonical_column(frame[c]) for k, c in enumerate(columns)})
    return np.sort(pd.util.hash_pandas_object(canonical, index=False).to_numpy())


def same_records(table: pd.DataFrame, frame: pd.DataFrame) -> bool:
    """Whether ``table`` holds exactly ``frame``'s records, on ``frame``'s columns (the
    same rows as a multiset, whatever their order or number format)."""
    return len(frame) == len(table) and shared_records(table, frame) == len(frame)


def shared_records(table: pd.DataFrame, frame: pd.DataFrame) -> int:
    """How many of ``frame``'s rows are records of ``table`` (on ``frame``'s columns, as
    multisets: a record twice in ``frame`` counts twice only if ``table`` has it twice).
    CURATOR-ONLY: a count over the private table."""
    columns = sorted(frame.columns, key=str)
    if not set(columns) <= set(table.columns):
        return 0
    mine, theirs = (np.unique(record_hashes(t, columns), return_counts=True)
                    for t in (table, frame))
    _, i, j = np.intersect1d(mine[0], theirs[0], return_indices=True)
    return int(np.minimum(mine[1][i], theirs[1][j]).sum())


def private_as_public_error(public_label: str, private_name: str) -> ConfigError:
    """The refusal of a public table that is the private one."""
    return ConfigError(
        f"The public table ({public_label}) holds the same records as the private table "
        f"'{private_name}'. Public rows are used, and by the public-only baseline released, "
        "without any protection: this would publish the private table.",
        hint="Give a public table that is public knowledge (another source, an earlier "
             "release), or leave it out.")
