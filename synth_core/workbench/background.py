"""A service that runs one background worker at a time (synth_core.runner)."""

from __future__ import annotations

from ..runner import SweepWorker


class BackgroundService:
    """Holds the service's latest worker; a new one starts only when it is done."""

    def __init__(self):
        self.worker: SweepWorker | None = None

    @property
    def running(self) -> bool:
        return self.worker is not None and not self.worker.done

    def stop(self) -> None:
        """Ask the worker to stop at its next check (see ``synth_core.runner``)."""
        if self.worker is not None:
            self.worker.stop()
