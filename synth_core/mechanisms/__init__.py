"""The mechanisms, by the names used everywhere (CLI, API, reports, charts)."""

from __future__ import annotations

from ..errors import ConfigError
from .aim import AIM
from .gem import GEM, GEMPub, VGEMPub
from .jam_pgm import JAMPGM
from .mwem_pgm import MWEMPGM
from .pmw_pub import VPMW, PMWPub
from .public_only import PublicOnly
from .vjam_pgm import VJAMPGM

MECHANISMS = {
    AIM.name: AIM,
    JAMPGM.name: JAMPGM,
    VJAMPGM.name: VJAMPGM,
    MWEMPGM.name: MWEMPGM,
    PMWPub.name: PMWPub,
    VPMW.name: VPMW,
    GEM.name: GEM,
    GEMPub.name: GEMPub,
    VGEMPub.name: VGEMPub,
    PublicOnly.name: PublicOnly,
}


def accepts_option(name: str, option: str) -> bool:
    """Whether the mechanism's constructor takes ``option`` (e.g. ``public_columns``)."""
    import inspect

    return option in inspect.signature(MECHANISMS[name].__init__).parameters


def resolve_fit_iters(name: str, fit_iters: int | None) -> int | None:
    """``fit_iters`` if given, else the mechanism's per-round default (None for
    an unknown mechanism: the config's validation reports it)."""
    if fit_iters is not None:
        return int(fit_iters)
    cls = MECHANISMS.get(name)
    return None if cls is None else int(cls.fit_iters)


def make_mechanism(name: str, **options):
    """Build a mechanism by name with its options (paper defaults for the rest)."""
    try:
        cls = MECHANISMS[name]
    except KeyError:
        raise ConfigError(f"Unknown mechanism {name!r}.",
                          hint=f"Available: {', '.join(MECHANISMS)}.") from None
    try:
        return cls(**options)
    except TypeError as exc:  # an option this mechanism does not have
        raise ConfigError(f"Mechanism {name!r} does not accept these options: {exc}.",
                          hint="See docs/mechanisms.md for each mechanism's options.") from None


__all__ = ["AIM", "JAMPGM", "VJAMPGM", "MWEMPGM", "PMWPub", "VPMW", "GEM", "GEMPub", "VGEMPub", "PublicOnly", "MECHANISMS",
           "accepts_option", "make_mechanism", "resolve_fit_iters"]
