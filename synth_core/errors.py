"""Errors that the workbench shows to users.

Every error names what is wrong (file, column, value) and what to do about it.
The CLI prints ``str(error)``; the app shows it next to the input at fault.
"""

from __future__ import annotations

import re
import shlex

#: the front ends an error can be shown in
INTERFACES = ("api", "cli", "app")

#: choice -> front end -> how that front end names the control, ``{cols}`` the columns
CONTROLS = {
    "numeric": {"api": "numeric_columns=[{cols}]", "cli": "--numeric {cols}",
                "app": "'Numeric columns' under 'Review a proposed schema' on the Data page"},
    "categorical": {"api": "categorical_columns=[{cols}]", "cli": "--categorical {cols}",
                    "app": "'Categorical columns' under 'Review a proposed schema' on the "
                           "Data page"},
    "drop": {"api": "drop_columns=[{cols}]", "cli": "--drop {cols}",
             "app": "'Leave out' under 'Review a proposed schema' on the Data page"},
    "schema": {"api": "schema= (a schema file, dict or Schema)", "cli": "--schema FILE",
               "app": "'Declare a schema (JSON)' on the Data page"},
    "public_rows": {"api": "public= (a table) or public_flag= (a column)",
                    "cli": "--public PATH or --public-flag COLUMN",
                    "app": "Public rows on the Public information page"},
    "public_columns": {"api": "public_columns=", "cli": "--public-columns",
                       "app": "Public columns on the Public information page"},
    "workload": {"api": "workload=", "cli": "--workload",
                 "app": "Workload on the Workload and budget page"},
    "neighbours": {"api": "RunConfig(neighbours=...)", "cli": "--neighbours",
                   "app": "Neighbouring datasets on the Workload and budget page"},
    "infer": {"api": "synth_core.schema_infer.propose_schema(private, public) (review it, "
                     "then pass its .schema() as schema=)",
              "cli": "'synth schema infer DATA --public PUBLIC --out FILE' (--public-flag "
                     "COLUMN for public rows flagged in DATA)",
              "app": "'Review a proposed schema' on the Data page"},
}
_CONTROL = re.compile(r"\{(" + "|".join(CONTROLS) + r")(?::([^{}]*))?\}")


def render_controls(text: str | None, interface: str = "api") -> str | None:
    """``text`` with every control placeholder named as ``interface`` names it.

    A placeholder is ``{choice}`` or ``{choice:col1,col2}`` with choice one of
    :data:`CONTROLS`; e.g. ``{drop:id}`` reads ``--drop id`` in the CLI and
    ``drop_columns=['id']`` in the API. Other braces are left alone.
    """
    if text is None:
        return None
    if interface not in INTERFACES:
        raise ValueError(f"unknown interface {interface!r}; use one of {INTERFACES}")

    def name(match: re.Match) -> str:
        columns = [c for c in (match.group(2) or "").split(",") if c]
        if interface == "api":
            cols = ", ".join(repr(c) for c in columns) or "..."
        elif interface == "cli":
            # quoted for a shell: a name with a space ("Visit Date") pastes as one argument
            cols = shlex.quote(",".join(columns)) if columns else "COL,..."
        else:
            cols = ""
        return CONTROLS[match.group(1)][interface].format(cols=cols)

    return _CONTROL.sub(name, text)


class SynthError(ValueError):
    """Base class of all user-facing errors raised by synth_core.

    ``hint`` says what the user can do; it is appended to the message.
    ``column`` and ``path`` name the input at fault when there is one.
    A hint may name a control with a placeholder (see :func:`render_controls`):
    ``hint`` and ``str(error)`` name it as the Python API does, and
    :meth:`text` as the front end the user is in does.
    """

    def __init__(self, message: str, *, hint: str | None = None,
                 column: str | None = None, path: str | None = None):
        self.message = message
        self.hint_template = hint
        self.hint = render_controls(hint)
        self.column = column
        self.path = path
        super().__init__(self.text("api"))

    def text(self, interface: str = "api") -> str:
        """The message and hint, with controls named as ``interface`` names them."""
        hint = render_controls(self.hint_template, interface)
        return self.message if not hint else f"{self.message} {hint}"


class DataError(SynthError):
    """A table cannot be read or does not fit the schema."""


class SchemaError(SynthError):
    """A schema is malformed or cannot describe the data."""


class WorkloadError(SynthError):
    """A workload names unknown columns or is empty."""


class BudgetExceededError(SynthError):
    """A charge would take the ledger beyond its total privacy budget."""


class GuaranteeMismatchError(BudgetExceededError):
    """Refused by a table's budget account: its total is stated under a neighbour
    relation (or set of public columns) that does not cover the run
    (:class:`synth_core.privacy.Guarantee`)."""


class ConfigError(SynthError):
    """A mechanism or run option is invalid."""
