"""The session's link to each table's budget account (synth_core.budget).

The account of a table is the file ``$SYNTH_WORKBENCH_OUT/budgets/<fingerprint>.json``
(default ``out/budgets``, next to the Compare results): every session, and
every restart of the server, that loads the same table finds the same
account. The fingerprint is the SHA-256 of the table's content
(:func:`~synth_core.budget.table_fingerprint`): of the records of a table in
memory, whatever their order, of the file's bytes for a file that stays on
disk (the table source computes it).

Runs and Compare jobs reserve their rho (:func:`~synth_core.budget.run_rho`:
``rho_from_epsilon_delta(epsilon, delta)``, 0 for the public-only baseline)
before they start and settle with what their ledger spent. What-if previews
read no private value and are not charged. Without an account, runs
are not capped (only each run's own ledger applies).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..budget import BudgetAccount, BudgetCharge, releasable, run_rho
from ..errors import ConfigError, GuaranteeMismatchError
from ..privacy import Guarantee, cdp_epsilon, rho_from_epsilon_delta
from ..report import atomic_write_bytes


def budget_dir() -> Path:
    """Where the accounts are kept (``$SYNTH_WORKBENCH_OUT/budgets``, default ``out/budgets``)."""
    return Path(os.environ.get("SYNTH_WORKBENCH_OUT", "out")) / "budgets"


def budget_path(fingerprint: str) -> Path:
    """The account file of the table with this fingerprint."""
    return budget_dir() / f"{fingerprint[:32]}.json"


def account_place(account: BudgetAccount) -> str:
    """Where an account is, as terminal notes say it: the budgets folder for the
    workbench's own (its file name is the table's fingerprint, a function of the
    private data, so notes leave it out), the path of a ``--budget-file``."""
    if account.path.parent.resolve() == budget_dir().resolve():
        return f"in the workbench's budgets folder '{budget_dir()}'"
    return f"'{account.path}'"


#: a file in the budgets folder that names a table's account kept elsewhere
POINTER_FORMAT = "synth-budget-pointer/1"


def _pointed_to(path: Path) -> Path:
    """The account a file of the budgets folder stands for: the file itself, or the
    account a pointer names (ConfigError, saying what to do, if that is gone)."""
    state = _pointer_state(path)
    if state is None:
        return path                     # an account (BudgetAccount.open says if it is not)
    if not isinstance(state.get("account"), str):
        raise ConfigError(f"The budget pointer '{path}' is damaged: it names no account.",
                          hint="Restore it from a backup, or write the account's path into its "
                               "'account' field.", path=str(path))
    target = Path(state["account"])
    if not target.exists():
        raise ConfigError(
            f"This table's budget account is '{target}' (the workbench's budgets folder points "
            f"to it in '{path}'), and that file is missing.",
            hint=f"If the account was moved, write its new path into the 'account' field of "
                 f"'{path}'; else restore it from a backup (no run on this table can be "
                 f"charged until then). Delete '{path}' only if the account is lost for good: "
                 "the table would then get a fresh total.", path=str(target))
    if target.resolve() == path.resolve() or _pointer_state(target) is not None:
        raise ConfigError(f"The budget pointer '{path}' is damaged: it points to "
                          f"{'itself' if target.resolve() == path.resolve() else 'a pointer'}, "
                          "not to an account.",
                          hint="Write the account's own path into its 'account' field.",
                          path=str(path))
    return target


def _pointer_state(path: Path) -> dict | None:
    """The pointer stored at ``path``; None when the file is anything else."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return state if isinstance(state, dict) and state.get("format") == POINTER_FORMAT else None


def register_account(fingerprint: str, account: BudgetAccount) -> bool:
    """Put a pointer to ``account`` (a ``--budget-file`` kept outside the budgets
    folder) at :func:`budget_path`, so that the workbench and every later run find
    it and a second account of the table is refused. False when the folder
    already knows the table (then nothing is written)."""
    path = budget_path(fingerprint)
    if path.exists() or path.resolve() == account.path.resolve():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    pointer = {"format": POINTER_FORMAT, "account": str(account.path.resolve()),
               "label": account.label, "registered": _dt.datetime.now(_dt.timezone.utc)
               .isoformat(timespec="seconds")}
    # the lock BudgetAccount.create takes for this path: the workbench setting a total
    # at this moment either finds the pointer or makes its account first, never both
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            if path.exists():
                return False
            atomic_write_bytes(path, (json.dumps(pointer, indent=2) + "\n").encode("utf-8"))
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    return True


@dataclass
class BudgetHold:
    """A run's link to its table's account: the table, what the run may spend and,
    when the table has an account, the reservation made for it."""

    fingerprint: str
    what: str
    mechanism: str
    rho: float
    guarantee: Guarantee
    account: BudgetAccount | None = None
    charge: BudgetCharge | None = None


@dataclass
class BudgetService:
    """Find, create, reserve and settle tables' accounts, by table fingerprint."""

    #: rho this session's runs spent on tables without an account, by table
    #: fingerprint and by the guarantee it is stated under (a finished run that spent
    #: nothing is kept at 0: its release still tells under which relation); recorded
    #: in the account when the curator sets the total, or once one is found
    unbudgeted: dict[str, dict[Guarantee, float]] = field(default_factory=dict)
    #: this session's runs in progress on tables without an account, by table
    #: fingerprint (reserved in the account when the curator sets the total)
    _running: dict[str, list[BudgetHold]] = field(default_factory=dict, repr=False)
    #: runs start, end and totals are set from several threads (background runs)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @staticmethod
    def account(fingerprint: str) -> BudgetAccount | None:
        """The table's account, or None if its total budget is not set: the file
        :func:`budget_path`, or the command-line account it points to
        (:func:`register_account`)."""
        path = budget_path(fingerprint)
        if not path.exists():
            return None
        account = BudgetAccount.open(_pointed_to(path))
        account.check_table(fingerprint)
        return account

    def create(self, fingerprint: str, epsilon: float, delta: float, label: str,
               fingerprint_of: str | None = None) -> BudgetAccount:
        """Create the table's account with a total of (epsilon, delta)
        (``rho_total = rho_from_epsilon_delta(epsilon, delta)``). An existing
        account is never replaced. What this session's runs already spent on the
        table (runs that ended before the total was set) is recorded in it at once:
        the total covers the table's whole history, not only what comes next, so a
        total they have already used up is refused (ConfigError) and nothing is
        written: it could never be raised again. Runs of this session still in
        progress on the table are reserved in it at once, so the total counts them
        too (a total they would pass is refused in the same way)."""
        with self._lock:
            made_before = self.unbudgeted.get(fingerprint, {})
            earlier = sum(made_before.values())
            running = [h for h in self._running.get(fingerprint, []) if h.charge is None]
            in_progress = sum(h.rho for h in running)
            total = rho_from_epsilon_delta(float(epsilon), float(delta))
            made = set(made_before) | {h.guarantee for h in running}
            guarantee = Guarantee.widest(made)
            if made and guarantee is None:
                raise ConfigError(
                    "This session's runs on this table were stated under different neighbour "
                    f"relations ({'; '.join(sorted(g.text() for g in made))}): no one total "
                    "adds them up, because a run's rho under one relation is not its cost "
                    "under the other.",
                    hint="Set the total in a new session and keep to one relation "
                         "({neighbours}) for this table's runs.")
            if (earlier > 0 and earlier >= total) or earlier + in_progress > total:
                what = (f"spent rho = {earlier:.4g}" if earlier else "") + \
                    (" and " if earlier and running else "") + \
                    (f"reserved rho = {in_progress:.4g} for {len(running)} run(s) still going"
                     if running else "")
                raise ConfigError(
                    f"This session's runs have already {what} on this table (rho = "
                    f"{earlier + in_progress:.4g}, epsilon = "
                    f"{cdp_epsilon(earlier + in_progress, delta):.3g} at delta = {delta:g}): "
                    f"a total of epsilon = {epsilon:g} (rho = {total:.4g}) would be used up "
                    "before it is set.",
                    hint="Set a larger total (it counts every run on the table, those already "
                         "made or still going included, and cannot be changed once set), or "
                         "wait for the runs to end.")
            account = BudgetAccount.create(budget_path(fingerprint), label=label,
                                           fingerprint=fingerprint,
                                           fingerprint_of=fingerprint_of,
                                           epsilon=float(epsilon), delta=float(delta),
                                           guarantee=guarantee)
            for made_under, rho in self.unbudgeted.pop(fingerprint, {}).items():
                if rho > 0:
                    account.record_spent(rho, "runs in this session before the total was set",
                                         guarantee=made_under)
            for hold in running:
                hold.account = account
                hold.charge = account.reserve(hold.rho, hold.what, guarantee=hold.guarantee,
                                              mechanism=hold.mechanism, delta=float(delta))
        return account

    def _absorb(self, fingerprint: str) -> None:
        """Once the table has an account, record in it what this session's runs spent
        on the table before (the account may have been made by another session or a
        ``synth run --budget-file``): the total counts every run on the table. A run
        under a relation the account's guarantee does not cover is recorded all the
        same (spending happened), among its :attr:`~BudgetAccount.other_guarantees`."""
        with self._lock:
            if not self.unbudgeted.get(fingerprint):
                return
            account = self.account(fingerprint)
            if account is None:
                return
            for made_under, rho in self.unbudgeted.pop(fingerprint).items():
                account.record_spent(rho, "runs in this session before the total was found",
                                     guarantee=made_under)

    def table_spent(self, fingerprint: str) -> tuple[float, str]:
        """(rho spent on the table, what that counts): its account's spend (every
        run charged to it, in any session) if its total is set, else what this
        session's runs spent on it."""
        self._absorb(fingerprint)
        account = self.account(fingerprint)
        if account is not None:
            return account.spent, f"its budget account '{releasable(account.label)}'"
        return sum(self.unbudgeted.get(fingerprint, {}).values()), "this session's runs"

    def table_guarantees(self, fingerprint: str) -> set[Guarantee]:
        """What the rho :meth:`table_spent` counts is stated under: the account's
        guarantee and those of runs recorded in it that it does not cover, else those
        of this session's runs on the table."""
        self._absorb(fingerprint)
        account = self.account(fingerprint)
        if account is not None:
            return ({account.guarantee} if account.guarantee is not None else set()) | \
                set(account.other_guarantees)
        return set(self.unbudgeted.get(fingerprint, {}))

    def check_fits(self, fingerprint: str, runs, delta: float, what: str) -> None:
        """Refuse up front (BudgetExceededError, saying what is left) when ``runs``
        ((mechanism, epsilon) pairs) would together pass the account's total.
        Reserves nothing."""
        account = self.account(fingerprint)
        if account is None:
            return
        need = sum(run_rho(m, e, delta) for m, e in runs)
        account.refuse_unless_fits(need, what, delta)

    def reserve(self, fingerprint: str, config, what: str,
                public_columns: Sequence[str] = (), public_flag: str | None = None
                ) -> BudgetHold:
        """Reserve the rho of a run of ``config`` (a RunConfig; ``public_columns`` and
        ``public_flag`` as given to the run) in the table's account before it starts
        (BudgetExceededError when it does not fit, GuaranteeMismatchError when the
        total is stated under a relation that does not cover it). Without an account
        nothing is reserved, but the hold remembers the table, so that what the run
        spends is counted once the curator sets the table's total."""
        rho = run_rho(config.mechanism, config.epsilon, config.delta)
        hold = BudgetHold(fingerprint, what, config.mechanism, rho,
                          config.guarantee(public_columns, public_flag))
        self._absorb(fingerprint)
        with self._lock:
            account = self.account(fingerprint)
            if account is None:
                self._running.setdefault(fingerprint, []).append(hold)
                return hold
        hold.account = account
        hold.charge = account.reserve(rho, what, guarantee=hold.guarantee,
                                      mechanism=config.mechanism, delta=float(config.delta))
        return hold

    def settle(self, hold: BudgetHold, spent: float | None, *,
               finished: bool) -> BudgetCharge | None:
        """Settle a hold with what the run spent (None: unknown, the whole
        reservation counts); ``finished``: the run ended with a result (else it
        failed or was stopped). A run that started before the table had an account
        is recorded in the account if one exists now (never refused: spending
        happened), else kept in :attr:`unbudgeted` until :meth:`create` records it;
        a run that failed before spending anything is not kept."""
        spent = hold.rho if spent is None else float(spent)
        with self._lock:
            running = self._running.get(hold.fingerprint, [])
            running[:] = [h for h in running if h is not hold]
            if hold.charge is None:    # no account when it started
                if spent <= 0 and not finished:
                    return None
                account = self.account(hold.fingerprint)
                if account is not None:     # made meanwhile: the run's report names it
                    hold.account = account
                    return account.record_spent(spent, hold.what, guarantee=hold.guarantee,
                                                mechanism=hold.mechanism)
                made = self.unbudgeted.setdefault(hold.fingerprint, {})
                made[hold.guarantee] = made.get(hold.guarantee, 0.0) + spent
                return None
        return hold.account.settle(hold.charge, spent, finished=finished)

    def settle_run(self, hold: BudgetHold, worker) -> None:
        """After a background run: settle with its ledger's spend and put the
        account's block (label, total, before, this run, remaining, history)
        in a finished run's report."""
        charge = self.settle(hold, worker.rho_spent, finished=worker.result is not None)
        if charge is not None and hold.account is not None and worker.result is not None:
            worker.result.report["budget_account"] = hold.account.release_block(charge)


# ---------------------------------------------------------------- the command line's link


#: what a run that counts a file on disk says when it finds no account for it
ENGINE_NO_ACCOUNT = ("no budget account was found for this file's bytes: a run that counts "
                     "the file on disk (--backend {backend}) is charged only to an account keyed "
                     "by those bytes, and one the workbench made for the table loaded in memory "
                     "is keyed by its content. If this table has a total set in the workbench, "
                     "run with --backend memory so that the run is charged to it")


def _has_accounts() -> bool:
    """Whether the workbench's budgets folder holds any account (else no table needs
    reading to look one up)."""
    return any(budget_dir().glob("*.json"))


def frame_fingerprint(frame, budget_file=None) -> str:
    """:func:`~synth_core.budget.table_fingerprint` of a loaded table. An account of
    it made before fingerprints ignored row and column order (it knows the table
    by :func:`~synth_core.budget.legacy_table_fingerprint`) is re-keyed first, so
    that it is found: the workbench's, moved to its new file name, and
    ``budget_file``, if given, where it is."""
    from ..budget import legacy_table_fingerprint, table_fingerprint
    fingerprint = table_fingerprint(frame)
    moves = []          # (where an old account may be, None: under its old name; where it goes)
    if _has_accounts() and not budget_path(fingerprint).exists():
        moves.append((None, budget_path(fingerprint)))
    if budget_file is not None and Path(budget_file).is_file():
        moves.append((Path(budget_file), Path(budget_file)))
    if moves:
        legacy = legacy_table_fingerprint(frame)
        for at, to in moves:
            at = at or budget_path(legacy)
            try:
                old = BudgetAccount.open(at) if at.is_file() else None
            except ConfigError:
                if at.exists():
                    raise
                old = None          # re-keyed by another process a moment ago
            if old is not None and old.fingerprint == legacy:
                old.rekey(fingerprint, to)
    return fingerprint


def _fingerprint(data, budget_file=None) -> str | None:
    """:func:`frame_fingerprint` of a loaded frame, or the fingerprint of a file's
    bytes; None for a folder or glob of Parquet files (no one content to hash)."""
    import pandas as pd

    from ..budget import table_fingerprint
    if isinstance(data, pd.DataFrame):
        return frame_fingerprint(data, budget_file)
    if Path(data).is_file():
        return table_fingerprint(data)
    return None


def command_line_fingerprint(data, backend: str = "memory") -> str | None:
    """The fingerprint the workbench gives the table a command-line run reads:
    the loaded frame's content (memory backend; a path is loaded as the
    workbench loads an upload), or the file's bytes (a file counted on disk);
    None for a folder or glob of Parquet files."""
    import pandas as pd

    from ..tables import load_table
    if backend == "memory" and not isinstance(data, pd.DataFrame) and Path(data).is_file():
        data = load_table(data)
    return _fingerprint(data)


def run_account(data, *, budget_file=None, label: str, epsilon: float | None = None,
                delta: float | None = None, default_delta: float | None = None
                ) -> BudgetAccount | None:
    """The budget account a run outside the workbench (``synth run``, a repeat
    notebook) is charged to, for its table ``data`` (a loaded frame, or a file an
    engine backend counts): ``budget_file`` (opened, or created with a total of
    ``epsilon``: :func:`~synth_core.budget.open_for_table`); without it, the
    account the workbench keeps for the table (:func:`budget_path`), if any; else
    None. A ``budget_file`` other than the account the workbench keeps for the table
    (a new file, a copy, an account made before the workbench's) is refused
    (ConfigError naming it): two accounts of one table would let its runs together
    pass its total."""
    from ..budget import fingerprint_source, open_for_table, table_fingerprint
    if budget_file is None and not _has_accounts():
        return None
    fingerprint = _fingerprint(data, budget_file)
    kept = BudgetService.account(fingerprint) if fingerprint is not None else None
    if budget_file is None:
        return kept
    path = Path(budget_file)
    if kept is not None and path.resolve() != kept.path.resolve():
        what = "is another account of it" if path.exists() else "would be a second account"
        raise ConfigError(
            f"This table has a budget account, '{kept.label}' {account_place(kept)} "
            f"({kept.left_text(default_delta)} left); '{path}' {what}. Two accounts for one "
            "table would let its runs together pass the table's total.",
            hint="Leave out the budget file: the run is then charged to that account.",
            path=str(path))
    account = open_for_table(path, fingerprint=fingerprint or table_fingerprint(data),
                             label=label, epsilon=epsilon, delta=delta,
                             default_delta=default_delta, fingerprint_of=fingerprint_source(data))
    if fingerprint is not None and not register_account(fingerprint, account):
        kept = BudgetService.account(fingerprint)       # registered by another process meanwhile
        if kept.path.resolve() != account.path.resolve():
            raise ConfigError(f"This table's budget account is '{kept.label}' "
                              f"{account_place(kept)}; '{path}' is another account of it.",
                              hint="Leave out the budget file: the run is then charged to "
                                   "that account.", path=str(path))
    return account


@dataclass
class SweepCharges:
    """A ``synth sweep``'s runs charged to their tables' workbench accounts
    (:class:`~synth_core.experiments.JobCharge`): ``fingerprints`` maps a
    dataset's name to its table's fingerprint, for the datasets whose table has
    an account; the other datasets' runs are capped by their own epsilon only."""

    fingerprints: dict[str, str]
    service: BudgetService = field(default_factory=BudgetService)

    @classmethod
    def for_jobs(cls, jobs) -> "SweepCharges":
        """The accounts of the jobs' tables, each checked up front: refused
        (BudgetExceededError, saying what is left) when the jobs on one table (under
        any of its dataset names) would together pass its total, or when its total's
        guarantee does not cover one of them (GuaranteeMismatchError). Without any account
        in the workbench's folder, no table is read to fingerprint it."""
        if not _has_accounts():
            return cls({})
        fingerprints: dict[str, str | None] = {}
        by_table: dict[str, list] = {}
        for job in jobs:
            d = job.dataset
            if d.name not in fingerprints:
                fingerprints[d.name] = command_line_fingerprint(d.data, d.backend)
            if fingerprints[d.name] is not None:
                by_table.setdefault(fingerprints[d.name], []).append(job)
        charged = {}
        for fingerprint, todo in by_table.items():
            account = BudgetService.account(fingerprint)
            if account is None:
                continue
            names = sorted({j.dataset.name for j in todo})
            guarantees = {j.config.guarantee(j.public_columns, j.dataset.public_flag): j
                          for j in todo}
            if account.guarantee is None and len(guarantees) > 1:
                raise GuaranteeMismatchError(
                    f"The sweep's runs on dataset{'s' if len(names) > 1 else ''} "
                    f"{', '.join(map(repr, names))} are stated under "
                    f"{len(guarantees)} relations ({'; '.join(sorted(g.text() for g in guarantees))}), "
                    f"and the table's total ('{account.label}') has none yet: its first run "
                    "would fix it, and the others would be refused part way.",
                    hint="Run the sweep's runs under one relation ({neighbours}, the same "
                         "public columns and rows).")
            for g, j in guarantees.items():
                account.refuse_unless_covered(g, f"the sweep's run {j.charge_label()!r}")
            need = sum(run_rho(j.config.mechanism, j.config.epsilon, j.config.delta) for j in todo)
            account.refuse_unless_fits(
                need, f"this sweep's {len(todo)} run(s) on dataset"
                      f"{'s' if len(names) > 1 else ''} {', '.join(map(repr, names))}",
                todo[0].config.delta)
            charged.update({name: fingerprint for name in names})
        return cls(charged)

    def accounts(self) -> dict[str, BudgetAccount]:
        """Dataset name -> its table's account (the datasets that have one)."""
        return {name: self.service.account(fp) for name, fp in self.fingerprints.items()}

    def reserve(self, job) -> BudgetHold | None:
        fingerprint = self.fingerprints.get(job.dataset.name)
        if fingerprint is None:
            return None
        return self.service.reserve(fingerprint, job.config, f"synth sweep: {job.charge_label()}",
                                    job.public_columns, job.dataset.public_flag)

    def settle(self, hold: BudgetHold | None, rho_spent: float | None, *,
               finished: bool) -> None:
        if hold is not None:
            self.service.settle(hold, rho_spent, finished=finished)
