"""A process-wide registry of per-user objects keyed by unguessable tokens.

The workbench app keeps each browser session's :class:`~synth_core.workbench.Workbench`
here, under a random token that travels in the page's URL, so that a reload or
a reconnect (a new Streamlit session) finds the same work again, including a
run still going in its background thread. Plain Python, no Streamlit.

Guarantees:

- a token is ``secrets.token_urlsafe`` of 24 bytes (192 random bits); only its
  SHA-256 digest is kept as the key, so the registry never holds (nor logs)
  a token, and a lookup compares digests, not the secret itself;
- a lookup finds an object only by its exact token; a token is never rebound
  to another object (:meth:`SessionRegistry.keep` issues a new token instead);
  an unknown, malformed or expired token finds nothing;
- entries idle for longer than ``idle_seconds`` expire, unless ``busy(obj)``
  says they are still working (a run in progress); this idle expiry applies
  to every entry, also to one that holds work;
- at most ``max_entries`` are kept. A new entry may evict only an entry that
  holds no work (``holds(obj)`` false: e.g. no data loaded, no run) and is
  not busy, the least recently used such one. When every entry holds work,
  :meth:`SessionRegistry.create` (and :meth:`~SessionRegistry.open` without a
  known token) raises :class:`RegistryFull` instead: a stranger opening the
  app can never push someone's session out. An evicted object lives on for
  whoever still holds it (the session that owns it puts it back with
  :meth:`keep`, when there is room); only re-attaching by token stops
  working;
- every operation holds one lock (sessions run in their own threads).

    reg = SessionRegistry(Workbench)
    token, wb, status = reg.open(None)          # status "new": a fresh object
    reg.open(token)                              # (token, wb, "attached")
    reg.open("made-up")                          # (new token, fresh object, "expired")
"""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Generic, TypeVar

T = TypeVar("T")

#: random bytes of a token (``token_urlsafe`` makes 32 characters of them)
TOKEN_BYTES = 24
#: what a token can look like; anything else is refused before hashing
_TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{16,128}")

NEW, ATTACHED, EXPIRED = "new", "attached", "expired"


class RegistryFull(RuntimeError):
    """Every entry holds work: no room for a new one (nothing was evicted)."""

    def __init__(self, max_entries: int):
        self.max_entries = max_entries
        super().__init__(f"the registry holds its maximum of {max_entries} sessions with work")


@dataclass
class _Entry(Generic[T]):
    obj: T
    last_seen: float


class SessionRegistry(Generic[T]):
    """Objects made by ``factory()`` under random tokens (see the module docstring)."""

    def __init__(self, factory: Callable[[], T], *, max_entries: int = 32,
                 idle_seconds: float = 24 * 3600.0, busy: Callable[[T], bool] | None = None,
                 holds: Callable[[T], bool] | None = None,
                 clock: Callable[[], float] = time.monotonic, token_bytes: int = TOKEN_BYTES):
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if token_bytes < 16:
            raise ValueError("a token needs at least 16 random bytes")
        self._factory = factory
        self.max_entries = int(max_entries)
        self.idle_seconds = float(idle_seconds)
        self._busy = busy or (lambda obj: False)
        self._holds = holds or (lambda obj: False)
        self._clock = clock
        self._token_bytes = int(token_bytes)
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, _Entry[T]] = OrderedDict()   # least recent first

    def __repr__(self) -> str:  # never shows keys or tokens
        return f"<SessionRegistry: {len(self)} of at most {self.max_entries} entries>"

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    # ---------------------------------------------------------------- tokens

    @staticmethod
    def _key(token) -> bytes | None:
        """The dictionary key of a well-formed token, else None."""
        if not isinstance(token, str) or not _TOKEN_RE.fullmatch(token):
            return None
        return hashlib.sha256(token.encode("ascii")).digest()

    def _new_token(self) -> tuple[str, bytes]:
        while True:
            token = secrets.token_urlsafe(self._token_bytes)
            key = self._key(token)
            if key not in self._entries:
                return token, key

    # ---------------------------------------------------------------- housekeeping

    def _is_busy(self, obj: T) -> bool:
        try:
            return bool(self._busy(obj))
        except Exception:  # noqa: BLE001 - a broken predicate must not break lookups
            return False

    def _may_evict(self, obj: T) -> bool:
        """Only an entry that neither works nor holds work may make room."""
        if self._is_busy(obj):
            return False
        try:
            return not self._holds(obj)
        except Exception:  # noqa: BLE001 - when in doubt, keep it
            return False

    def _expire_locked(self, now: float) -> None:
        stale = [k for k, e in self._entries.items()
                 if now - e.last_seen > self.idle_seconds and not self._is_busy(e.obj)]
        for k in stale:
            del self._entries[k]

    def _make_room_locked(self) -> None:
        """Evict least recently used entries without work until one more fits;
        RegistryFull (nothing evicted) if that is not possible."""
        if len(self._entries) < self.max_entries:
            return
        spare = [k for k, e in self._entries.items() if self._may_evict(e.obj)]
        excess = len(self._entries) - self.max_entries + 1
        if len(spare) < excess:
            raise RegistryFull(self.max_entries)
        for k in spare[:excess]:
            del self._entries[k]

    def _add_locked(self, key: bytes, obj: T, now: float) -> None:
        self._make_room_locked()
        self._entries[key] = _Entry(obj, now)

    # ---------------------------------------------------------------- public

    def create(self) -> tuple[str, T]:
        """A fresh object under a new token (RegistryFull when every entry holds work)."""
        with self._lock:
            now = self._clock()
            self._expire_locked(now)
            self._make_room_locked()
            obj = self._factory()
            token, key = self._new_token()
            self._entries[key] = _Entry(obj, now)
        return token, obj

    def get(self, token) -> T | None:
        """The object of ``token`` (and mark it used), or None if the token is
        unknown, malformed or expired."""
        key = self._key(token)
        with self._lock:
            now = self._clock()
            self._expire_locked(now)
            entry = self._entries.get(key) if key is not None else None
            if entry is None:
                return None
            entry.last_seen = now
            self._entries.move_to_end(key)
            return entry.obj

    def open(self, token) -> tuple[str, T, str]:
        """Attach to ``token``'s object, or start a fresh one.

        Returns ``(token, object, status)``: status ``attached`` (the token's
        object), ``new`` (no token given: a fresh object and token) or
        ``expired`` (a token was given but is unknown, malformed or expired:
        a fresh object under a new token). Raises RegistryFull when a fresh
        object is needed and every entry holds work.
        """
        if token:
            obj = self.get(token)
            if obj is not None:
                return token, obj, ATTACHED
        new_token, obj = self.create()
        return new_token, obj, EXPIRED if token else NEW

    def keep(self, token, obj: T) -> str:
        """Make sure ``token`` still leads to ``obj`` (its holder is using it):
        mark it used, or put it back if it expired or was evicted. Returns the
        token to use from now on: ``token`` itself, or a new one when ``token``
        is missing, malformed or (never expected) bound to another object.
        When the registry is full of entries with work, the object is not put
        back (its holder keeps using it; its link finds nothing meanwhile)."""
        key = self._key(token)
        with self._lock:
            now = self._clock()
            self._expire_locked(now)
            entry = self._entries.get(key) if key is not None else None
            if entry is not None and entry.obj is obj:
                entry.last_seen = now
                self._entries.move_to_end(key)
                return token
            if entry is None and key is not None:
                self._put_back_locked(key, obj, now)
                return token
            token, key = self._new_token()
            self._put_back_locked(key, obj, now)
            return token

    def _put_back_locked(self, key: bytes, obj: T, now: float) -> None:
        try:
            self._add_locked(key, obj, now)
        except RegistryFull:
            pass   # its holder still has it; nobody else's entry is given up for it

    def remove(self, token) -> bool:
        """Forget ``token`` (True if it was known)."""
        key = self._key(token)
        with self._lock:
            return key is not None and self._entries.pop(key, None) is not None
