"""A disk cache of GEM-Pub's public pre-training, shared by runs that differ only
in what comes after it (epsilon, T, the private rows).

Pre-training (:meth:`synth_core.mechanisms.gem.GEM._pretrain`) reads only public
data: the public marginals, the generator's seed and the network's settings. It
spends no privacy budget, and its result, the network's ``state_dict`` (weights and
batch-norm buffers) and the pre-training report, is all the run keeps of it. A
sweep over epsilons and rounds repeats it unchanged in every run: on Adult it is
about half of a GEM-Pub run at T = 50.

The cache is off unless the environment names a folder (``SYNTH_PRETRAIN_CACHE``;
``benchmarks/reproduce.py`` sets one per figure). An entry's name hashes every
input of the pre-training: the public marginals' bytes, the cliques, the generator
seed, the network and pre-training settings, the thread count, the PyTorch version
and the CPU's vector capability (floating-point sums may differ between those). A
run that finds its entry loads it and continues exactly as if it had trained: its
output is byte-identical (tests/test_comparison_mechanisms.py). An entry is a NumPy
``.npz`` file of plain arrays (the tensors, and the report as JSON text), read with
pickling off: a cache folder someone else wrote cannot run code. Entries are written
to a temporary file and renamed, so a stopped run never leaves half an entry.

An entry is computed from public data alone (the public rows, or for vGEM-Pub the
columns the user marked public): it holds nothing private, though whoever reads it
learns about the public data. Only seeded research runs use the cache (a release
run's generator seed is fresh, so its entry would never be found again). A file that
does not load is a miss: the run trains and overwrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

#: the environment variable naming the cache's folder (unset: no cache)
PRETRAIN_CACHE_ENV = "SYNTH_PRETRAIN_CACHE"
#: bump when what an entry holds, or how pre-training computes it, changes
CACHE_FORMAT = 2


class PretrainCache:
    """Entries ``<folder>/<key>.npz``: the state_dict's tensors as arrays, named by
    their keys, and the report as JSON text (``REPORT_KEY``)."""

    #: the array holding the report (state_dict keys are module paths, "seq.0.fc.weight")
    REPORT_KEY = "__report__"

    def __init__(self, folder: Path | str):
        self.folder = Path(folder)

    @classmethod
    def from_environment(cls) -> "PretrainCache | None":
        folder = os.environ.get(PRETRAIN_CACHE_ENV)
        return cls(folder) if folder else None

    @staticmethod
    def key(target: np.ndarray, **inputs) -> str:
        """The entry's name: a hash of the public marginals ``target`` and of every
        other input of the pre-training (JSON-able ``inputs``), with the PyTorch
        version and CPU capability of this process."""
        import torch

        ident = dict(inputs, format=CACHE_FORMAT, torch=torch.__version__,
                     cpu=torch.backends.cpu.get_cpu_capability(),
                     target=hashlib.sha256(np.ascontiguousarray(target).tobytes()).hexdigest(),
                     target_dtype=str(target.dtype), target_shape=list(target.shape))
        text = json.dumps(ident, sort_keys=True, default=list)
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def load(self, key: str) -> tuple[dict, dict] | None:
        """The entry's (state_dict, report), or ``None`` when there is none or it does
        not read as one (a damaged or foreign file: the run trains and rewrites it)."""
        import torch

        path = self.path(key)
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as entry:
                report = json.loads(bytes(entry[self.REPORT_KEY]).decode())
                state = {name: torch.from_numpy(entry[name].copy())
                         for name in entry.files if name != self.REPORT_KEY}
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        return state, report

    def save(self, key: str, state: dict, report: dict) -> None:
        """Write the entry atomically (a temporary file in the folder, then a rename)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        arrays = {name: t.detach().cpu().numpy() for name, t in state.items()}
        arrays[self.REPORT_KEY] = np.frombuffer(json.dumps(report).encode(), dtype=np.uint8)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.replace(tmp, self.path(key))
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
