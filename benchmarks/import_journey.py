"""The journey of a table through synth_core's layers when ``Synthesizer.run`` prepares it.

Runs one seeded ``Synthesizer.run`` on a small table per backend (memory and
DuckDB), each in a fresh interpreter so that modules imported on the way count,
under ``sys.setprofile``. While ``synth_core.api.prepare_inputs`` is on the
stack (the table's way from the call to the prepared inputs), every call into a
synth_core function or module body is recorded by its module. Prints one JSON
line per backend:

* ``journey``: the modules entered, in order, consecutive repeats collapsed;
* ``modules``: how many distinct modules;
* ``returns``: steps of the journey into a module it had already left;
* ``climbs``: steps of the journey to a module of a higher layer (the layer
  table of ``tests/test_layers.py``).

These two step counts also count a coordinator calling its helpers in turn
(``inputs -> tables -> inputs -> schema``: the coordinator never left). Two
counts that see the call stack tell the data flowing back up apart:

* ``reentries``: calls into a module that had been entered before and has no
  frame running any more (it was left, and the data comes back to it);
* ``calls_up``: calls made by a module into a module of a higher layer (the
  caller is the nearest synth_core frame below the call), with ``edges_up``
  the distinct (caller, callee) pairs.

    PYTHONPATH=$PWD python benchmarks/import_journey.py
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BACKENDS = ("memory", "duckdb")


def layer_table() -> dict[str, int]:
    """Module (relative to synth_core, "" for the package) -> layer, from tests/test_layers.py."""
    spec = importlib.util.spec_from_file_location("test_layers", ROOT / "tests" / "test_layers.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.layer_of()


def short(module: str) -> str:
    """``synth_core.backends.memory`` -> ``backends.memory``; the package itself -> ``""``."""
    return module[len("synth_core."):] if module.startswith("synth_core.") else ""


def summarise(calls: list[tuple[str, list[str]]], layers: dict[str, int]) -> dict:
    """The collapsed journey with its counts of modules, returns and climbs, and the
    counts that see the stack (``calls``: (callee, the synth_core modules running
    below it, nearest first) per call)."""
    up = [(stack[0], b) for b, stack in calls
          if stack and layers.get(b, -1) > layers.get(stack[0], 99)]
    seen, reentries = set(), 0
    for b, stack in calls:
        reentries += b in seen and b not in stack
        seen.add(b)
    entered = [b for b, _ in calls]
    journey = [m for i, m in enumerate(entered) if i == 0 or entered[i - 1] != m]
    returns = sum(1 for i, m in enumerate(journey) if m in journey[:i])
    climbs = sum(1 for a, b in zip(journey, journey[1:])
                 if layers.get(b, -1) > layers.get(a, -1))
    return {"journey": journey, "modules": len(set(journey)), "returns": returns,
            "climbs": climbs, "reentries": reentries, "calls_up": len(up),
            "edges_up": sorted(f"{a} -> {b}" for a, b in set(up))}


def _running(frame) -> list[str]:
    """The synth_core modules of the frames below ``frame``, nearest first."""
    out = []
    frame = frame.f_back
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == "synth_core" or name.startswith("synth_core."):
            out.append(short(name))
        frame = frame.f_back
    return out


def record(backend: str) -> list[tuple[str, list[str]]]:
    """(module, modules running below it) of every call entered while ``api.prepare_inputs``
    runs, in one seeded run on ``backend``."""
    import numpy as np
    import pandas as pd

    from synth_core import Synthesizer

    rng = np.random.default_rng(0)
    private = pd.DataFrame({c: rng.integers(0, k, 300) for c, k in zip("abcd", (3, 2, 4, 3))})
    public = pd.DataFrame({c: rng.integers(0, k, 120) for c, k in zip("abcd", (3, 2, 4, 3))})
    schema = {"columns": [{"name": c, "kind": "categorical", "categories": list(range(k))}
                          for c, k in zip("abcd", (3, 2, 4, 3))]}
    entered: list[tuple[str, list[str]]] = []
    active: list = []

    def profile(frame, event, arg):
        if event == "call":
            name = frame.f_globals.get("__name__", "")
            if not active and name == "synth_core.api" and frame.f_code.co_name == "prepare_inputs":
                active.append(frame)
            if active and (name == "synth_core" or name.startswith("synth_core.")):
                entered.append((short(name), _running(frame)))
        elif event == "return" and active and frame is active[0]:
            active.clear()

    with tempfile.TemporaryDirectory() as folder:
        data, pub = private, public
        if backend != "memory":
            data, pub = Path(folder) / "private.parquet", Path(folder) / "public.parquet"
            private.to_parquet(data)
            public.to_parquet(pub)
        synth = Synthesizer("jam-pgm", epsilon=1.0, seed=0, rounds=2, fit_iters=5,
                            final_fit_iters=5)
        sys.setprofile(profile)
        try:
            synth.fit(data, pub, schema=schema, backend=backend)
        finally:
            sys.setprofile(None)
    return entered


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--record":
        print(json.dumps(record(sys.argv[2])))
        return
    layers = layer_table()
    for backend in BACKENDS:
        out = subprocess.run([sys.executable, __file__, "--record", backend], capture_output=True,
                             text=True, check=True)
        entered = json.loads(out.stdout.strip().splitlines()[-1])
        print(json.dumps({"backend": backend, **summarise(entered, layers)}))


if __name__ == "__main__":
    main()
