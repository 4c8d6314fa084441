"""The package version (read by the report and the experiment records) and the
fingerprint of the code a run executes (read by the experiment records)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

__version__ = "0.1.0"

#: the installed distributions whose arithmetic a run's numbers depend on (``mbi``'s
#: fits use networkx for the junction tree and optax / chex for the optimiser)
NUMERIC_DEPENDENCIES = ("numpy", "scipy", "pandas", "jax", "jaxlib", "mbi", "networkx",
                        "optax", "chex", "torch")


def _installed(name: str) -> str:
    from importlib import metadata  # here: ``import synth_core`` stays light

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "absent"


def source_files(root: Path) -> list[Path]:
    """The package's Python sources under ``root``, sorted: regular files only, none
    in or named like a hidden entry (editor lock files, checkpoints). Data files are
    left out: the one there (``run_time_calibration.json``) only feeds run-time
    estimates and is rewritten by a benchmark."""
    return sorted(p for p in root.rglob("*.py")
                  if p.is_file() and not p.is_symlink()
                  and not any(part.startswith(".") for part in p.relative_to(root).parts))


def source_fingerprint(root: Path, versions: dict[str, str]) -> str:
    """A short hash of the bytes of :func:`source_files` under ``root`` (each with its
    path) and of ``versions`` (name -> version)."""
    import hashlib

    h = hashlib.sha256()
    for path in source_files(root):
        h.update(path.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(path.read_bytes())
    for name in sorted(versions):
        h.update(f"{name}=={versions[name]}\n".encode())
    return h.hexdigest()[:12]


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """What decides a seeded run's numbers besides its inputs and the machine: this
    package's sources, the installed versions of :data:`NUMERIC_DEPENDENCIES`, the
    Python version and the processor architecture (:func:`source_fingerprint`); computed
    once per process. On one machine two runs of one job under the same fingerprint are
    byte-identical (docs/performance.md, "Deterministic research runs"); under another,
    the last digits may differ. "unknown" when the sources cannot be read."""
    import platform

    versions = {name: _installed(name) for name in NUMERIC_DEPENDENCIES}
    versions |= {"python": platform.python_version(), "machine": platform.machine()}
    try:
        return source_fingerprint(Path(__file__).resolve().parent, versions)
    except OSError:
        return "unknown"
