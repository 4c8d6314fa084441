"""Public columns (a *vertical* public/private split) for the query-release
mechanisms vPMW and vGEM-Pub.

The user marks some columns ``P`` of the private table as public; the rest
``Q`` are private. Neighbouring tables have the same ``n`` records with the
same public values and differ in the private values of one record, so any
query on ``P`` alone has sensitivity 0 (it is answered exactly, for free),
and a counting query touching ``Q`` has sensitivity ``1/n`` as a fraction, as
under bounded DP. The column checks reuse :mod:`synth_core.conditional`'s
(the ones vJAM-PGM uses): unknown columns are a :class:`ConfigError` naming
the column.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..conditional import check_known_columns, split_columns
from ..errors import ConfigError


def parse_public_columns(name: str, public_columns) -> tuple[str, ...]:
    """The public columns given to ``name``'s constructor (a list or ``"a,b"``);
    at least one is required."""
    cols = split_columns(public_columns)
    if not cols:
        raise ConfigError(f"{name} needs public columns (the columns every record shows "
                          f"publicly).",
                          hint="Give --public-columns a,b (API: public_columns=[...]).")
    return cols


def check_public_split(name: str, public_columns: Sequence[str],
                       sizes: Mapping[str, int]) -> tuple[str, ...]:
    """Check the split against the data; returns the private columns ``Q``.

    Unknown public columns and an all-public split (nothing to protect, and
    nothing for the mechanism to learn privately) are :class:`ConfigError`\\ s.
    """
    check_known_columns(public_columns, sizes)
    private = tuple(c for c in sizes if c not in set(public_columns))
    if not private:
        raise ConfigError(f"{name}: every column is marked public, so nothing is private.",
                          hint="Leave at least one column private, or use public-only.")
    return private
