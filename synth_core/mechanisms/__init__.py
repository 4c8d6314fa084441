"""The mechanisms, by the names used everywhere (CLI, API, reports, charts).

Each class declares its capabilities and options as data
(:mod:`synth_core.mechanisms.base`); this module is the registry.
"""

from __future__ import annotations

from ..errors import ConfigError
from .aim import AIM
from .base import (BOUNDED, NO, OPTIONAL, PGM_MODEL, PUBLIC_ROWS, QUERY_ANSWERS, REQUIRED,
                   UNBOUNDED, AdaptiveMechanism, Capabilities, Mechanism, Option, ScoreTerms)
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


def mechanism_class(name: str) -> type[Mechanism]:
    """The registered class of ``name`` (ConfigError listing the registry)."""
    try:
        return MECHANISMS[name]
    except KeyError:
        raise ConfigError(f"Unknown mechanism {name!r}.",
                          hint=f"Available: {', '.join(MECHANISMS)}.") from None


def check_options(name: str, options) -> None:
    """ConfigError for options mechanism ``name`` does not declare (naming the valid
    ones), public columns it does not use, conditional generation it does not have."""
    mechanism_class(name).check_options(options)


def resolve_fit_iters(name: str, fit_iters: int | None) -> int | None:
    """``fit_iters`` if given, else the mechanism's per-round default (None for
    an unknown mechanism: the config's validation reports it)."""
    if fit_iters is not None:
        return int(fit_iters)
    cls = MECHANISMS.get(name)
    return None if cls is None else int(cls.fit_iters)


def make_mechanism(name: str, **options):
    """Build a mechanism by name with its options (paper defaults for the rest);
    options are checked against its declared table first (:func:`check_options`)."""
    return mechanism_class(name).build(**options)


__all__ = ["AIM", "JAMPGM", "VJAMPGM", "MWEMPGM", "PMWPub", "VPMW", "GEM", "GEMPub", "VGEMPub",
           "PublicOnly", "MECHANISMS", "Mechanism", "AdaptiveMechanism", "Capabilities", "Option",
           "ScoreTerms", "NO", "OPTIONAL", "REQUIRED", "BOUNDED", "UNBOUNDED", "PGM_MODEL",
           "QUERY_ANSWERS", "PUBLIC_ROWS", "check_options", "make_mechanism", "mechanism_class",
           "resolve_fit_iters"]
