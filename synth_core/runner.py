"""A background run: a worker thread that iterates ``Synthesizer.run`` and
collects its round events, so that a user interface can poll them.

The worker never touches a user interface: it only appends events to a list
under a lock and sets its status. A stop request is a flag checked between
rounds (a round that is computing finishes first). A :class:`SynthError` is
captured as a clean message and hint; any other exception as a one-line
"internal error" message (its traceback goes to the log, not to the user).

    worker = RunWorker(Synthesizer("jam-pgm", epsilon=1, rounds=3), dict(data=df, public=pub))
    worker.start()
    while not worker.done:
        events, status = worker.snapshot()
    worker.result            # the RunResult once status == "finished"
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Self

from .api import RunResult, Synthesizer
from .engine import RoundEvent
from .errors import SynthError

log = logging.getLogger(__name__)

PENDING, RUNNING, FINISHED, STOPPED, FAILED = "pending", "running", "finished", "stopped", "failed"
DONE_STATES = (FINISHED, STOPPED, FAILED)


@dataclass(frozen=True)
class RunFailure:
    """Why a run failed: a user-facing message and what to do about it."""

    message: str
    hint: str | None = None
    column: str | None = None
    internal: bool = False

    def text(self) -> str:
        return self.message if not self.hint else f"{self.message} {self.hint}"


class _BackgroundWorker:
    """The lifecycle shared by the workers: one daemon thread running
    ``self._work``, started once, a stop flag, a status under a lock and the
    wall-clock start and finish times. Subclasses implement ``_work`` and end
    it with ``_finish(status)``.
    """

    def __init__(self, label: str, thread_name: str, on_done=None):
        self.label = label
        self._on_done = on_done
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._status = PENDING
        self.failure: RunFailure | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        self._thread = threading.Thread(target=self._work, name=thread_name, daemon=True)

    # -- control ---------------------------------------------------------------

    def start(self) -> Self:
        with self._lock:
            if self._status != PENDING:
                raise RuntimeError(f"a {type(self).__name__} can be started once")
            self._status = RUNNING
            self.started_at = time.time()
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the worker to stop at its next check: a run after the round in
        progress, a sweep between rounds or before the next job."""
        self._stop.set()

    @property
    def stop_requested(self) -> bool:
        return self._stop.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the worker is done (or ``timeout`` seconds); True if done."""
        if self._status == PENDING:
            return False
        self._thread.join(timeout)
        return self.done

    # -- state -----------------------------------------------------------------

    @property
    def status(self) -> str:
        with self._lock:
            return self._status

    @property
    def done(self) -> bool:
        return self.status in DONE_STATES

    # -- the thread ------------------------------------------------------------

    def _finish(self, status: str) -> None:
        if self._on_done is not None:   # before ``done``: e.g. a budget is settled first
            try:
                self._on_done(self)
            except Exception:  # noqa: BLE001 - the worker's own outcome stands
                log.exception("after-run step of %s failed", self.label)
        with self._lock:
            self._status = status
            self.finished_at = time.time()
            self._on_finish_locked()

    def _on_finish_locked(self) -> None:
        """Hook run by ``_finish`` while it holds the lock."""

    def _work(self) -> None:
        raise NotImplementedError


class RunWorker(_BackgroundWorker):
    """Runs one synthesis in a daemon thread and collects its events."""

    def __init__(self, synthesizer: Synthesizer, run_kwargs: dict, *, label: str = "",
                 on_done=None):
        """``on_done(worker)`` is called in the thread when the run ended (finished,
        stopped or failed), before ``done`` becomes true."""
        self.synthesizer = synthesizer
        self.run_kwargs = dict(run_kwargs)
        self._events: list[RoundEvent] = []
        self.result: RunResult | None = None
        super().__init__(label, f"synth-run {label}", on_done)

    # -- state -----------------------------------------------------------------

    @property
    def events(self) -> list[RoundEvent]:
        with self._lock:
            return list(self._events)

    def snapshot(self) -> tuple[list[RoundEvent], str]:
        """A consistent copy of (events so far, status)."""
        with self._lock:
            return list(self._events), self._status

    @property
    def rho_spent(self) -> float:
        """Privacy budget charged so far (also for stopped and failed runs)."""
        engine = self.synthesizer.engine
        if engine is not None:
            return float(engine.ledger.spent)
        with self._lock:
            return float(self._events[-1].rho_spent) if self._events else 0.0

    @property
    def rounds_planned(self) -> int | None:
        with self._lock:
            for ev in reversed(self._events):
                if ev.rounds_planned:
                    return ev.rounds_planned
        return self.synthesizer.config.rounds

    @property
    def seconds(self) -> float:
        if self.started_at is None:
            return 0.0
        return (self.finished_at or time.time()) - self.started_at

    # -- the thread ------------------------------------------------------------

    def _work(self) -> None:
        gen = None
        try:
            gen = self.synthesizer.run(**self.run_kwargs)
            for event in gen:
                with self._lock:
                    self._events.append(event)
                if self._stop.is_set():
                    gen.close()
                    self._finish(STOPPED)
                    return
            self.result = self.synthesizer.result
            self._finish(FINISHED)
        except SynthError as exc:
            self.failure = RunFailure(exc.message, exc.hint, exc.column)
            self._finish(FAILED)
        except Exception as exc:  # noqa: BLE001 - reported as a clean message
            log.exception("run %s failed", self.label)
            self.failure = RunFailure(f"Internal error: {type(exc).__name__}: {exc}",
                                      "This is a bug, not a problem with your input; the run was "
                                      "abandoned. Your data and settings are kept.",
                                      internal=True)
            self._finish(FAILED)


class SweepWorker(_BackgroundWorker):
    """Runs a list of jobs (e.g. mechanism x epsilon x seed) one after another
    in a daemon thread.

    ``run_one(job, should_stop)`` does one job and returns a result row (a
    dict); it should check ``should_stop()`` between rounds and return None
    when it stopped early. ``on_row(row)`` is called after every job (e.g. to
    save the results so far, which makes a sweep resumable). A job that raises
    a :class:`SynthError` gives a row with ``status="failed"`` and the message;
    the sweep goes on with the next job.
    """

    def __init__(self, jobs: list[dict], run_one, *, on_row=None, label: str = ""):
        self.jobs = list(jobs)
        self._run_one = run_one
        self._on_row = on_row
        self._rows: list[dict] = []
        self.current: dict | None = None
        super().__init__(label, f"synth-sweep {label}")

    @property
    def rows(self) -> list[dict]:
        with self._lock:
            return list(self._rows)

    @property
    def progress(self) -> tuple[int, int]:
        """(jobs done, jobs in all)."""
        with self._lock:
            return len(self._rows), len(self.jobs)

    def _on_finish_locked(self) -> None:
        self.current = None

    def _work(self) -> None:
        try:
            for job in self.jobs:
                if self._stop.is_set():
                    self._finish(STOPPED)
                    return
                with self._lock:
                    self.current = dict(job)
                started = time.time()
                try:
                    row = self._run_one(dict(job), self._stop.is_set)
                except SynthError as exc:
                    row = {**job, "status": FAILED, "error": str(exc),
                           "seconds": time.time() - started}
                if row is None:            # stopped inside the job
                    self._finish(STOPPED)
                    return
                with self._lock:
                    self._rows.append(row)
                if self._on_row is not None:
                    self._on_row(row)
            self._finish(FINISHED)
        except Exception as exc:  # noqa: BLE001 - reported as a clean message
            log.exception("sweep %s failed", self.label)
            self.failure = RunFailure(f"Internal error: {type(exc).__name__}: {exc}",
                                      "The sweep was abandoned; finished results are saved.",
                                      internal=True)
            self._finish(FAILED)
