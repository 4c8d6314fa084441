"""synth_core: differentially private synthetic data that uses public data well.

Adaptive-measurements mechanisms (AIM, JAM-PGM, and a public-only baseline)
on Private-PGM, one privacy ledger, round-by-round events. Quick start::

    from synth_core import Synthesizer, load_sample
    sample = load_sample("adult-pub025")
    synth = Synthesizer("jam-pgm", epsilon=1.0, seed=0)
    for event in synth.run(sample.private, public=sample.public, schema=sample.schema):
        print(event.describe())
    synth.result.synthetic.head()
"""

from .version import __version__  # noqa: F401

# importing changes no process setting; a run applies what it needs (synth_core/runtime.py)
from .api import RunConfig, RunResult, Synthesizer, list_samples, load_sample, synthesize  # noqa: E402
from .engine import RoundEvent  # noqa: E402
from .errors import SynthError  # noqa: E402
from .mechanisms import MECHANISMS  # noqa: E402

__all__ = ["Synthesizer", "synthesize", "RunConfig", "RunResult", "RoundEvent", "SynthError",
           "MECHANISMS", "load_sample", "list_samples", "__version__"]
