"""Start-up: what ``import synth_core``, ``synth --help`` and the workbench's
first page import, each checked in a fresh Python process.

The facade (``synth_core/__init__.py``) and the mechanism registry import on
first use; the CLI's parser names the mechanisms without importing one. These
tests pin which packages each entry point loads (no timings: those are in
``benchmarks/startup.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: packages no entry point of this file may import before a run needs them
HEAVY = ("jax", "mbi", "torch", "pyspark", "duckdb", "opendp", "scipy")
#: the facade and ``synth --help`` import no third-party package at all
THIRD_PARTY = HEAVY + ("numpy", "pandas", "pyarrow", "plotly", "streamlit")

#: prints, as the last line, the JSON list of the top-level packages (and the
#: synth_core modules) the process has imported
REPORT = ("import sys, json\n"
          "print(json.dumps(sorted({m if m.startswith('synth_core') else m.split('.')[0]"
          " for m in list(sys.modules)})))\n")


def fresh(code: str, timeout: float = 300) -> tuple[set[str], str]:
    """Run ``code`` then :data:`REPORT` in a new interpreter from the repository
    root: (the modules it imported, what it printed before the report)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code + "\n" + REPORT], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    *printed, last = out.stdout.strip().splitlines()
    return set(json.loads(last)), "\n".join(printed)


def cli(*argv: str) -> str:
    """Code that runs ``synth *argv`` in-process (``--help`` exits with status 0)."""
    return ("from synth_core.cli import main\n"
            f"try:\n    main({list(argv)!r})\nexcept SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code\n")


def test_import_synth_core_imports_no_third_party_package():
    modules, _ = fresh("import synth_core")
    assert modules & set(THIRD_PARTY) == set()
    assert {m for m in modules if m.startswith("synth_core.")} <= {"synth_core.errors",
                                                                  "synth_core.version"}


def test_synth_help_imports_no_engine_and_lists_every_command():
    modules, printed = fresh(cli("--help"))
    assert modules & set(THIRD_PARTY) == set()
    assert not any(m.startswith(("synth_core.engine", "synth_core.api", "synth_core.mechanisms."))
                   for m in modules)
    from synth_core.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert sorted(sub.choices) == ["run", "samples", "schema", "sweep", "whatif"]
    for command in sub.choices:
        assert command in printed
    assert "--help" in printed


def test_parsing_a_run_command_line_imports_no_mechanism():
    code = ("from synth_core.cli import build_parser\n"
            "args = build_parser().parse_args(['run', '--sample', 'titanic', '--mechanism', "
            "'gem', '--option', 'lr=0.1'])\n"
            "print(args.mechanism, args.option)\n")
    modules, printed = fresh(code)
    assert printed == "gem ['lr=0.1']"
    assert not any(m.startswith("synth_core.mechanisms.") for m in modules)
    assert modules & set(THIRD_PARTY) == set()


def test_synth_run_help_lists_every_option_and_every_mechanism_option():
    from synth_core.cli_parser import OPTION_FLAGS, build_parser
    from synth_core.mechanisms import MECHANISMS

    modules, printed = fresh(cli("run", "--help"))
    assert modules & {"torch", "pyspark", "duckdb", "opendp", "scipy"} == set()
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    flags = {o for a in sub.choices["run"]._actions for o in a.option_strings}
    words = " ".join(printed.split())
    assert {f for f in flags if f not in words} == set()
    listed = words.split(" Options: ", 1)[1]
    for name, cls in MECHANISMS.items():
        for option in cls.options:
            if option.name not in OPTION_FLAGS:
                assert option.name in listed, (name, option.name)
    for name in MECHANISMS:
        assert name in words


def test_the_registry_names_each_class_by_its_own_name():
    from synth_core import mechanisms
    from synth_core.mechanisms import MECHANISMS, REGISTRY

    assert list(MECHANISMS) == list(REGISTRY) and len(MECHANISMS) == len(REGISTRY)
    for name, (module, cls_name) in REGISTRY.items():
        cls = MECHANISMS[name]
        assert cls.name == name and cls.__name__ == cls_name
        assert cls.__module__ == f"synth_core.mechanisms.{module}"
        assert getattr(mechanisms, cls_name) is cls
    assert MECHANISMS.get("no-such") is None and "no-such" not in MECHANISMS
    with pytest.raises(KeyError):
        MECHANISMS["no-such"]
    with pytest.raises(AttributeError):
        mechanisms.NoSuchMechanism  # noqa: B018


def test_names_and_membership_import_no_mechanism():
    code = ("from synth_core.mechanisms import MECHANISMS\n"
            "print(sorted(MECHANISMS), 'aim' in MECHANISMS, len(MECHANISMS))\n")
    modules, printed = fresh(code)
    from synth_core.mechanisms import REGISTRY
    assert printed == f"{sorted(REGISTRY)} True {len(REGISTRY)}"
    assert not any(m.startswith("synth_core.mechanisms.") for m in modules)


def test_facade_exports_import_on_first_use_and_a_small_run_works():
    code = ("import pandas as pd\n"
            "import synth_core\n"
            "from synth_core import Synthesizer, MECHANISMS, RoundEvent, __all__\n"
            "assert set(__all__) <= set(dir(synth_core))\n"
            "assert all(getattr(synth_core, n) is not None for n in __all__)\n"
            "data = pd.DataFrame({'a': [0, 1, 1, 0] * 10, 'b': ['x', 'y', 'y', 'z'] * 10,"
            " 'p': ['no'] * 30 + ['yes'] * 10})\n"
            "synth = Synthesizer('jam-pgm', epsilon=1.0, seed=0, rounds=1, fit_iters=5,"
            " final_fit_iters=5, workload='all-2way')\n"
            "events = list(synth.run(data, public_flag='p'))\n"
            "assert events and all(isinstance(e, RoundEvent) for e in events)\n"
            "out = synth.result.synthetic\n"
            "print(list(out.columns), len(out), synth.result.ledger.spent <= synth.result.ledger.total)\n"
            "try:\n    synth_core.NoSuchName\nexcept AttributeError:\n    print('no such name')\n")
    modules, printed = fresh(code)
    # the synthetic table has as many rows as the private records (40 less the 10 public)
    assert printed.splitlines() == ["['a', 'b'] 30 True", "no such name"]
    assert {"synth_core.api", "synth_core.engine"} <= modules


@pytest.fixture(scope="module")
def first_page() -> tuple[set[str], str]:
    """The workbench's first page rendered by Streamlit's AppTest in a fresh
    process: (the modules that process imported, the page's titles)."""
    code = ("from streamlit.testing.v1 import AppTest\n"
            "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
            "assert not at.exception, at.exception\n"
            "print([t.value for t in at.title])\n")
    return fresh(code)


def test_first_page_renders_without_torch_spark_duckdb_or_opendp(first_page):
    modules, printed = first_page
    assert printed.splitlines()[-1] == "['Differentially private synthetic data']"
    assert modules & {"torch", "pyspark", "duckdb", "opendp", "scipy"} == set()
    assert "synth_core.charts" not in modules


def test_first_page_and_run_help_render_without_jax(first_page):
    modules, _ = first_page
    assert modules & {"jax", "mbi"} == set()
    modules, _ = fresh(cli("run", "--help"))
    assert modules & {"jax", "mbi"} == set()
