"""The Workbench's link to the loaded table's budget account (synth_core.budget).

A mixin of :class:`~synth_core.workbench.Workbench`. The account of a table
is the file ``$SYNTH_WORKBENCH_OUT/budgets/<fingerprint>.json`` (default
``out/budgets``, next to the Compare results): every session, and every
restart of the server, that loads the same table finds the same account.
The fingerprint is the SHA-256 of the table's content
(:func:`~synth_core.budget.table_fingerprint`): of the frame for a table in
memory, of the file's bytes for a file that stays on disk.

Runs and Compare jobs reserve their rho (:func:`~synth_core.budget.run_rho`:
``rho_from_epsilon_delta(epsilon, delta)``, 0 for the public-only baseline)
before they start and settle with what their ledger spent. What-if previews
read no private value and are not charged. Without an account, runs
are not capped (only each run's own ledger applies).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .budget import BudgetAccount, BudgetCharge, run_rho, table_fingerprint
from .errors import DataError


def budget_dir() -> Path:
    """Where the accounts are kept (``$SYNTH_WORKBENCH_OUT/budgets``, default ``out/budgets``)."""
    return Path(os.environ.get("SYNTH_WORKBENCH_OUT", "out")) / "budgets"


class DatasetBudgetMixin:
    """The loaded table's budget account: find, create, reserve, settle."""

    def table_fingerprint(self) -> str:
        """CURATOR-ONLY: SHA-256 of the loaded table (computed once per table)."""
        if self.data is None:
            raise DataError("No table is loaded yet.",
                            hint="Load a table on the Data page before setting its budget.")
        cached = self.__dict__.get("_fingerprint")
        if cached is not None and cached[0] == self.loads:
            return cached[1]
        if getattr(self, "out_of_core", False):
            fp = table_fingerprint(self.disk.checked_path())
        else:
            fp = table_fingerprint(self.data[self.data_columns])
        self.__dict__["_fingerprint"] = (self.loads, fp)
        return fp

    def budget_path(self) -> Path:
        return budget_dir() / f"{self.table_fingerprint()[:32]}.json"

    def dataset_budget(self) -> BudgetAccount | None:
        """The loaded table's account, or None if its total budget is not set."""
        if self.data is None:
            return None
        path = self.budget_path()
        if not path.exists():
            return None
        account = BudgetAccount.open(path)
        account.check_table(self.table_fingerprint())
        return account

    def set_dataset_budget(self, epsilon: float, delta: float,
                           label: str | None = None) -> BudgetAccount:
        """Create the loaded table's account with a total of (epsilon, delta)
        (``rho_total = rho_from_epsilon_delta(epsilon, delta)``). An existing
        account is never replaced. What this session's runs already spent on the
        table (runs that ended before the total was set) is recorded in it at once:
        the total covers the table's whole history, not only what comes next."""
        fingerprint = self.table_fingerprint()
        account = BudgetAccount.create(self.budget_path(), label=label or self.data_name or "data",
                                       fingerprint=fingerprint,
                                       epsilon=float(epsilon), delta=float(delta))
        earlier = self.unbudgeted_rho.pop(fingerprint, 0.0)
        if earlier > 0:
            account.record_spent(earlier, "runs in this session before the total was set")
        return account

    def check_budget_fits(self, runs, delta: float, what: str) -> None:
        """Refuse up front (BudgetExceededError, saying what is left) when ``runs``
        ((mechanism, epsilon) pairs) would together pass the account's total.
        Reserves nothing."""
        account = self.dataset_budget()
        if account is None:
            return
        need = sum(run_rho(m, e, delta) for m, e in runs)
        account.refuse_unless_fits(need, what, delta)

    def reserve_budget(self, epsilon: float, delta: float, what: str,
                       mechanism: str) -> "BudgetHold":
        """Reserve a run's rho in the table's account before it starts
        (BudgetExceededError when it does not fit). Without an account nothing is
        reserved, but the hold remembers the table, so that what the run spends
        is counted once the curator sets the table's total."""
        rho = run_rho(mechanism, epsilon, delta)
        hold = BudgetHold(self.table_fingerprint(), what, mechanism, rho)
        account = self.dataset_budget()
        if account is not None:
            hold.account = account
            hold.charge = account.reserve(rho, what, mechanism=mechanism, delta=float(delta))
        return hold

    def settle_budget(self, hold: "BudgetHold", spent: float | None) -> BudgetCharge | None:
        """Settle a hold with what the run spent (None: unknown, the whole
        reservation counts). A run that started before the table had an account
        is recorded in the account if one exists now, else kept in
        ``unbudgeted_rho`` until :meth:`set_dataset_budget` records it."""
        spent = hold.rho if spent is None else float(spent)
        if hold.charge is not None:
            return hold.account.settle(hold.charge, spent)
        if spent <= 0:
            return None
        path = budget_dir() / f"{hold.fingerprint[:32]}.json"
        if path.exists():
            account = BudgetAccount.open(path)
            account.check_table(hold.fingerprint)
            return account.record_spent(spent, hold.what, mechanism=hold.mechanism)
        self.unbudgeted_rho[hold.fingerprint] = self.unbudgeted_rho.get(hold.fingerprint, 0.0) + spent
        return None

    def settle_run(self, hold: "BudgetHold", worker) -> None:
        """After a background run: settle with its ledger's spend and put the
        account's block (label, total, before, this run, remaining, history)
        in a finished run's report."""
        charge = self.settle_budget(hold, worker.rho_spent)
        if charge is not None and hold.account is not None and worker.result is not None:
            worker.result.report["budget_account"] = hold.account.release_block(charge)


@dataclass
class BudgetHold:
    """A run's link to its table's account: the table, what the run may spend and,
    when the table has an account, the reservation made for it."""

    fingerprint: str
    what: str
    mechanism: str
    rho: float
    account: BudgetAccount | None = None
    charge: BudgetCharge | None = None
