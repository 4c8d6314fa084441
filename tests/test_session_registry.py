"""The process-wide registry of workbench sessions (synth_core.session_registry)."""

from __future__ import annotations

import logging
import re
import threading

import pytest

from synth_core.session_registry import ATTACHED, EXPIRED, NEW, RegistryFull, SessionRegistry


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Box:
    """A stand-in for a Workbench: a new object per session, optionally busy or
    holding work (data loaded, a run)."""

    def __init__(self):
        self.busy = False
        self.data = None


def make(**kw) -> tuple[SessionRegistry, Clock]:
    clock = Clock()
    return SessionRegistry(Box, clock=clock, busy=lambda b: b.busy,
                           holds=lambda b: b.data is not None, **kw), clock


def test_tokens_are_long_random_and_url_safe():
    reg, _ = make(max_entries=500)
    tokens = [reg.create()[0] for _ in range(300)]
    assert len(set(tokens)) == 300
    for t in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{32}", t)      # 24 random bytes, 192 bits
    with pytest.raises(ValueError):
        SessionRegistry(Box, token_bytes=8)


def test_open_attaches_by_exact_token_only():
    reg, _ = make()
    t1, a, status = reg.open(None)
    assert status == NEW and isinstance(a, Box)
    t2, b, _ = reg.open("")
    assert b is not a and t2 != t1
    assert reg.open(t1) == (t1, a, ATTACHED)
    assert reg.get(t2) is b
    # near misses, other shapes and made-up tokens find nothing and give a fresh object
    for bad in (t1[:-1], t1 + "A", t1.upper() if t1.upper() != t1 else t1.lower(), " " + t1,
                t1 + "\n", "x" * 2000, "../" + t1, "A" * 32, 42, ["t"], None):
        assert reg.get(bad) is None, bad
    t3, c, status = reg.open("made-up-token-that-is-long-enough")
    assert status == EXPIRED and c is not a and c is not b and t3 not in (t1, t2)
    assert len(reg) == 3


def test_registry_never_holds_or_shows_a_token(caplog):
    reg, _ = make()
    with caplog.at_level(logging.DEBUG):
        token, _ = reg.create()
        reg.get(token)
        reg.open("unknown-token-unknown-token")
    assert token not in repr(reg) and token not in caplog.text
    assert all(token not in repr(v) for v in vars(reg).values())
    assert all(isinstance(k, bytes) and len(k) == 32 for k in reg._entries)   # SHA-256 digests


def test_idle_entries_expire_unless_busy():
    reg, clock = make(idle_seconds=3600)
    t_idle, idle = reg.create()
    t_busy, busy = reg.create()
    t_used, used = reg.create()
    busy.busy = True
    clock.now += 3000
    assert reg.get(t_used) is used                   # use resets its idle time
    clock.now += 1000                                # 4000 s after creation
    assert reg.get(t_idle) is None
    assert reg.get(t_busy) is busy                   # a run in progress keeps it
    assert reg.get(t_used) is used
    t, obj, status = reg.open(t_idle)
    assert status == EXPIRED and obj is not idle and t != t_idle
    busy.busy = False
    clock.now += 3601
    assert reg.get(t_busy) is None and len(reg) == 0   # a finished run's entry expires too


def test_size_is_bounded_and_evicts_the_least_recently_used_idle_entry():
    reg, _ = make(max_entries=3)
    (t1, a), (t2, _), (t3, c) = reg.create(), reg.create(), reg.create()
    reg.get(t1)                                      # b is now the least recently used
    t4, d = reg.create()
    assert len(reg) == 3 and reg.get(t2) is None
    assert reg.get(t1) is a and reg.get(t3) is c and reg.get(t4) is d
    # busy entries are evicted last
    a.busy = c.busy = True
    t5, _ = reg.create()                             # evicts d, the only idle one
    assert reg.get(t4) is None and reg.get(t1) is a and reg.get(t3) is c
    reg.get(t5).busy = True
    with pytest.raises(RegistryFull):                # all busy: nobody is evicted
        reg.create()
    assert len(reg) == 3 and all(reg.get(t) is not None for t in (t1, t3, t5))


def test_a_full_registry_of_sessions_with_data_refuses_a_new_visitor():
    reg, clock = make(max_entries=32)
    held = []
    for i in range(32):
        token, box = reg.create()
        box.data = f"table {i}"
        held.append((token, box))
    for _ in range(33):                              # strangers opening the app
        with pytest.raises(RegistryFull) as exc:
            reg.open(None)
        assert exc.value.max_entries == 32
        with pytest.raises(RegistryFull):
            reg.open("made-up-token-that-is-long-enough")
    assert len(reg) == 32
    for token, box in held:                          # every link still opens its session
        assert reg.open(token) == (token, box, ATTACHED)
    held[5][1].data = None                           # one session drops its table
    t_new, fresh, status = reg.open(None)            # the only one that may make room
    assert status == NEW and reg.get(held[5][0]) is None
    assert all(reg.get(t) is b for i, (t, b) in enumerate(held) if i != 5)


def test_empty_sessions_are_evicted_first():
    reg, _ = make(max_entries=4)
    (t1, a), (t2, b), (t3, c), (t4, d) = (reg.create() for _ in range(4))
    a.data = d.data = "rows"                         # a is the least recently used, with data
    reg.get(t3)                                      # b is now the oldest empty one
    t5, _ = reg.create()
    assert reg.get(t2) is None
    assert reg.get(t1) is a and reg.get(t3) is c and reg.get(t4) is d and reg.get(t5) is not None
    t6, _ = reg.create()                             # c, then the new one: empty before data
    assert reg.get(t3) is None and reg.get(t1) is a and reg.get(t4) is d


def test_idle_expiry_applies_to_sessions_with_data_and_keep_never_evicts():
    reg, clock = make(max_entries=2, idle_seconds=100)
    t1, a = reg.create()
    a.data = "rows"
    clock.now += 101                                 # idle past the timeout: expires
    assert reg.get(t1) is None
    (t2, b), (t3, c) = reg.create(), reg.create()
    b.data = c.data = "rows"
    assert reg.keep(t1, a) == t1 and reg.get(t1) is None   # full of work: not put back
    assert reg.get(t2) is b and reg.get(t3) is c


def test_keep_puts_an_object_back_but_never_rebinds_a_token():
    reg, clock = make(idle_seconds=10)
    token, a = reg.create()
    assert reg.keep(token, a) == token
    clock.now += 100                                 # expired while its session held it
    assert reg.keep(token, a) == token and reg.get(token) is a
    assert reg.remove(token) and not reg.remove(token)
    assert reg.keep(token, a) == token and reg.get(token) is a   # put back after eviction
    other_token, b = reg.create()
    new = reg.keep(other_token, a)                   # a's holder never takes b's token
    assert new not in (token, other_token) and reg.get(new) is a and reg.get(other_token) is b
    fresh = reg.keep(None, a)                        # an object without a token gets one
    assert fresh and reg.get(fresh) is a


def test_sessions_in_many_threads_stay_apart():
    reg, _ = make(max_entries=1000)
    seen: dict[str, object] = {}
    lock = threading.Lock()

    def work():
        for _ in range(50):
            token, obj = reg.create()
            assert reg.get(token) is obj
            with lock:
                seen[token] = obj

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(seen) == 400 and len({id(o) for o in seen.values()}) == 400
    assert all(reg.get(t) is o for t, o in seen.items())
