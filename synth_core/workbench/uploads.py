"""Reading what a browser uploads: tables (CSV/Parquet) and schema JSON files."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

import pandas as pd

from ..errors import DataError, SchemaError
from ..schema import Schema
from ..tables import CSV_SUFFIXES, PARQUET_SUFFIXES, load_table


def upload_label(filename) -> str:
    """A printable label for an uploaded file's name: its last path component,
    without NUL or other control characters (``upload`` if nothing is left)."""
    text = "".join(ch for ch in str(filename or "") if ch.isprintable())
    last = re.split(r"[\\/]", text)[-1].strip()
    return last if last not in ("", ".", "..") else "upload"


def read_upload(filename: str, content: bytes) -> pd.DataFrame:
    """Read uploaded bytes. The browser's file name only picks the format (its
    suffix) and labels errors: the bytes are saved as ``upload<suffix>`` in a
    fresh temporary folder, so no name (``..``, ``a/..``, NUL bytes) can point
    anywhere else."""
    label = upload_label(filename or "upload.csv")
    lower = label.lower()
    suffix = next((sfx for sfx in sorted(CSV_SUFFIXES + PARQUET_SUFFIXES, key=len, reverse=True)
                   if lower.endswith(sfx)), None)
    if suffix is None:
        raise DataError(f"cannot read '{label}': unsupported file type.",
                        hint=f"Upload a {', '.join(CSV_SUFFIXES + PARQUET_SUFFIXES)} file.")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"upload{suffix}"
        path.write_bytes(content)
        return load_table(path, name=label)


def parse_schema_upload(filename: str, content: bytes) -> Schema:
    """An uploaded schema JSON file as a Schema (SchemaError if it is not valid JSON)."""
    try:
        obj = json.loads(content.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaError(f"schema file '{filename}' is not valid JSON: {exc}.",
                          hint="Upload a JSON schema ({\"columns\": [...]}).") from None
    return Schema.from_json(obj)
