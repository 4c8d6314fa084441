"""A privacy budget that belongs to a dataset, across runs, sessions and restarts.

Each run has its own :class:`~synth_core.privacy.Ledger` and never spends more
than its own rho. A :class:`BudgetAccount` caps what *all* runs on one private
table may spend together.

Composition: the runs are rho_i-zCDP mechanisms on the same table, so
releasing all of them (and anything chosen by looking at them) is
``sum_i rho_i``-zCDP (zCDP composes additively, Bun and Steinke 2016). The
account's total cap ``rho_total`` therefore bounds the whole history of the
table: every run counts, released or not, because choosing which run to
release after looking at several is a data-dependent choice.

Protocol (one file per dataset, JSON):

- ``reserve(rho, what)`` is called **before** a run measures the private table
  (:func:`charged_run`; a memory run has loaded it, to check that the account
  is that table's).
  Under an exclusive file lock it re-reads the file and records a reservation
  of ``rho`` if ``spent + rho <= rho_total``; otherwise it raises
  :class:`~synth_core.errors.BudgetExceededError` saying what is left.
- ``settle(reservation, spent)`` after the run (finished, stopped or failed)
  records what its ledger spent, ``0 <= spent <= rho``; the rest of the
  reservation returns to the account. An unsettled reservation counts in full.
- ``spent = sum(settled spent) + sum(open reservations)``.

Two processes or threads on one account serialise on ``fcntl.flock`` of a
lock file next to it (``<file>.lock``), and every change is written through
:func:`~synth_core.report.atomic_write_bytes`, so the cap cannot be passed by
concurrent reservations and a crash leaves the old or the new file, whole.

The account knows its table by a fingerprint (SHA-256 of the table's content,
:func:`table_fingerprint`) and a label. The fingerprint is a function of the
private data: it stays in the curator's account file and is never put in a
release report (:meth:`BudgetAccount.release_block` uses the label).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import hashlib
import json
import math
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from .errors import BudgetExceededError, ConfigError, GuaranteeMismatchError
from .privacy import Guarantee, cdp_epsilon, check_delta_plausible, rho_from_epsilon_delta
from .report import (WITHHELD_SEED_TEXT, atomic_write_bytes, check_release, reads_as_seed,
                     refuse_seed_text)
from .tables import check_column_names, record_hashes

ACCOUNT_FORMAT = "synth-budget-account/1"
#: relative slack on the cap for floating-point sums of rho (as the run Ledger's)
RELATIVE_TOLERANCE = 1e-12


#: what a table's content fingerprint hashes, named in the hash itself
CONTENT_FINGERPRINT = "synth-table-content/2"


def table_fingerprint(data) -> str:
    """SHA-256 (hex) of a private table's content.

    A path: the file's bytes. A DataFrame: its records as a multiset, so
    that the same records give the same fingerprint however the rows are
    sorted, the columns ordered or a number written (``1`` or ``1.0``):
    the column names, sorted, and the sorted 64-bit row hashes of
    ``pandas.util.hash_pandas_object`` over the columns in that order
    (numbers as float64, other values as text; index ignored). The same
    table gives the same fingerprint in every process.
    """
    h = hashlib.sha256()
    if isinstance(data, (str, Path)):
        with open(data, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    if not isinstance(data, pd.DataFrame):
        raise ConfigError(f"Cannot fingerprint a {type(data).__name__}; give a DataFrame or a path.")
    check_column_names(data, "the table")
    names = sorted(data.columns, key=str)
    h.update(json.dumps({"format": CONTENT_FINGERPRINT, "columns": list(map(str, names)),
                         "rows": int(len(data))}).encode("utf-8"))
    h.update(record_hashes(data, names).tobytes())
    return h.hexdigest()


def legacy_table_fingerprint(frame: pd.DataFrame) -> str:
    """The fingerprint accounts made before :data:`CONTENT_FINGERPRINT` know a loaded
    table by (its dtypes and row hashes in row and column order): only to find
    and re-key such an account (:meth:`BudgetAccount.rekey`)."""
    h = hashlib.sha256()
    h.update(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode("utf-8"))
    h.update(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes())
    return h.hexdigest()


#: what :func:`table_fingerprint` hashes: a loaded table's content, or a file's bytes
TABLE_CONTENT, FILE_BYTES = "table content", "file bytes"


def fingerprint_source(data) -> str:
    """What :func:`table_fingerprint` hashes for ``data``: ``"file bytes"`` for a path
    (the engine backends count a file on disk), ``"table content"`` for a DataFrame
    (the memory backend's loaded table). The two never match for one table."""
    return FILE_BYTES if isinstance(data, (str, Path)) else TABLE_CONTENT


def table_label(data, name: str | None = None) -> str:
    """The label a new account gets for a table: ``name`` when given, else a file's
    name without its folders (the label goes into release reports; a path would tell
    where the curator keeps the private table), else "table"."""
    if name:
        return str(name)
    if isinstance(data, (str, Path)):
        return Path(data).name
    return "table"


class AccountExistsError(ConfigError):
    """:meth:`BudgetAccount.create` found an account at its path (never replaced)."""


@dataclass
class BudgetCharge:
    """One run's entry in an account: reserved before it started, settled after."""

    run_id: str
    mechanism: str
    what: str
    rho_reserved: float
    rho_spent: float | None = None     # None while the run is open (counts as reserved)
    time: str = ""
    settled_time: str | None = None
    #: what the run's rho is stated under (:meth:`Guarantee.to_json`; None in accounts
    #: made before guarantees were recorded)
    guarantee: dict | None = None
    #: the run failed before it spent anything (it released nothing)
    failed: bool = False
    #: ``what`` names the run only (mechanism, epsilon), as entries are made now; an
    #: older entry may name the table or its file, so a release shows its mechanism
    names_run_only: bool = False

    @property
    def counted(self) -> float:
        """What the account counts for this run: spent once settled, else reserved."""
        return self.rho_reserved if self.rho_spent is None else self.rho_spent


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _check_rho(rho, what: str) -> float:
    if not (isinstance(rho, (int, float)) and math.isfinite(rho) and rho >= 0):
        raise ConfigError(f"{what} must be a finite non-negative rho, got {rho!r}.")
    return float(rho)


def _is_rho(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        math.isfinite(value) and value >= 0


def _is_guarantee(value) -> bool:
    try:
        Guarantee.from_json(value)
    except (ConfigError, KeyError, TypeError, AttributeError):
        return False
    return True


def _damage(state: dict) -> str | None:
    """What makes an account's state unusable (None when it is sound): a total that
    is not a finite positive rho (NaN compares false with everything, so a NaN
    total would admit every run), or charges that are not the records
    :class:`BudgetCharge` writes."""
    if not isinstance(state.get("label"), str) or not isinstance(state.get("fingerprint"), str):
        return "its label or fingerprint is missing"
    if not (_is_rho(state.get("total_rho")) and state["total_rho"] > 0):
        return f"its total_rho is {state.get('total_rho')!r}, not a finite positive number"
    cap = state.get("cap")
    if cap is not None and not (isinstance(cap, dict) and all(
            cap.get(k) is None or (_is_rho(cap[k]) and cap[k] > 0) for k in ("epsilon", "delta"))):
        return f"its cap is {cap!r}, not an epsilon and a delta"
    if state.get("guarantee") is not None and not _is_guarantee(state["guarantee"]):
        return f"its guarantee is {state['guarantee']!r}, not a neighbour relation"
    charges = state.get("charges")
    if not isinstance(charges, list):
        return "its charges are not a list"
    fields = set(BudgetCharge.__dataclass_fields__)
    needed = {"run_id", "mechanism", "what", "rho_reserved"}
    for i, charge in enumerate(charges):
        if not isinstance(charge, dict) or not needed <= set(charge) or not set(charge) <= fields:
            return f"charge {i + 1} is not a charge record"
        spent = charge.get("rho_spent")
        if not _is_rho(charge["rho_reserved"]) or not (spent is None or _is_rho(spent)):
            return f"charge {i + 1} has a rho that is not a finite non-negative number"
    return None


class BudgetAccount:
    """The total privacy budget of one dataset, kept in a JSON file (see the module doc).

    Create one with :meth:`create` (cap in rho, or in (epsilon, delta) converted
    with :func:`~synth_core.privacy.rho_from_epsilon_delta`), re-open it with
    :meth:`open`. Every read re-reads the file, so two holders of one account
    see each other's charges.
    """

    def __init__(self, path: Path, state: dict):
        # the real file: a symlink to an account would otherwise take its own lock file
        # and be replaced by a copy at the first write, splitting the account in two
        self.path = Path(path).resolve()
        self._state = state

    # ---------------------------------------------------------------- files

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    @staticmethod
    def _read(path: Path) -> dict:
        try:
            state = json.loads(Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"There is no budget account at '{path}'.",
                              hint="Create it first (a total epsilon and delta, or rho).",
                              path=str(path)) from None
        except IsADirectoryError:
            raise ConfigError(f"'{path}' is a folder, not a budget account.",
                              hint="Give the account's file (a .json file).",
                              path=str(path)) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"Cannot read the budget account '{path}': {exc}.",
                              hint="Restore the file from a backup; do not start runs on "
                                   "this dataset until its account is readable.",
                              path=str(path)) from None
        if not isinstance(state, dict) or state.get("format") != ACCOUNT_FORMAT:
            raise ConfigError(f"'{path}' is not a budget account ({ACCOUNT_FORMAT}).",
                              path=str(path))
        damage = _damage(state)
        if damage:
            raise ConfigError(
                f"The budget account '{path}' is damaged: {damage}. A cap read from it could "
                "not be trusted, so no run on its table is allowed.",
                hint="Restore the file from a backup. Do not delete it: the table would get a "
                     "fresh total.", path=str(path))
        return state

    def _write(self) -> None:
        atomic_write_bytes(self.path, (json.dumps(self._state, indent=2) + "\n").encode("utf-8"))

    @contextlib.contextmanager
    def _locked(self):
        """Hold the account's file lock, with the state freshly read from disk."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                self._state = self._read(self.path)
                yield
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)

    def reload(self) -> "BudgetAccount":
        self._state = self._read(self.path)
        return self

    # ---------------------------------------------------------------- making and opening

    @classmethod
    def open(cls, path) -> "BudgetAccount":
        """The account stored at ``path`` (ConfigError if there is none)."""
        return cls(Path(path), cls._read(Path(path)))

    @classmethod
    def create(cls, path, *, label: str, fingerprint: str, total_rho: float | None = None,
               epsilon: float | None = None, delta: float | None = None,
               fingerprint_of: str | None = None,
               guarantee: Guarantee | None = None) -> "BudgetAccount":
        """A new account at ``path`` for the table with ``fingerprint``
        (``fingerprint_of``: what was hashed, :func:`fingerprint_source`), its total
        stated under ``guarantee`` (None: under the guarantee of the first run that
        spends, :meth:`refuse_unless_covered`).

        The cap is ``total_rho``, or ``rho_from_epsilon_delta(epsilon, delta)``
        (the largest rho whose exact conversion gives (epsilon, delta)-DP).
        Refuses to replace an existing account (its history would be lost):
        :class:`AccountExistsError`.
        """
        refuse_seed_text(label, "budget account's label",
                         hint="Give the account another label (--budget-label on the command "
                              "line, the Label field in the workbench); a release names the "
                              "account by it, and it can never be changed.")
        if (total_rho is None) == (epsilon is None):
            raise ConfigError("Give the total budget either as rho or as epsilon and delta.")
        if epsilon is not None:
            if delta is None:
                raise ConfigError("A total epsilon needs a delta.")
            total_rho = rho_from_epsilon_delta(float(epsilon), float(delta))
            check_delta_plausible(float(delta), "the total's delta")
        total_rho = _check_rho(total_rho, "The total budget")
        if total_rho <= 0:
            raise ConfigError("The total budget must be positive.")
        path = Path(path)
        account = cls(path, {
            "format": ACCOUNT_FORMAT, "label": str(label), "fingerprint": str(fingerprint),
            "fingerprint_of": fingerprint_of, "total_rho": total_rho,
            "cap": {"epsilon": epsilon, "delta": delta} if epsilon is not None else None,
            "created": _now(), "charges": [],
            **({"guarantee": guarantee.to_json()} if guarantee is not None else {})})
        try:
            account.lock_path.parent.mkdir(parents=True, exist_ok=True)
            lock = open(account.lock_path, "a+b")
        except OSError as exc:
            raise ConfigError(f"Cannot create the budget account '{path}': "
                              f"{exc.strerror or exc} ('{exc.filename or path}').",
                              hint="Give a file name in a folder you can write to.",
                              path=str(path)) from None
        with lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                if path.exists():
                    raise AccountExistsError(
                        f"A budget account already exists at '{path}'.",
                        hint="Open it instead; its total and history are kept.", path=str(path))
                account._write()
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        return account

    def rekey(self, fingerprint: str, path=None) -> "BudgetAccount":
        """The account, known from now on by ``fingerprint`` (and stored at ``path``,
        if given: the workbench names an account's file after its fingerprint). For
        an account made under :func:`legacy_table_fingerprint`; its total and
        history are kept. Under the account's lock: the new file is written before
        the old one is removed, so a crash leaves the account whole in one place or
        the other, and a second process re-keying at once opens the moved account."""
        target = Path(path).resolve() if path is not None else self.path
        with open(self.lock_path, "a+b") as lock:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
            try:
                if not self.path.exists() and target != self.path:
                    return BudgetAccount.open(target)      # another process moved it
                state = dict(self._read(self.path), fingerprint=str(fingerprint),
                             rekeyed=_now(), fingerprint_of=TABLE_CONTENT)
                moved = BudgetAccount(target, state)
                if target != self.path:
                    with open(moved.lock_path, "a+b") as new_lock:   # the lock create takes
                        fcntl.flock(new_lock.fileno(), fcntl.LOCK_EX)
                        if target.exists():
                            raise AccountExistsError(
                                f"Cannot move the budget account '{self.path}' to '{target}': "
                                "an account is there already.",
                                hint="Two accounts now know this table; keep the one with the "
                                     "longer history and move the other away.",
                                path=str(target))
                        moved._write()
                    self.path.unlink()
                else:
                    moved._write()
            finally:
                fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
        self.path, self._state = moved.path, moved._state
        return self

    def check_table(self, fingerprint: str, fingerprint_of: str | None = None) -> None:
        """ConfigError unless the account belongs to the table with ``fingerprint``
        (``fingerprint_of``: what was hashed; a file's bytes and a loaded table's
        content never match, so a mismatch between the two says so)."""
        if fingerprint == self._state["fingerprint"]:
            return
        made_from = self._state.get("fingerprint_of")
        double = ("A second account for the same table would give it a second total budget: "
                  "do not create one.")
        if fingerprint_of and made_from and fingerprint_of != made_from:
            backends = {TABLE_CONTENT: "--backend memory", FILE_BYTES: "--backend duckdb or spark"}
            raise ConfigError(
                f"The budget account '{self.path}' ({self.label}) knows its table by the "
                f"{made_from}, and this run reads the {fingerprint_of}, so it cannot tell "
                "whether they are the same table.",
                hint=f"Run with {backends.get(made_from, 'the backend it was made with')}, as "
                     f"the runs that made the account did. {double}", path=str(self.path))
        known = "" if made_from else (" (or it was made by a run with another --backend: "
                                      "memory hashes the loaded table, duckdb and spark the "
                                      "file's bytes)")
        raise ConfigError(f"The budget account '{self.path}' ({self.label}) belongs to "
                          f"another table: the content differs{known}.",
                          hint=f"Use the account of this table. {double}",
                          path=str(self.path))

    # ---------------------------------------------------------------- state

    @property
    def label(self) -> str:
        return self._state["label"]

    @property
    def fingerprint(self) -> str:
        """CURATOR-ONLY: the table's SHA-256 (a function of the private data)."""
        return self._state["fingerprint"]

    @property
    def total_rho(self) -> float:
        return float(self._state["total_rho"])

    @property
    def charges(self) -> list[BudgetCharge]:
        return [BudgetCharge(**c) for c in self._state["charges"]]

    @property
    def spent(self) -> float:
        """rho counted so far: settled runs' spent plus open reservations (zCDP adds)."""
        return math.fsum(c.counted for c in self.charges)

    @property
    def remaining(self) -> float:
        return max(0.0, self.total_rho - self.spent)

    def refuse_unless_fits(self, rho: float, what: str, delta: float | None = None) -> None:
        """BudgetExceededError, naming what is left, when ``spent + rho > total_rho``."""
        if self.spent + rho > self.total_rho * (1.0 + RELATIVE_TOLERANCE):
            raise BudgetExceededError(
                f"Refused: {what} needs rho = {rho:.6g}, but the dataset '{self.label}' has "
                f"only {self.left_text(delta)} left in its total budget.",
                hint=self.fits_hint(delta), path=str(self.path))

    def fits_hint(self, delta: float | None = None) -> str:
        """What still fits, said as a single run's epsilon: budgets add up in rho,
        so what is left is not the total epsilon minus the epsilons spent."""
        delta = delta or (self._state.get("cap") or {}).get("delta")
        text = ("Budgets add up in rho (zCDP), not in epsilon, and the total covers every run "
                "on this table, released or not.")
        if delta and self.remaining > 0:
            text = (f"One run of epsilon up to {cdp_epsilon(self.remaining, delta):.4g} "
                    f"(at delta = {delta:g}) still fits, or fewer runs. " + text)
        return text

    @property
    def cap(self) -> dict | None:
        """The total as it was set in (epsilon, delta) (``None``: set in rho)."""
        return self._state.get("cap")

    def total_text(self) -> str:
        """The total, as it was set: epsilon at delta (and rho), or rho."""
        cap = self.cap or {}
        if cap.get("epsilon") is not None:
            return (f"epsilon {cap['epsilon']:g} at delta {cap['delta']:g} "
                    f"(rho = {self.total_rho:.6g})")
        return f"rho = {self.total_rho:.6g}"

    def left_text(self, delta: float | None = None) -> str:
        """What is left, in rho (and in epsilon at ``delta``, or at the cap's delta)."""
        delta = delta or (self._state.get("cap") or {}).get("delta")
        text = f"rho = {self.remaining:.6g} of {self.total_rho:.6g}"
        if delta:
            eps = cdp_epsilon(self.remaining, delta) if self.remaining > 0 else 0.0
            text += f" (epsilon = {eps:.4g} at delta = {delta:g})"
        return text

    # ---------------------------------------------------------------- charging

    @property
    def guarantee(self) -> Guarantee | None:
        """What the total is stated under: set when the account was made, else the
        guarantee of the first run charged to it that did not fail before measuring
        anything (None before one was)."""
        state = self._state.get("guarantee")
        return None if state is None else Guarantee.from_json(state)

    @property
    def other_guarantees(self) -> list[Guarantee]:
        """The guarantees of runs recorded in the account that its total does not cover
        (runs that ended under another relation before they were recorded,
        :meth:`record_spent`): no one guarantee covers a release chosen among the
        table's runs."""
        uncovered = set(self._state.get("uncovered") or ())
        return [Guarantee.from_json(c["guarantee"]) for c in self._state["charges"]
                if c["run_id"] in uncovered and c.get("guarantee")]

    @property
    def unknown_relations(self) -> int:
        """Runs that spent budget before accounts recorded each run's guarantee."""
        return sum(1 for c in self._state["charges"]
                   if not c.get("guarantee") and (c["rho_spent"] or 0) > 0)

    def refuse_unless_covered(self, guarantee: Guarantee, what: str) -> None:
        """GuaranteeMismatchError unless a run stated under ``guarantee`` is covered by
        the total (:meth:`Guarantee.refusal_under`): rho adds up only under one relation."""
        total = self.guarantee
        reason = None if total is None else guarantee.refusal_under(total)
        if reason is not None:
            columns = (f"{{public_columns}} within {', '.join(total.public_columns)}"
                       if total.public_columns else "no {public_columns}")
            rows = (f", public rows flagged by '{total.public_rows}' or none"
                    if total.public_rows else ", no public rows flagged in the table")
            raise GuaranteeMismatchError(
                f"Refused: {what} is stated under {guarantee.text()}, and the dataset "
                f"'{self.label}' counts its total budget under {total.text()}: {reason}.",
                hint=f"Run under the total's relation ({{neighbours}} {total.neighbours}, "
                     f"{columns}{rows}).", path=str(self.path))

    def _charge(self, rho: float, what: str, mechanism: str, guarantee: Guarantee,
                spent: float | None) -> BudgetCharge:
        """Append a charge (under the lock). The first sets the total's guarantee when
        none is set; a recorded spend (``spent`` given) the guarantee does not cover is
        kept among :attr:`other_guarantees`."""
        now = _now()
        # no running number: a release's history would let its reader count the runs
        # it leaves out (those that spent nothing)
        charge = BudgetCharge(f"run-{secrets.token_hex(4)}", str(mechanism), str(what), rho,
                              spent, now, now if spent is not None else None,
                              guarantee.to_json(), names_run_only=True)
        if self.guarantee is None:
            self._state["guarantee"] = guarantee.to_json()
            self._state["guarantee_from"] = charge.run_id
        elif guarantee.refusal_under(self.guarantee) is not None:
            self._state.setdefault("uncovered", []).append(charge.run_id)
        self._state["charges"].append(asdict(charge))
        self._write()
        return charge

    def reserve(self, rho: float, what: str, *, guarantee: Guarantee, mechanism: str = "",
                delta: float | None = None) -> BudgetCharge:
        """Reserve ``rho`` for a run about to start, stated under ``guarantee`` (under
        the file lock), whatever its rho (a bounded run that spends nothing still
        publishes the number of records).

        Raises BudgetExceededError, naming what is left, when
        ``spent + rho > total_rho``, and GuaranteeMismatchError when the total is
        stated under a relation that does not cover the run
        (:meth:`refuse_unless_covered`); nothing is recorded then.
        """
        rho = _check_rho(rho, "A run's budget")
        refuse_seed_text(what, "run's entry in the table's budget history",
                         hint="Every later release of the table carries its budget history: "
                              "give the run a label that names no seed (a sweep's mechanism "
                              "label).")
        with self._locked():
            self.refuse_unless_fits(rho, what, delta)
            self.refuse_unless_covered(guarantee, what)
            return self._charge(rho, what, mechanism, guarantee, None)

    def settle(self, reservation: BudgetCharge, spent: float, *, finished: bool) -> BudgetCharge:
        """Record what a reserved run spent (``0 <= spent <= reserved``); the rest returns.
        A run that failed (``finished`` False) before spending anything released nothing:
        if its guarantee was the total's only because it came first and no other run is
        recorded, the total has no guarantee again."""
        spent = _check_rho(spent, "A run's spent budget")
        if spent > reservation.rho_reserved * (1.0 + RELATIVE_TOLERANCE):
            raise ConfigError(f"Run {reservation.run_id} spent rho = {spent:.6g}, more than its "
                              f"reservation of {reservation.rho_reserved:.6g}.")
        spent = min(spent, reservation.rho_reserved)
        with self._locked():
            entry = next((c for c in self._state["charges"]
                          if c["run_id"] == reservation.run_id), None)
            if entry is None:
                raise ConfigError(f"Run {reservation.run_id} has no reservation in "
                                  f"'{self.path}'.", path=str(self.path))
            if entry["rho_spent"] is not None:
                raise ConfigError(f"Run {reservation.run_id} is already settled.")
            entry["rho_spent"], entry["settled_time"] = spent, _now()
            if spent == 0 and not finished:
                entry["failed"] = True
                if self._state.get("guarantee_from") == entry["run_id"]:
                    self._guarantee_without(entry["run_id"])
            self._write()
        return BudgetCharge(**entry)

    def _guarantee_without(self, run_id: str) -> None:
        """Unset the total's guarantee, set by ``run_id`` (which failed before spending),
        if no other charge that did not fail is recorded (under the lock). Otherwise it
        stays: those charges were admitted under it, and a guarantee taken from them
        instead could leave some of them uncovered and unlisted."""
        if any(c["run_id"] != run_id and not c.get("failed") for c in self._state["charges"]):
            return
        self._state.pop("guarantee", None)
        self._state.pop("guarantee_from", None)

    def record_spent(self, rho: float, what: str, *, guarantee: Guarantee,
                     mechanism: str = "") -> BudgetCharge:
        """Record budget already spent on the table outside the account (runs that
        ended before it existed, or while it was being made), stated under
        ``guarantee``. It is counted whatever the total and whatever the total's
        guarantee: spending happened, so the account may be left with nothing, and a
        guarantee the total's does not cover is kept among :attr:`other_guarantees`
        (releases then claim no epsilon for a run chosen among the table's runs)."""
        rho = _check_rho(rho, "Spent budget")
        with self._locked():
            return self._charge(rho, what, mechanism, guarantee, rho)

    # ---------------------------------------------------------------- views

    def summary(self) -> dict:
        """CURATOR view: label, total, spent, remaining and the number of runs."""
        self.reload()
        return {"label": self.label, "total_rho": self.total_rho, "spent_rho": self.spent,
                "remaining_rho": self.remaining, "runs": len(self._state["charges"]),
                "cap": self._state.get("cap"), "path": str(self.path)}

    def history(self) -> list[dict]:
        """Every charge (run id, mechanism, what, reserved, spent, times)."""
        self.reload()
        return [dict(c) for c in self._state["charges"]]

    def release_block(self, run: BudgetCharge) -> dict:
        """The report's ``budget_account`` block for ``run``: the label, the total, what
        was spent before it, its own spend, what remains and the history up to it
        (without times, and without the earlier runs that spent nothing: a run that
        failed before measuring anything tells of the private table, not of the total).
        No fingerprint (it is a function of the private data)."""
        self.reload()
        before, history = [], []
        for c in self.charges:
            if c.rho_spent == 0 and c.run_id != run.run_id:
                continue
            # no times: a run's reservation time and its report's creation time would
            # give its duration, which grows with the private table (as round timings)
            history.append({"run_id": c.run_id, "mechanism": c.mechanism,
                            "what": releasable(c.what if c.names_run_only else c.mechanism),
                            "rho_reserved": c.rho_reserved, "rho_spent": c.rho_spent})
            if c.run_id == run.run_id:
                break
            before.append(c.counted)
        this = run.counted
        spent_before = math.fsum(before)
        guarantee = self.guarantee
        others = sorted({g.text() for g in self.other_guarantees})
        mixed = (" Runs stated under other relations were charged to this table too ("
                 + "; ".join(others) + "): no one guarantee covers a release chosen among its "
                 "runs." if others else "")
        if self.unknown_relations:
            mixed += (f"; {self.unknown_relations} earlier run(s) were charged before accounts "
                      "recorded each run's relation.")
        return {"label": releasable(self.label), "total_rho": self.total_rho,
                "guarantee": None if guarantee is None else guarantee.text() + mixed,
                "spent_before_rho": spent_before, "this_run_rho": this,
                "remaining_rho": max(0.0, self.total_rho - spent_before - this),
                "composition": "rho-zCDP adds over runs; the total counts every run on this "
                               "table, released or not",
                "history": history}


def run_rho(mechanism: str, epsilon: float, delta: float) -> float:
    """What a run may spend: its ledger's total ``rho_from_epsilon_delta(epsilon,
    delta)``, or 0 for a mechanism that never reads the private table
    (``zero_budget``, e.g. the public-only baseline)."""
    from .mechanisms import MECHANISMS   # the mechanisms import the engine: only when needed

    cls = MECHANISMS.get(mechanism)
    if cls is not None and cls.capabilities.zero_budget:
        return 0.0
    return rho_from_epsilon_delta(float(epsilon), float(delta))


def check_run_table(account: BudgetAccount, data) -> None:
    """ConfigError unless ``account`` belongs to ``data``, the private table as the run
    reads it (a loaded DataFrame: its records; a file an engine backend counts: its
    bytes; a folder or glob of files: nothing to compare). An account charged for
    another table would leave that table's own total unguarded. An account made
    under :func:`legacy_table_fingerprint` of this table is re-keyed where it is."""
    if not isinstance(data, pd.DataFrame) and not Path(data).is_file():
        return
    fingerprint = table_fingerprint(data)
    if (isinstance(data, pd.DataFrame) and fingerprint != account.fingerprint
            and account.fingerprint == legacy_table_fingerprint(data)):
        account.rekey(fingerprint)
    account.check_table(fingerprint, fingerprint_source(data))


def releasable(text: str) -> str:
    """A stored account text (its label, a history entry) as a release shows it: the
    text, or :data:`~synth_core.report.WITHHELD_SEED_TEXT` when it reads as a seed.
    New labels and entries that would are refused when made; an account made before
    that rule can hold one, and it cannot be changed."""
    return WITHHELD_SEED_TEXT if reads_as_seed(text) else text


def charged_run(account: BudgetAccount, config, outcome, data, guarantee: Guarantee, start):
    """Run ``start()`` (the generator of one ``Synthesizer.run`` with ``config``, on
    the private table ``data``, its rho stated under ``guarantee``, filling
    ``outcome``, an :class:`~synth_core.api.RunOutcome`) charged to ``account``.

    Checks that the account is ``data``'s (:func:`check_run_table`), then
    reserves the run's rho (:func:`run_rho`: its Ledger's total, 0 for a
    zero-budget mechanism) before ``start`` is called, so a refused run never
    measures its data; settles with the spend of this run's own ledger
    (``outcome.engine``, not the Synthesizer's latest run) when the run ends,
    stops or fails; puts :meth:`BudgetAccount.release_block` in the finished
    run's report as ``budget_account``.
    """
    if not isinstance(account, BudgetAccount):
        raise ConfigError(f"budget must be a BudgetAccount, not {type(account).__name__}.",
                          hint="Open the account file with "
                               "synth_core.budget.BudgetAccount.open(path).")
    check_run_table(account, data)
    rho = run_rho(config.mechanism, config.epsilon, config.delta)
    reservation = account.reserve(rho, f"{config.mechanism} at epsilon={config.epsilon:g}",
                                  guarantee=guarantee, mechanism=config.mechanism,
                                  delta=config.delta)
    try:
        yield from start()
    finally:
        spent = outcome.engine.ledger.spent if outcome.engine is not None else 0.0
        reservation = account.settle(reservation, spent, finished=outcome.result is not None)
    if outcome.result is not None:
        block = account.release_block(reservation)
        check_release(block)
        outcome.result.report["budget_account"] = block


def open_for_table(path, *, fingerprint: str, label: str, epsilon: float | None = None,
                   delta: float | None = None, default_delta: float | None = None,
                   fingerprint_of: str | None = None) -> BudgetAccount:
    """The account at ``path`` for the table with ``fingerprint``: opened (and
    checked to belong to it) if the file exists, else created with a total of
    (epsilon, delta), ``delta`` defaulting to ``default_delta`` (a run's own
    delta). ConfigError if it does not exist and no total is given, or if it
    exists and ``epsilon`` (at ``delta``, else at the account's own delta) is
    another total (a total is never changed). Two processes creating it at once:
    one creates, the other opens."""
    path = Path(path)

    def opened() -> BudgetAccount:
        account = BudgetAccount.open(path)
        account.check_table(fingerprint, fingerprint_of)
        at = delta if delta is not None else \
            (account.cap or {}).get("delta", default_delta)
        if epsilon is not None and at is not None:
            asked = rho_from_epsilon_delta(float(epsilon), float(at))
            if not math.isclose(asked, account.total_rho, rel_tol=1e-9):
                raise ConfigError(
                    f"The budget account '{path}' ({account.label}) has a total of "
                    f"{account.total_text()}; a total of epsilon {epsilon:g} "
                    f"(delta {at:g}) was asked for, and an account's total is never changed.",
                    hint="Leave out --budget-total-epsilon to use the account as it is.",
                    path=str(path))
        return account

    if path.exists():
        return opened()
    if epsilon is None:
        raise ConfigError(f"There is no budget account at '{path}' yet.",
                          hint="Create it by giving the table's total budget, e.g. "
                               "--budget-total-epsilon 5 (with --budget-delta).", path=str(path))
    try:
        return BudgetAccount.create(path, label=label, fingerprint=fingerprint, epsilon=epsilon,
                                    delta=delta if delta is not None else default_delta,
                                    fingerprint_of=fingerprint_of)
    except AccountExistsError:   # another process created it in the meantime
        return opened()
