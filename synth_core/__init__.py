"""synth_core: differentially private synthetic data that uses public data well.

Adaptive-measurements mechanisms (AIM, JAM-PGM, and a public-only baseline)
on Private-PGM, one privacy ledger, round-by-round events. Quick start::

    from synth_core import Synthesizer, load_sample
    sample = load_sample("adult-pub025")
    synth = Synthesizer("jam-pgm", epsilon=1.0, seed=0)
    for event in synth.run(sample.private, public=sample.public, schema=sample.schema):
        print(event.describe())
    synth.result.synthetic.head()

``import synth_core`` is light: the names below are imported on first use
(``from synth_core import Synthesizer`` imports the API, the engine and the
model then), so a command's ``--help`` or the workbench's first page does not
wait for them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .errors import SynthError
from .version import __version__

if TYPE_CHECKING:
    from .api import RunConfig, RunResult, Synthesizer, list_samples, load_sample, synthesize
    from .engine import RoundEvent
    from .mechanisms import MECHANISMS

#: exported name -> the module of synth_core it is imported from on first use
_LAZY: dict[str, str] = {
    "Synthesizer": "api", "synthesize": "api", "RunConfig": "api", "RunResult": "api",
    "load_sample": "api", "list_samples": "api", "RoundEvent": "engine", "MECHANISMS": "mechanisms",
}

__all__ = ["Synthesizer", "synthesize", "RunConfig", "RunResult", "RoundEvent", "SynthError",
           "MECHANISMS", "load_sample", "list_samples", "__version__"]


def __getattr__(name: str):
    """An exported name, importing its module now (PEP 562); kept once imported."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
