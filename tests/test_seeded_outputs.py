"""Seeded research runs give the same outputs as the stored golden digests.

Restructuring the library (how inputs reach a mechanism, how a round is
built, how a mechanism is dispatched) must not change what a seeded run
produces. Each case runs one mechanism with a fixed seed on a small table and
compares a digest of everything the run releases or decides: the synthetic
records, the noisy measurements (rounded to 9 significant digits), the ledger,
the round events and the rest of the report (timings and clock left out). ``python tests/test_seeded_outputs.py --write`` stores
new digests; do that only for a change meant to alter outputs, and say so in
the commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from synth_core import Synthesizer
from tiny_tables import FIT, GEM_TINY, PRIVATE, PUBLIC, SCHEMA, SHIFTED_PUBLIC

GOLDEN = Path(__file__).parent / "golden" / "seeded_outputs.json"

#: case -> (mechanism, settings, run arguments)
CASES = {
    "aim": ("aim", dict(rounds=6, **FIT), {}),
    "aim-unbounded": ("aim", dict(rounds=6, neighbours="unbounded", **FIT), {}),
    "aim-conditional": ("aim", dict(rounds=6, conditional=True, **FIT), {"public_columns": ["a", "b"]}),
    "mwem-pgm": ("mwem-pgm", dict(rounds=3, **FIT), {}),
    "jam-pgm": ("jam-pgm", dict(rounds=3, **FIT), {"public": SHIFTED_PUBLIC}),
    "jam-pgm-close-public": ("jam-pgm", dict(rounds=3, **FIT), {"public": PUBLIC}),
    "jam-pgm-duckdb": ("jam-pgm", dict(rounds=3, **FIT), {"public": SHIFTED_PUBLIC, "backend": "duckdb"}),
    "vjam-pgm": ("vjam-pgm", dict(rounds=3, **FIT), {"public_columns": ["a", "b"]}),
    "vjam-pgm-conditional": ("vjam-pgm", dict(rounds=3, conditional=True, **FIT),
                             {"public_columns": ["a", "b"]}),
    "pmw-pub": ("pmw-pub", dict(rounds=4), {"public": PUBLIC}),
    "vpmw": ("vpmw", dict(rounds=4), {"public_columns": ["a", "b"]}),
    "gem": ("gem", dict(rounds=3, **GEM_TINY), {}),
    "gem-pub": ("gem-pub", dict(rounds=3, pretrain_max_steps=10, **GEM_TINY), {"public": PUBLIC}),
    "vgem-pub": ("vgem-pub", dict(rounds=3, pretrain_max_steps=10, **GEM_TINY),
                 {"public_columns": ["a", "b"]}),
    "public-only": ("public-only", {}, {"public": PUBLIC}),
    "mst": ("mst", dict(**FIT), {}),
    "mst-unbounded": ("mst", dict(neighbours="unbounded", **FIT), {}),
    "privbayes-pgm": ("privbayes-pgm", dict(**FIT), {}),
    "privbayes-pgm-degree2": ("privbayes-pgm", dict(degree=2, **FIT), {}),
    "independent": ("independent", dict(**FIT), {}),
}


#: report keys that differ between identical runs (clock, timings, version)
VOLATILE = {"created", "software", "seconds"}


def _round(x):
    if isinstance(x, float):
        return float(f"{x:.9g}")
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_round(v) for v in x]
    return x


def digest(case: str) -> dict:
    """Digests of one seeded run's synthetic data, measurements, ledger and events."""
    mechanism, settings, run_args = CASES[case]
    with tempfile.TemporaryDirectory() as folder:
        data = PRIVATE
        if run_args.get("backend", "memory") != "memory":  # an out-of-core backend reads files
            data = Path(folder) / "private.parquet"
            PRIVATE.to_parquet(data)
            public = Path(folder) / "public.parquet"
            run_args["public"].to_parquet(public)
            run_args = {**run_args, "public": public, "data_name": "private", "public_name": "public"}
        result = Synthesizer(mechanism, epsilon=1.0, seed=7, **settings).fit(
            data, schema=SCHEMA, **run_args)
    report = result.report

    def h(obj) -> str:
        text = obj if isinstance(obj, str) else json.dumps(_round(obj), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    rounds = [{k: v for k, v in event.items() if k not in VOLATILE} for event in report["rounds"]]
    rest = {k: v for k, v in report.items()
            if k not in VOLATILE and k not in ("measurements", "ledger", "rounds")}
    return {
        "synthetic": h(result.synthetic.to_csv(index=False)),
        "measurements": h(report["measurements"]),
        "ledger": h(report["ledger"]),
        "rounds": h(rounds),
        "report": h(rest),
    }


def _digests_in_fresh_process() -> dict:
    """Every case's digest, computed in a new interpreter with a fixed hash seed.

    The fixed hash seed keeps the digests about the code: tests/test_determinism.py
    checks separately that outputs do not depend on it.
    """
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    out = subprocess.run([sys.executable, __file__, "--print"], env=env, cwd=Path(__file__).parent.parent,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def digests() -> dict:
    return _digests_in_fresh_process()


@pytest.mark.parametrize("case", list(CASES))
def test_seeded_outputs_unchanged(case, digests):
    golden = json.loads(GOLDEN.read_text())
    assert digests[case] == golden[case], (
        f"{case}: a seeded run's outputs changed. If the change is intended, "
        f"rewrite the digests with `python tests/test_seeded_outputs.py --write`.")


if __name__ == "__main__":
    if "--print" in sys.argv:
        print(json.dumps({case: digest(case) for case in CASES}))
    elif "--write" in sys.argv:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(_digests_in_fresh_process(), indent=1) + "\n")
        print(f"wrote {GOLDEN}")
