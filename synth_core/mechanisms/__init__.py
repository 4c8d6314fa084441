"""The mechanisms, by the names used everywhere (CLI, API, reports, charts).

Each class declares its capabilities and options as data
(:mod:`synth_core.mechanisms.base`); this module is the registry. The registry
holds each mechanism's name and where its class lives (:data:`REGISTRY`), and
imports a class on first use: listing the names (``synth --help``'s choices,
``"aim" in MECHANISMS``) imports no mechanism and so neither the engine nor
the model nor JAX.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from .base import Mechanism

#: mechanism name -> (module of synth_core.mechanisms, its class), in display order;
#: each class's ``name`` attribute is its key here
REGISTRY: dict[str, tuple[str, str]] = {
    "aim": ("aim", "AIM"),
    "jam-pgm": ("jam_pgm", "JAMPGM"),
    "vjam-pgm": ("vjam_pgm", "VJAMPGM"),
    "mwem-pgm": ("mwem_pgm", "MWEMPGM"),
    "pmw-pub": ("pmw_pub", "PMWPub"),
    "vpmw": ("pmw_pub", "VPMW"),
    "gem": ("gem", "GEM"),
    "gem-pub": ("gem", "GEMPub"),
    "vgem-pub": ("gem", "VGEMPub"),
    "public-only": ("public_only", "PublicOnly"),
    "mst": ("mst", "MST"),
    "privbayes-pgm": ("privbayes", "PrivBayesPGM"),
    "independent": ("independent", "Independent"),
}

#: names the package exports, each from one module of synth_core.mechanisms
_EXPORTS: dict[str, str] = {
    **{cls: module for module, cls in REGISTRY.values()},
    **{name: "base" for name in (
        "BOUNDED", "NO", "OPTIONAL", "PGM_MODEL", "PUBLIC_ROWS", "QUERY_ANSWERS", "REQUIRED",
        "UNBOUNDED", "AdaptiveMechanism", "Capabilities", "Mechanism", "Option", "ScoreTerms")},
}


def _load(module: str, attribute: str):
    """``attribute`` of ``synth_core.mechanisms.<module>``, importing that module now."""
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


class MechanismRegistry(Mapping):
    """Name -> mechanism class, read-only; a class is imported when first looked up.

    Iterating, ``len`` and ``in`` read the names only; ``[name]``, ``get``,
    ``values`` and ``items`` import the classes they return.
    """

    def __init__(self, entries: Mapping[str, tuple[str, str]]):
        self._entries = dict(entries)

    def __getitem__(self, name: str) -> type[Mechanism]:
        module, cls = self._entries[name]
        return _load(module, cls)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name) -> bool:
        return name in self._entries

    def __repr__(self) -> str:
        return f"MechanismRegistry({list(self._entries)})"


MECHANISMS = MechanismRegistry(REGISTRY)


def __getattr__(name: str):
    """The mechanism classes and the declarations of :mod:`.base`, imported on first use."""
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = _load(_EXPORTS[name], name)
    globals()[name] = value
    return value


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
    """Build a mechanism by name with its options (defaults for the rest);
    options are checked against its declared table first (:func:`check_options`)."""
    return mechanism_class(name).build(**options)


__all__ = ["AIM", "JAMPGM", "VJAMPGM", "MWEMPGM", "PMWPub", "VPMW", "GEM", "GEMPub", "VGEMPub",
           "PublicOnly", "MST", "PrivBayesPGM", "Independent", "MECHANISMS", "Mechanism", "AdaptiveMechanism", "Capabilities", "Option",
           "ScoreTerms", "NO", "OPTIONAL", "REQUIRED", "BOUNDED", "UNBOUNDED", "PGM_MODEL",
           "QUERY_ANSWERS", "PUBLIC_ROWS", "check_options", "make_mechanism", "mechanism_class",
           "resolve_fit_iters", "REGISTRY", "MechanismRegistry"]
