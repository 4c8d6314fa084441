"""The mechanisms, by the names used everywhere (CLI, API, reports, charts)."""

from __future__ import annotations

from ..errors import ConfigError
from .aim import AIM
from .jam_pgm import JAMPGM
from .public_only import PublicOnly

MECHANISMS = {
    AIM.name: AIM,
    JAMPGM.name: JAMPGM,
    PublicOnly.name: PublicOnly,
}


def make_mechanism(name: str, **options):
    """Build a mechanism by name with its options (paper defaults for the rest)."""
    try:
        cls = MECHANISMS[name]
    except KeyError:
        raise ConfigError(f"Unknown mechanism {name!r}.",
                          hint=f"Available: {', '.join(MECHANISMS)}.") from None
    return cls(**options)


__all__ = ["AIM", "JAMPGM", "PublicOnly", "MECHANISMS", "make_mechanism"]
