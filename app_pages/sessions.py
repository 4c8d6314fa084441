"""Which Workbench a browser session works on.

Every Workbench lives in one process-wide :class:`SessionRegistry` (held with
``st.cache_resource``) under a random token, and the token is kept in the
page's URL (``?session=...``). A reload or a reconnect opens a new Streamlit
session with the same URL and so finds the same Workbench, including a run
still going in its background thread; a browser or tab without the token
starts a fresh one. Within a session, ``st.session_state`` holds the Workbench
and its token (the URL only serves to find them again), and the token is put
back into the URL on every script run: page navigation clears query
parameters.

Nothing here is written to disk or to the log: the Workbenches are kept in
the server process's memory, for ``SYNTH_WORKBENCH_SESSION_HOURS`` (24) hours
after their last use, at most ``SYNTH_WORKBENCH_SESSIONS`` (32) of them. A
Workbench that holds work (a table loaded, a run or comparison made or going)
is never evicted to make room: when all of them hold work, a new visitor is
told that the workbench is full instead. Empty ones make room, least
recently used first.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref

import streamlit as st

from synth_core.session_registry import EXPIRED, RegistryFull, SessionRegistry
from synth_core.workbench import Workbench

#: the query parameter that holds the token
PARAM = "session"
_WB, _TOKEN, _NOTICE = "wb", "_session_token", "_session_notice"


def new_workbench() -> Workbench:
    """A fresh Workbench as the app starts it: release mode (unseeded) by default."""
    wb = Workbench()
    wb.update_settings(seed=None, mode=None)
    return wb


def _env_number(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


def holds_work(wb: Workbench) -> bool:
    """A session with a table (also one on disk), runs or comparison runs: never
    evicted for a new visitor."""
    return (wb.data is not None or bool(wb.runs) or wb.compare.runs > 0 or wb.running
            or wb.compare.running)


@st.cache_resource(show_spinner=False)
def registry() -> SessionRegistry:
    """The process's one registry of Workbenches."""
    return SessionRegistry(
        new_workbench, max_entries=max(1, int(_env_number("SYNTH_WORKBENCH_SESSIONS", 32))),
        idle_seconds=_env_number("SYNTH_WORKBENCH_SESSION_HOURS", 24) * 3600,
        busy=lambda wb: wb.running or wb.compare.running, holds=holds_work)


def refuse_when_full(exc: RegistryFull) -> None:
    """Tell a new visitor that every session slot holds someone's work, and stop."""
    st.error(f"The workbench is serving its maximum of {exc.max_entries} sessions, and each "
             "holds someone's data or runs, which are never dropped to make room. Try again "
             "later, or ask the operator to raise SYNTH_WORKBENCH_SESSIONS.",
             icon=":material/group_off:")
    st.stop()


def session_workbench() -> Workbench:
    """This session's Workbench: the one it already has, else the one the URL's
    token names, else a fresh one (with a notice if the URL named an unknown
    or expired one). Keeps the token in the URL."""
    state = st.session_state
    reg = registry()
    wb = state.get(_WB)
    if wb is not None:
        token = reg.keep(state.get(_TOKEN), wb)
    else:
        given = st.query_params.get(PARAM)
        try:
            token, wb, status = reg.open(given)
        except RegistryFull as exc:
            refuse_when_full(exc)
        if status == EXPIRED:
            state[_NOTICE] = True
        state[_WB] = wb
    state[_TOKEN] = token
    if st.query_params.get(PARAM) != token:
        st.query_params[PARAM] = token
    return wb


def show_session_notice() -> None:
    """Say once that the URL's session could not be found."""
    if st.session_state.pop(_NOTICE, False):
        hours = registry().idle_seconds / 3600
        st.warning("Your earlier session expired (or the link's session is unknown to this "
                   "server): this is a new, empty session. Sessions are kept in the server's "
                   f"memory for {hours:g} hours after their last use and are lost when the "
                   "server restarts; the files you downloaded from the Release page are the "
                   "lasting copy.", icon=":material/history:")


_locks: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


@contextlib.contextmanager
def workbench_lock(wb: Workbench):
    """Serialize the script runs of the sessions that share ``wb`` (two tabs
    with the same link): e.g. two Start presses cannot both pass the
    'no run in progress' check."""
    with _locks_guard:
        lock = _locks.get(wb)
        if lock is None:
            lock = _locks[wb] = threading.RLock()
    with lock:
        yield
