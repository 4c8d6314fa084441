"""The package version (read by the report and the experiment records) and the
fingerprint of the code a run executes (read by the experiment records)."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

#: the installed distributions whose arithmetic a run's numbers depend on
NUMERIC_DEPENDENCIES = ("numpy", "scipy", "pandas", "jax", "jaxlib", "mbi", "torch")


def _installed(name: str) -> str:
    from importlib import metadata  # here: ``import synth_core`` stays light

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def source_fingerprint(root: Path, versions: dict[str, str]) -> str:
    """A short hash of the bytes of every ``*.py`` and ``*.json`` file under ``root``
    (with its path, in sorted order) and of ``versions`` (name -> version)."""
    h = hashlib.sha256()
    for path in sorted(p for ext in ("*.py", "*.json") for p in root.rglob(ext)):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    for name in sorted(versions):
        h.update(f"{name}=={versions[name]}\n".encode())
    return h.hexdigest()[:12]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """What decides a seeded run's numbers besides its inputs: this package's source
    and data files and the installed versions of :data:`NUMERIC_DEPENDENCIES`
    (:func:`source_fingerprint`). Two runs of one job under the same fingerprint are
    byte-identical (docs/experiments.md, "Determinism"); under another, the last
    digits may differ."""
    return source_fingerprint(Path(__file__).resolve().parent,
                              {name: _installed(name) for name in NUMERIC_DEPENDENCIES})
