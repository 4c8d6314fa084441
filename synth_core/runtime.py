"""Process settings a run needs, applied when an engine runs, never on import.

``import synth_core`` leaves the process as it found it: JAX's dtype and cache
settings, glibc's malloc, warnings filters, environment variables and threads.
A run applies two kinds of settings:

* **Scoped to estimation** (:func:`estimation`): every JAX computation of a
  Private-PGM fit, total estimate and sample (:mod:`synth_core.model`) runs
  inside ``jax.enable_x64(True)``, so mirror descent works in float64 (its
  Armijo test compares loss differences far below float32's 1e-7 relative
  precision), and inside ``enable_compilation_cache(False)``, so the fits'
  programs (one per clique structure) are never written to a persistent
  compilation cache the caller may have configured. Both are JAX's
  thread-local overrides: the caller's own settings hold before and after a
  run, and in its other threads during one.
* **Process-wide, once** (:func:`prepare_process`): glibc's malloc arenas are
  capped at :data:`~synth_core.heap.MALLOC_ARENAS` (:mod:`synth_core.heap`
  says why). ``mallopt`` has no scope; it acts on arenas created after it,
  so it is applied when the first estimator is built, which every engine
  (``Engine`` and ``QueryReleaseLoop``) does before its first round and before JAX
  starts its threads for the run. ``MALLOC_ARENA_MAX`` in the environment wins.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
from typing import Iterator

from .errors import ConfigError
from .heap import limit_malloc_arenas

_PREPARED = threading.Event()
_PREPARE_LOCK = threading.Lock()


def prepare_process() -> None:
    """Apply the process-wide settings (the malloc arena cap) once per process."""
    if _PREPARED.is_set():
        return
    with _PREPARE_LOCK:
        if not _PREPARED.is_set():
            limit_malloc_arenas()
            _PREPARED.set()


@contextlib.contextmanager
def estimation() -> Iterator[None]:
    """JAX in float64, no persistent compilation cache, for this thread only.

    Every JAX array that estimation creates or combines must be made inside
    this scope: outside it JAX truncates float64 operands to float32.
    """
    import jax  # imported here: importing synth_core does not start JAX
    # the thread-local override of jax_enable_compilation_cache (jax is pinned, 0.10.2)
    from jax._src import config as _jax_config

    with jax.enable_x64(True), _jax_config.enable_compilation_cache(False):
        yield


#: optional packages a mechanism may need: import name -> the extra that installs it
EXTRAS = {"torch": "gem"}
#: the install command for an extra (the CPU build of PyTorch; PyPI's Linux default pulls CUDA)
INSTALL_HINTS = {
    "gem": 'pip install -e ".[gem]" --extra-index-url https://download.pytorch.org/whl/cpu',
}


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (found on the path), without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require_packages(mechanism) -> None:
    """ConfigError naming the mechanism and the install command if a package it
    needs (its ``requires`` attribute: import names) is missing; ``mechanism``
    is a mechanism class or instance."""
    for module in mechanism.requires:
        if not installed(module):
            extra = EXTRAS[module]
            raise ConfigError(
                f"Mechanism {mechanism.name!r} needs {module}, which is not installed.",
                hint=f"Install the [{extra}] extra from the repository root: "
                     f"{INSTALL_HINTS[extra]}")
