"""The C heap under JAX/XLA: how many glibc malloc arenas, and handing freed
pages back to the system.

Measured on Conditional vJAM-PGM, Adult, 75% public columns, epsilon 10
(``/tmp`` probe sampling ``mallinfo2`` after round 12, heap trimmed): with
glibc's default of up to 8 arenas per core, XLA's compile and run threads
spread their short-lived buffers over many arenas; each arena keeps its free
chunks, and the process held 1,614 MB resident of which about 460 MB were in
use. Two arenas: 871 MB resident, the same 460 MB in use. So a run limits
glibc to :data:`MALLOC_ARENAS` arenas when its first estimator is built
(:func:`synth_core.runtime.prepare_process`; importing the package does not),
unless ``MALLOC_ARENA_MAX`` is set in the environment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

#: glibc malloc arenas (``M_ARENA_MAX``) for this process
MALLOC_ARENAS = 2
_M_ARENA_MAX = -8   # mallopt parameter number (malloc.h)


def _load_libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


_LIBC = _load_libc()
#: the arena cap this process applied (None: mallopt never called here)
_APPLIED: int | None = None


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (``mallopt(M_ARENA_MAX)``); False where the C
    library is not glibc or the user set ``MALLOC_ARENA_MAX`` (theirs wins)."""
    global _APPLIED
    if _LIBC is None or os.environ.get("MALLOC_ARENA_MAX"):
        return False
    if not _LIBC.mallopt(_M_ARENA_MAX, int(arenas)):
        return False
    _APPLIED = int(arenas)
    return True


def applied_arena_limit() -> int | None:
    """The arena cap :func:`limit_malloc_arenas` set in this process, None if never."""
    return _APPLIED


def return_freed_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc ``malloc_trim``).

    XLA frees what a compilation and a fit allocate, but glibc keeps the
    pages; without this, Conditional AIM on Adult (75% public columns) grew by
    about 100 MB per round. Returns False where the C library has no
    ``malloc_trim``.
    """
    if _LIBC is None:
        return False
    _LIBC.malloc_trim(0)
    return True
