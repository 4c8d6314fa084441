"""Importing synth_core changes no process setting; a run applies what it needs.

Each check runs in a fresh interpreter, because a setting applied once in the
test process (by any earlier test's run) would hide what an import does.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap

import pytest

from synth_core.heap import MALLOC_ARENAS


def _fresh(code: str, *args: str, warnings: str = "default") -> str:
    """Run ``code`` in a new interpreter without MALLOC_ARENA_MAX; its stdout."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    done = subprocess.run([sys.executable, "-W", warnings, "-c", textwrap.dedent(code), *args],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


IMPORT_PROBE = """
import json, os, threading, warnings
import jax
before = dict(x64=jax.config.jax_enable_x64, cache=jax.config.jax_enable_compilation_cache,
              env=dict(os.environ), filters=list(warnings.filters),
              threads=threading.active_count())
import synth_core
from synth_core import heap
print(json.dumps(dict(
    x64=[before["x64"], jax.config.jax_enable_x64],
    cache=[before["cache"], jax.config.jax_enable_compilation_cache],
    env_same=before["env"] == dict(os.environ),
    filters_same=before["filters"] == list(warnings.filters),
    threads=[before["threads"], threading.active_count()],
    arena_limit=heap.applied_arena_limit())))
"""


def test_import_leaves_the_process_as_it_was():
    """No JAX setting, environment variable, warnings filter, thread or malloc
    setting changes on import, and the import warns about nothing."""
    seen = json.loads(_fresh(IMPORT_PROBE, warnings="error::UserWarning"))  # mbi's would be
    assert seen["x64"] == [False, False]
    assert seen["cache"] == [True, True]
    assert seen["env_same"] and seen["filters_same"]
    assert seen["threads"][1] == seen["threads"][0]
    assert seen["arena_limit"] is None   # mallopt(M_ARENA_MAX) never called


RUN_PROBE = """
import json, sys
import jax
import numpy as np
import pandas as pd
if sys.argv[1] == "x64-on":
    jax.config.update("jax_enable_x64", True)
from synth_core import Synthesizer
from synth_core.heap import applied_arena_limit

rng = np.random.default_rng(0)
a = rng.integers(0, 3, 200)
data = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 200)) % 2, "c": rng.integers(0, 4, 200)})
schema = {"columns": [{"name": c, "kind": "categorical", "categories": list(range(k))}
                      for c, k in (("a", 3), ("b", 2), ("c", 4))]}
synth = Synthesizer("aim", epsilon=1.0, seed=3, rounds=4, fit_iters=20, final_fit_iters=20)
between_rounds = [jax.config.jax_enable_x64 for _ in synth.run(data, schema=schema)]
potentials = synth.engine.model.mrf.potentials
print(json.dumps(dict(
    between_rounds=sorted(set(between_rounds)),
    after=jax.config.jax_enable_x64,
    fit_dtypes=sorted({str(potentials[cl].values.dtype) for cl in potentials.cliques}),
    rows=len(synth.result.synthetic),
    arena_limit=applied_arena_limit())))
"""


@pytest.mark.parametrize("caller", ["x64-off", "x64-on"])
def test_a_run_estimates_in_float64_and_leaves_the_callers_setting(caller):
    """The fit's potentials are float64 whatever the caller chose; between rounds
    and after the run the caller's own x64 setting is in force; the run applied
    the malloc arena cap."""
    seen = json.loads(_fresh(RUN_PROBE, caller))
    mine = caller == "x64-on"
    assert seen["fit_dtypes"] == ["float64"]
    assert seen["between_rounds"] == [mine] and seen["after"] is mine
    assert seen["rows"] == 200
    assert seen["arena_limit"] == MALLOC_ARENAS


ARENA_PROBE = """
import ctypes, sys, threading
import synth_core
if sys.argv[1] == "estimator":
    from synth_core.model import PGMEstimator
    PGMEstimator({"a": 2, "b": 3})   # what every engine builds before its first round
libc = ctypes.CDLL("libc.so.6")
barrier = threading.Barrier(7)
keep = []
def work():
    keep.append(bytes(200_000))   # a malloc from this thread
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
barrier.wait()
libc.fopen.restype = ctypes.c_void_p
fh = libc.fopen(sys.argv[2].encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(fh))
libc.fclose(ctypes.c_void_p(fh))
for t in threads: t.join()
"""


@pytest.mark.parametrize("after", ["import", "estimator"])
def test_the_malloc_arena_cap_comes_with_the_first_estimator(after, tmp_path):
    """glibc gives each new thread its own arena (up to 8 per core) and each
    arena keeps its free pages. Importing the package leaves that alone (six
    threads get arenas of their own); building an estimator caps the arenas
    at MALLOC_ARENAS (glibc's malloc_info counts them)."""
    out = tmp_path / "malloc_info.xml"
    _fresh(ARENA_PROBE, after, str(out))
    heaps = len(re.findall(r"<heap nr=", out.read_text()))
    if after == "estimator":
        assert heaps <= MALLOC_ARENAS
    else:
        assert heaps > MALLOC_ARENAS
