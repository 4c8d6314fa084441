"""The workbench's colours, shared by the Plotly charts of the app
(:mod:`synth_core.charts`) and the Altair figures of notebooks
(:mod:`synth_core.notebook`).

One colour per source everywhere: public measurements teal, private ones
orange, the initialisation (several marginals at once) grey, public columns
green. Mechanisms take :data:`MECHANISM_PALETTE` in order of their names,
except the public-only baseline, which is always the public colour. The
colours are the ColorBrewer "Dark2" set (distinct in print and for the common
colour-vision deficiencies); nothing here imports a plotting library.
"""

from __future__ import annotations

from typing import Sequence

PUBLIC_COLOR = "#1b9e77"
PRIVATE_COLOR = "#d95f02"
MIXED_COLOR = "#7f7f7f"
SELECT_COLOR = "#7570b3"
TOTAL_COLOR = "#333333"
PUBLIC_COLUMNS_COLOR = "#66a61e"

SOURCE_COLORS = {"public": PUBLIC_COLOR, "private": PRIVATE_COLOR,
                 "public-columns": PUBLIC_COLUMNS_COLOR}

MECHANISM_PALETTE = ("#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d",
                     "#666666", "#1f78b4")


def source_color(source: str) -> str:
    """The colour of a measurement's source (grey for anything else)."""
    return SOURCE_COLORS.get(source, MIXED_COLOR)


def mechanism_color(name: str, names: Sequence[str]) -> str:
    """The colour of mechanism ``name`` among ``names``: the public colour for
    ``public-only``, else the ``i``-th colour of :data:`MECHANISM_PALETTE`
    (``i`` its place among the other names), grey when it is not listed."""
    if name == "public-only":
        return PUBLIC_COLOR
    others = [n for n in names if n != "public-only"]
    return MECHANISM_PALETTE[others.index(name) % len(MECHANISM_PALETTE)] if name in others \
        else MIXED_COLOR


def mechanism_scale(names: Sequence[str]) -> tuple[list[str], list[str]]:
    """(domain, range) of a categorical colour scale over ``names`` (sorted),
    each name with :func:`mechanism_color` (for Altair's ``alt.Scale``)."""
    domain = sorted(set(names))
    return domain, [mechanism_color(n, domain) for n in domain]
