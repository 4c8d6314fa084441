"""Errors that the workbench shows to users.

Every error names what is wrong (file, column, value) and what to do about it.
The CLI prints ``str(error)``; the app shows it next to the input at fault.
"""

from __future__ import annotations


class SynthError(ValueError):
    """Base class of all user-facing errors raised by synth_core.

    ``hint`` says what the user can do; it is appended to the message.
    ``column`` and ``path`` name the input at fault when there is one.
    """

    def __init__(self, message: str, *, hint: str | None = None,
                 column: str | None = None, path: str | None = None):
        self.message = message
        self.hint = hint
        self.column = column
        self.path = path
        full = message if not hint else f"{message} {hint}"
        super().__init__(full)


class DataError(SynthError):
    """A table cannot be read or does not fit the schema."""


class SchemaError(SynthError):
    """A schema is malformed or cannot describe the data."""


class WorkloadError(SynthError):
    """A workload names unknown columns or is empty."""


class BudgetExceededError(SynthError):
    """A charge would take the ledger beyond its total privacy budget."""


class ConfigError(SynthError):
    """A mechanism or run option is invalid."""
