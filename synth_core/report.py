"""Release files: synthetic data, the JSON run report and the privacy statement.

The report holds only releasable values: the configuration, the privacy
statement, the measurement list (clique, source, noise scale, noisy answer),
the round events without their curator-only block, the ledger and the schema.
:func:`check_release` refuses a report that carries a curator-only key.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from .errors import ConfigError, DataError
from .privacy import cdp_epsilon
from .version import __version__

REPORT_FORMAT = "synth-workbench-report/1"

#: Keys a release must not carry: values computed from the private data without
#: noise, and the seed of the noise generator (with it, anyone can regenerate the
#: research-mode noise and subtract it from the noisy answers).
CURATOR_ONLY_KEYS = frozenset({"curator", "scores", "workload_error", "per_marginal_error",
                               "true_error", "public_error", "exact_answer", "seed"})

#: File names ``--out`` may have (synthetic data) and the JSON files' suffix.
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")
JSON_SUFFIXES = (".json",)

#: The warning of a seeded research run's privacy statement.
SEEDED_WARNING = ("WARNING: not fit for publication. The noise came from a seeded pseudo-random "
                  "generator: anyone who learns or guesses the seed can regenerate the noise "
                  "and remove it, recovering the exact private answers. Use release mode "
                  "(no seed) for anything you publish.")

DOMAIN_NOTES = {
    "declared": "The domain (category lists and numeric bounds) was declared in a schema; "
                "it does not depend on the private data.",
    "public": "The domain (category lists and numeric bounds) was read off the public "
              "data{rows}; it does not depend on the private data.",
    "private": "WARNING: domain not privacy-protected. The category lists and numeric bounds "
               "were read off the private data, so the released schema reveals which values "
               "occur in it. Declare a schema from public knowledge to avoid this (a schema "
               "proposed by 'synth schema infer' counts as read off the private data until "
               "its review block is deleted).",
}


def domain_note(source: str, public_rows: str | None = None) -> str:
    """The report's note on where the domain came from; a domain read off public
    rows names them (``public_rows``: their description in the release)."""
    return DOMAIN_NOTES[source].format(rows=f" ({public_rows})" if public_rows else "")


def privacy_statement(*, rho: float, epsilon: float, delta: float, neighbours: str,
                      public_rows: str | None, public_columns=(), private_columns=(),
                      domain_source: str, research_mode: bool, spent: float,
                      seeded: bool = True, conditional_on=(),
                      domain_rows: str | None = None) -> str:
    """The release's privacy statement, in words (``conditional_on``: the public
    columns a conditional run copies from every record into the synthetic data;
    ``domain_rows``: the public rows a domain was read off, named even when the
    mechanism uses them for nothing else)."""
    if public_columns:
        unit = ("replacing the private-column values of one record (bounded DP; the number "
                "of records and every record's public-column values are public)"
                if neighbours == "bounded" else
                "adding or removing one record (unbounded DP)")
    else:
        unit = ("replacing one record (bounded DP; the number of records is public)"
                if neighbours == "bounded" else
                "adding or removing one record (unbounded DP)")
    eps_spent = cdp_epsilon(spent, delta) if spent > 0 else 0.0
    lines = [
        f"This release satisfies {rho:.6g}-zCDP, which implies ({epsilon:g}, {delta:g})-differential "
        f"privacy (exact conversion of Canonne, Kamath and Steinke 2020), for neighbouring "
        f"datasets that differ by {unit}.",
        f"The mechanism spent rho = {spent:.6g} of {rho:.6g} "
        f"(equivalent to epsilon = {eps_spent:.4g} at delta = {delta:g}).",
    ]
    if public_rows:
        lines.append(f"The public rows ({public_rows}) were used without protection: "
                     "the guarantee covers the private table only.")
    if public_columns:
        protected = (" (" + ", ".join(private_columns) + ")") if private_columns else ""
        lines.append("Public columns (" + ", ".join(public_columns) + ") were treated as known "
                     "for every record and used without protection (their marginals are "
                     "measured exactly); the guarantee protects the private columns"
                     + protected + " only.")
    if conditional_on:
        lines.append("Conditional generation: every synthetic record carries one real "
                     "record's own values of " + ", ".join(conditional_on) + ", copied as "
                     "they are (their joint counts equal the private table's exactly); only "
                     "the private columns were generated.")
    lines.append(domain_note(domain_source, domain_rows))
    if spent <= 0:
        lines.append("Nothing was measured or selected from the private table (rho spent = "
                     "0): the synthetic data depend on it only through what the neighbour "
                     "relation makes public.")
    elif research_mode:
        lines.append("Research mode: noise is continuous Gaussian from a seeded pseudo-random "
                     "generator, for reproducible experiments; it is not hardened against "
                     "floating-point attacks."
                     + (" " + SEEDED_WARNING if seeded else
                        " The seed was drawn from the operating system and is not released; "
                        "use release mode for anything you publish."))
    else:
        lines.append("Release mode: every marginal was measured as integer counts with the "
                     "discrete Gaussian mechanism, and every selection's noise was sampled "
                     "exactly, both by OpenDP from a cryptographically secure random source "
                     "(no seed; the run cannot be reproduced).")
    return " ".join(lines)


class ReleaseReport(dict):
    """A release report: a plain dict (JSON as it is) that Jupyter shows as HTML
    (:func:`synth_core.display.report_html`: releasable values only)."""

    def _repr_html_(self) -> str:
        from .display import report_html
        return report_html(self)


def build_report(*, config: dict, privacy: dict, domain_source: str, schema: dict,
                 public: dict, workload: dict, measurements: list, events: list,
                 ledger: dict, synthetic: dict, data: dict,
                 domain_rows: str | None = None) -> dict:
    report = ReleaseReport({
        "format": REPORT_FORMAT,
        "software": {"synth_core": __version__},
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "config": config,
        "privacy": privacy,
        "domain": {"source": domain_source, "protected": domain_source != "private",
                   "note": domain_note(domain_source, domain_rows)},
        "data": data,
        "public_information": public,
        "workload": workload,
        "measurements": measurements,
        "rounds": events,
        "ledger": ledger,
        "schema": schema,
        "synthetic": synthetic,
    })
    check_release(report)
    return report


#: a seed written into text ("seed=3", "seed: 3"): a release's strings must not carry one
_SEED_IN_TEXT = re.compile(r"\bseed\s*[=:]\s*-?\d")


#: keys whose values are the data's own names and values (columns, categories), where a
#: text such as "seed: 3" is data, not a run's seed
_DATA_TEXT_KEYS = frozenset({"schema", "categories", "columns", "dropped_columns"})


def reads_as_seed(text: str | None) -> bool:
    """Whether ``text`` names a seed as :func:`check_release` reads it ("seed=3")."""
    return _SEED_IN_TEXT.search(text or "") is not None


#: what a release shows instead of a stored name that reads as a seed
WITHHELD_SEED_TEXT = "(withheld: it reads as a seed)"


def refuse_seed_text(text: str | None, what: str, hint: str) -> None:
    """ConfigError for a name the user gave that a release would carry (an account's
    label, the public rows' name) and :func:`check_release` would refuse as naming
    a seed; raised before anything is reserved or spent, not after the run."""
    found = _SEED_IN_TEXT.search(text or "")
    if found:
        raise ConfigError(f"The {what} {text!r} reads as a seed ({found.group(0)!r}): release "
                          "reports carry it, and a release may name no seed (a seed regenerates "
                          "a research run's noise).", hint=hint)


def check_release(obj, path: str = "report", *, texts: bool = True) -> None:
    """Raise if a release object contains a curator-only key anywhere, or a seed
    written into one of its strings (a label, a history entry; not the data's own
    names and values under :data:`_DATA_TEXT_KEYS`)."""
    if isinstance(obj, str):
        if texts and _SEED_IN_TEXT.search(obj):
            raise ConfigError(f"Refusing to release {path}: its text names a seed ({obj!r}), "
                              "which regenerates a research run's noise.")
        return
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in CURATOR_ONLY_KEYS:
                raise ConfigError(f"Refusing to release {path}.{key}: it is a curator-only value.")
            check_release(value, f"{path}.{key}", texts=texts and key not in _DATA_TEXT_KEYS)
        if obj.get("domain", {}).get("source") == "private" and "WARNING" not in obj["domain"].get("note", ""):
            raise ConfigError("A release with a private-data-derived domain must carry the warning.")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            check_release(value, f"{path}[{i}]", texts=texts)


def check_output_path(path, suffixes: tuple[str, ...], role: str) -> Path:
    """``path`` as a Path, or DataError before anything is spent or written: its
    name must end in one of ``suffixes``, it must not be a folder, and its
    nearest existing parent must be a writable folder (missing folders below it
    are created when the file is written)."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"Cannot write {role} '{path}': it is a folder.",
                        hint=f"Give a file name ending in {' or '.join(suffixes)}.",
                        path=str(path))
    if not path.name.lower().endswith(suffixes):
        raise DataError(f"Cannot write {role} '{path}': unsupported file type.",
                        hint=f"Use a file name ending in {' or '.join(suffixes)}.", path=str(path))
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise DataError(f"Cannot write {role} '{path}': '{parent}' is not a folder.",
                        path=str(path))
    try:        # a real file, not os.access: a read-only or odd file system says no here
        tempfile.TemporaryFile(dir=parent).close()
    except OSError as exc:
        raise DataError(f"Cannot write {role} '{path}': folder '{parent}' does not take new "
                        f"files ({exc.strerror or exc}).",
                        hint="Choose a folder you can write to.", path=str(path)) from None
    if path.is_file() and _is_budget_account(path):
        raise DataError(f"Cannot write {role} '{path}': it is a budget account, whose history "
                        "would be lost.", hint="Give another file name.", path=str(path))
    return path


#: a JSON file larger than this is not read to see whether it is a budget account
_ACCOUNT_MAX_BYTES = 64 << 20


def _is_budget_account(path: Path) -> bool:
    """Whether the file is a budget account or a pointer to one (a JSON object whose
    ``format`` says so, whatever the order of its keys)."""
    try:
        with open(path, "rb") as fh:       # a table (or anything not a JSON object) at once
            head = fh.read(64).lstrip()
        if path.stat().st_size > _ACCOUNT_MAX_BYTES or not head.startswith(b"{"):
            return False
        state = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(state, dict) and str(state.get("format", "")).startswith(
        ("synth-budget-account/", "synth-budget-pointer/"))


def check_distinct(paths, inputs: dict[str, object] | None = None) -> None:
    """DataError if two outputs would go to the same file, or an output to one of the
    run's ``inputs`` (what the input is -> its path, existing or still to be made, such
    as a new budget file; a value that is not a path is skipped)."""
    seen: dict[Path, str] = {}
    for path in paths:
        key = Path(path).resolve()
        if key in seen:
            raise DataError(f"Two outputs would be written to '{path}'.",
                            hint="Give each output its own file name.", path=str(path))
        seen[key] = str(path)
    for what, source in (inputs or {}).items():
        if not isinstance(source, (str, Path)):
            continue
        for key, path in seen.items():
            if key == Path(source).resolve() or (key.exists() and Path(source).is_file()
                                                 and os.path.samefile(key, source)):
                raise DataError(f"Cannot write '{path}': it is {what} ('{source}'), which the "
                                "output would replace.",
                                hint="Give the output another file name.", path=str(path))


def write_all(files) -> None:
    """Write every ``(path, bytes)`` of ``files``, all or nothing.

    Each file is first written in full to a temporary file beside its target;
    only when all are complete are they renamed onto their targets, each
    existing target first kept under a second name (a hard link). If a rename
    fails, the targets already replaced get their old files back (or are
    removed, if they were new), so a release is never left with its data and
    without its report. The temporary files are removed in every case; an
    ``OSError`` becomes a DataError naming the path.
    """
    staged: list[tuple[str, Path]] = []
    placed: list[tuple[Path, str | None]] = []    # (target, its old file's second name)
    current = None
    try:
        for path, data in files:
            current = path = Path(path)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
            staged.append((tmp, path))
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
        for tmp, path in staged:
            current = path
            kept = _keep_old(path, f"{tmp}.old")
            os.replace(tmp, path)
            placed.append((path, kept))
    except OSError as exc:
        for path, kept in reversed(placed):     # the targets replaced before the failure
            if kept is not None:
                os.replace(kept, path)
            elif path.is_file():
                path.unlink()
        raise DataError(f"Cannot write '{current}': {exc.strerror or exc}.",
                        path=str(current)) from None
    finally:
        for tmp, _ in staged:
            for leftover in (tmp, f"{tmp}.old"):
                if os.path.exists(leftover):
                    os.unlink(leftover)


def _keep_old(path: Path, second_name: str) -> str | None:
    """Keep an existing file ``path`` also under ``second_name`` (a hard link; a copy
    on a file system without them), so that it can be put back; None for no file."""
    if not path.is_file():
        return None
    try:
        os.link(path, second_name)
    except OSError:
        shutil.copyfile(path, second_name)
    return second_name


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename."""
    write_all([(path, data)])


def json_bytes(obj) -> bytes:
    """``obj`` as indented UTF-8 JSON."""
    return (json.dumps(obj, indent=2) + "\n").encode("utf-8")


def write_json(path, obj) -> None:
    atomic_write_bytes(Path(path), json_bytes(obj))


#: A plain decimal number (e.g. -3.5 or +1e-3): left alone by the CSV export.
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def _neutralise(value):
    """Prefix a text cell a spreadsheet would run as a formula (starting with
    = + - @ tab or CR) with a single quote, unless it is a plain decimal number
    (so "-inf", "-1_0" or "\t-3", which Python's float() accepts, are quoted)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r") \
            and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def table_bytes(path, df: pd.DataFrame) -> bytes:
    """Synthetic data as the bytes of a CSV (formula-like cells neutralised) or
    Parquet file, chosen by the name of ``path``."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        import io
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        return buf.getvalue()
    if name.endswith(".csv"):
        # number columns are written as numbers and never quoted
        safe = df.copy()
        for col in safe.columns:
            dtype = safe[col].dtype
            if isinstance(dtype, pd.CategoricalDtype):
                safe[col] = safe[col].astype(object).map(_neutralise)
            elif dtype == object or pd.api.types.is_string_dtype(dtype):
                safe[col] = safe[col].map(_neutralise)
        safe.columns = [_neutralise(c) for c in safe.columns]
        # CRLF line ends (RFC 4180): the csv writer then also quotes cells that
        # hold a bare CR, which a spreadsheet would otherwise split into a new
        # row whose first cell could start a formula
        return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")
    raise DataError(f"Cannot write '{path}': unsupported file type.",
                    hint="Use a .csv or .parquet file name.", path=str(path))


def write_table(path, df: pd.DataFrame) -> None:
    """Write synthetic data as CSV (formula-like cells neutralised) or Parquet."""
    atomic_write_bytes(Path(path), table_bytes(path, df))
