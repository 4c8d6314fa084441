"""PyTorch is the [gem] extra: without it everything but GEM works, and choosing
GEM, GEM-Pub or vGEM-Pub is a clear ConfigError before any data is read.

The child interpreter cannot import torch: a finder placed first on
``sys.meta_path`` refuses it, as an interpreter without the package would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
"""

PROBE = NO_TORCH + """
import json
import numpy as np
import pandas as pd
import synth_core
from synth_core import Synthesizer, SynthError

rng = np.random.default_rng(0)
a = rng.integers(0, 3, 200)
data = pd.DataFrame({"a": a, "b": (a + rng.integers(0, 2, 200)) % 2, "c": rng.integers(0, 4, 200)})
schema = {"columns": [{"name": c, "kind": "categorical", "categories": list(range(k))}
                      for c, k in (("a", 3), ("b", 2), ("c", 4))]}
aim = Synthesizer("aim", epsilon=1.0, seed=0, rounds=4, fit_iters=20, final_fit_iters=20).fit(
    data, schema=schema)
out = {"aim_rows": len(aim.synthetic), "errors": {}}
for name in ("gem", "gem-pub", "vgem-pub"):
    try:
        Synthesizer(name, epsilon=1.0, seed=0)
    except SynthError as exc:
        out["errors"][name] = [type(exc).__name__, str(exc)]
try:
    from synth_core.mechanisms import GEM
    GEM()
except SynthError as exc:
    out["errors"]["GEM()"] = [type(exc).__name__, str(exc)]
out["torch_imported"] = "torch" in sys.modules
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def without_torch() -> dict:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(PROBE)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_blocker_really_hides_torch():
    done = subprocess.run([sys.executable, "-c", NO_TORCH + "import torch"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0 and "No module named 'torch'" in done.stderr


def test_everything_but_gem_runs_without_torch(without_torch):
    assert without_torch["aim_rows"] == 200
    assert without_torch["torch_imported"] is False


@pytest.mark.parametrize("name", ["gem", "gem-pub", "vgem-pub", "GEM()"])
def test_choosing_gem_without_torch_says_what_to_install(without_torch, name):
    kind, message = without_torch["errors"][name]
    assert kind == "ConfigError"
    mechanism = "gem" if name == "GEM()" else name
    assert f"Mechanism {mechanism!r} needs torch, which is not installed." in message
    assert 'pip install -e ".[gem]" --extra-index-url https://download.pytorch.org/whl/cpu' \
        in message


def test_gem_configures_when_torch_is_installed():
    pytest.importorskip("torch")
    from synth_core import Synthesizer

    assert Synthesizer("gem", epsilon=1.0, seed=0).config.mechanism == "gem"
