"""The seed papers' experimental claims, checked as the papers word them.

Every claim is a comparison of mean workload errors (the papers report
averages over seeds) at a set of points (dataset, epsilon). One point holds
when the claimed-lower mean is strictly below the claimed-higher mean; the
point also reports the margin (higher mean minus lower mean: positive where
the claim holds) and the seed range [min, max] of both sides. The claim's
quantifier decides the verdict from the points, with no tolerance:

* ``every``: every point holds (the paper says "across all", "at every");
* ``all but one``: at most one point fails (the paper says "almost all");
* ``most``: more than half of the points hold (the paper says "most");
* ``some``: at least one point holds (the paper says "some values");
* ``at least P%``: at least P% of the points hold (the paper gives a share,
  "best in 85% of settings").

A claim may group its points (per split, per compared method) and require
its quantifier within every group: "across all levels of bias and almost
all values of epsilon" is ``all but one`` point per (split, method), needed
in every group. A claim with points not yet run (a missing cell) has its
verdict as soon as they cannot change it ("every" fails at its first failing
point), and is "not yet checkable" until then. A claim whose wording gives no
measure ("similar", "significantly") is listed with its numbers and the verdict
"not checkable".

Input rows: ``{"dataset", "mechanism", "epsilon", "mean", "min", "max",
"seeds", "sd"}``, one per cell (as ``reproduce.table`` returns them; ``sd`` is the
sample standard deviation over seeds, ``None`` for one seed). Each point also
reports Welch's t-test of its two means (:func:`welch_p`): it does not change
the verdict, it says whether the seeds resolve the difference.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HOLDS, FAILS, MISSING, UNCHECKABLE = "holds", "FAILS", "not yet checkable", "not checkable"
QUANTIFIERS = ("every", "all but one", "most", "some", "at least P%")

JAM_PRIVATE = ("aim", "gem")
ADULT_SPLITS = ("adult_pub025", "adult_pub050", "adult_pub075", "adult_pub100")


@dataclass(frozen=True)
class Claim:
    """One sentence of a paper and the comparison that checks it."""

    key: str
    paper: str          # "JAM-PGM paper, sec. 5.1"
    quote: str          # the paper's words, shortened
    comparison: str     # what is compared, in words
    quantifier: str = "every"
    per: str = ""       # the grouping the quantifier applies within ("" = all points)
    note: str = ""      # how the claim is read, where the wording needs it


@dataclass
class Point:
    """One comparison: ``lower`` claimed below ``higher`` at ``where``."""

    where: str
    lower: str
    higher: str
    lower_cell: dict | None
    higher_cell: dict | None
    group: str = ""

    @property
    def complete(self) -> bool:
        return self.lower_cell is not None and self.higher_cell is not None

    @property
    def margin(self) -> float:
        """higher mean - lower mean (positive: the claim holds at this point)."""
        return self.higher_cell["mean"] - self.lower_cell["mean"]

    @property
    def holds(self) -> bool:
        return self.margin > 0

    def record(self) -> dict:
        """The point as a JSON-able dict: means, margin, relative margin
        (margin / higher mean) and both seed ranges."""
        if not self.complete:
            return {"where": self.where, "lower": self.lower, "higher": self.higher,
                    "missing": True}
        lo, hi = self.lower_cell, self.higher_cell
        # a cell without seeds (the constant 1 of a mean ratio over epsilons) has no
        # seed range: its [min, max] is over something else
        by_seed = lo.get("seeds") is not None and hi.get("seeds") is not None
        return {"where": self.where, "lower": self.lower, "higher": self.higher,
                "lower_mean": lo["mean"], "higher_mean": hi["mean"],
                "margin": self.margin, "relative_margin": self.margin / hi["mean"],
                "lower_range": [lo["min"], lo["max"]], "higher_range": [hi["min"], hi["max"]],
                "seeds": [lo.get("seeds"), hi.get("seeds")],
                # the claim holds in every seed pairing: the ranges do not overlap
                "seed_ranges_separate": lo["max"] < hi["min"] if by_seed else None,
                # the claim fails in every seed pairing
                "seed_ranges_reversed": hi["max"] < lo["min"] if by_seed else None,
                "welch_p": welch_p(lo, hi),
                "holds": self.holds}


def welch_p(a: dict, b: dict) -> float | None:
    """Two-sided p-value of Welch's t-test that two cells' means differ, from their
    seed means, sample standard deviations (``sd``) and seed counts; ``None`` for a
    cell without ``sd`` (one seed, or a derived cell: a difference or a ratio) or when
    both spreads are zero. A large p says the seeds do not resolve the two means, so
    the point's verdict could turn with more seeds."""
    if a.get("sd") is None or b.get("sd") is None or (a["sd"] == 0 and b["sd"] == 0):
        return None
    from scipy.stats import ttest_ind_from_stats

    return float(ttest_ind_from_stats(a["mean"], a["sd"], a["seeds"], b["mean"], b["sd"],
                                      b["seeds"], equal_var=False).pvalue)


@dataclass
class Check:
    """A claim with its points: the verdict and the evidence."""

    claim: Claim
    points: list[Point] = field(default_factory=list)
    checkable: bool = True

    def verdict(self) -> str:
        """HOLDS or FAILS once the points not yet run cannot change it (every quantifier
        is monotone: a missing point counted as holding, then as failing, gives the
        bounds); MISSING while they could, or with no points."""
        if not self.checkable:
            return UNCHECKABLE
        if not self.points:
            return MISSING
        groups: dict[str, list[bool | None]] = {}
        for p in self.points:
            groups.setdefault(p.group, []).append(p.holds if p.complete else None)
        q = self.claim.quantifier
        if any(not quantified(q, [h is not False for h in v]) for v in groups.values()):
            return FAILS        # fails even if every missing point held
        if all(quantified(q, [h is True for h in v]) for v in groups.values()):
            return HOLDS        # holds even if every missing point failed
        return MISSING

    def record(self) -> dict:
        """The finding as one JSON-able dict (also the Markdown line's source)."""
        done = [p for p in self.points if p.complete]
        return {"finding": self.claim.key, "paper": self.claim.paper, "quote": self.claim.quote,
                "comparison": self.claim.comparison, "quantifier": self.claim.quantifier,
                "per": self.claim.per, "note": self.claim.note, "verdict": self.verdict(),
                "holds": {HOLDS: True, FAILS: False}.get(self.verdict()),
                "points_holding": sum(p.holds for p in done), "points": len(done),
                "missing": [f"{p.where}: {p.lower} / {p.higher}" for p in self.points
                            if not p.complete],
                "failing": [f"{p.where}: {p.lower} vs {p.higher}" for p in done if not p.holds],
                "detail": [p.record() for p in self.points]}


def quantified(quantifier: str, holds: list[bool]) -> bool:
    """Whether the points' outcomes satisfy the quantifier (see the module docstring)."""
    k, n = sum(holds), len(holds)
    if quantifier == "every":
        return k == n
    if quantifier == "all but one":
        return k >= n - 1
    if quantifier == "most":
        return 2 * k > n
    if quantifier == "some":
        return k >= 1
    if quantifier.startswith("at least ") and quantifier.endswith("%"):
        return n > 0 and 100 * k >= float(quantifier[len("at least "):-1]) * n
    raise ValueError(f"unknown quantifier {quantifier!r}; one of {QUANTIFIERS}")


#: the JAM paper's GEM-Pub lines (sec. 5.1: T = 5 and 150 on Adult; sec. 5.2: T = 1 and 5
#: on Titanic), each a baseline of its own in the paper setting
JAM_GEM_PUB_ROUNDS = {"adult": (5, 150), "titanic": (1, 5)}


def gem_pub_labels(rows: list[dict], data: str) -> tuple[str, ...]:
    """GEM-Pub's baseline labels: the paper setting's ``gem-pub T=N`` lines for ``data``
    when the rows hold any of them (a line not yet run then leaves its points missing,
    never out of the check), else our default ``gem-pub``."""
    if any(r["mechanism"].startswith("gem-pub T=") for r in rows):
        return tuple(f"gem-pub T={t}" for t in JAM_GEM_PUB_ROUNDS[data])
    return ("gem-pub",)


def cell_index(rows: list[dict]) -> dict[tuple, dict]:
    """(dataset, mechanism, epsilon) -> the row (mean, min, max, seeds)."""
    return {(r["dataset"], r["mechanism"], float(r["epsilon"])): r for r in rows}


def epsilons_of(rows: list[dict], grid=()) -> list[float]:
    """The epsilons of the rows and of the figure's ``grid``: an epsilon of the grid
    not yet run leaves its points missing, never out of the check."""
    return sorted({float(r["epsilon"]) for r in rows} | {float(e) for e in grid})


def datasets_of(rows: list[dict]) -> list[str]:
    return sorted({r["dataset"] for r in rows})


def point(cells: dict, dataset: str, eps: float, lower: str, higher: str, group: str = "",
          lower_data: str | None = None, higher_data: str | None = None) -> Point:
    """``lower`` below ``higher`` (on ``lower_data`` / ``higher_data`` if given,
    else both on ``dataset``) at ``eps``."""
    ld, hd = lower_data or dataset, higher_data or dataset
    where = f"{dataset} ε {eps:g}" if ld == hd else f"ε {eps:g}: {ld} vs {hd}"
    return Point(where, lower, higher, cells.get((ld, lower, eps)), cells.get((hd, higher, eps)),
                 group)


def pairwise(cells: dict, datasets, epsilons, lower: str, highers, per_group) -> list[Point]:
    """``lower`` below each of ``highers`` at every (dataset, epsilon); the group of
    a point is ``per_group(dataset, higher)``."""
    return [point(cells, d, e, lower, h, per_group(d, h))
            for d in datasets for h in highers for e in epsilons]


def render(check: dict) -> str:
    """One Markdown bullet: verdict, k of n, the paper's words, the comparison and
    every point's means, seed ranges and margin."""
    head = f"- **{check['verdict']}**"
    if check["verdict"] in (HOLDS, FAILS):
        head += f" (holds at {check['points_holding']} of {check['points']} points"
        head += (f"; {len(check['missing'])} not yet run, which cannot change the verdict)"
                 if check["missing"] else ")")
    elif check["verdict"] == MISSING and check["missing"]:
        head += (f" (so far holds at {check['points_holding']} of {check['points']} points; "
                 f"{len(check['missing'])} wait for runs)" if check["points"] else
                 f" (each of its {len(check['missing'])} points waits for runs)")
    checkable = check["verdict"] != UNCHECKABLE
    lines = [f"{head}: \"{check['quote']}\" ({check['paper']})",
             f"  - {'checked' if checkable else 'compared'}: {check['comparison']}"
             + (f"; quantifier: {check['quantifier']}" if checkable else "")
             + (f" per {check['per']}" if checkable and check["per"] else "")]
    if check["note"]:
        lines.append(f"  - {check['note']}")
    for p in check["detail"]:
        if p.get("missing"):
            lines.append(f"  - {p['where']}: {p['lower']} / {p['higher']}: missing")
            continue
        mark = ("✓" if p["holds"] else "✗") if checkable else "·"
        lines.append(
            f"  - {mark} {p['where']}: {p['lower']} {p['lower_mean']:.4f} "
            f"[{p['lower_range'][0]:.4f}, {p['lower_range'][1]:.4f}] vs {p['higher']} "
            f"{p['higher_mean']:.4f} [{p['higher_range'][0]:.4f}, {p['higher_range'][1]:.4f}]; "
            f"margin {p['margin']:+.4f} ({p['relative_margin']:+.1%})"
            + ("" if p["seed_ranges_separate"] in (True, None) else
               "; fails in every seed pairing" if p["seed_ranges_reversed"] else
               "; seed ranges overlap")
            + ("" if p["welch_p"] is None else f"; Welch p = {p['welch_p']:.2g}"))
    return "\n".join(lines)


# ---------------------------------------------------------------- JAM-PGM paper

JAM = "JAM-PGM paper"


def jam_adult(rows: list[dict], grid=()) -> list[Check]:
    """Section 5.1 (Figure 1) and the Discussion, on the four Adult splits."""
    cells, eps, data = cell_index(rows), epsilons_of(rows, grid), list(ADULT_SPLITS)
    gem_pub = gem_pub_labels(rows, "adult")
    public, baselines = ("jam-pgm", "pmw-pub") + gem_pub, ("pmw-pub",) + gem_pub
    checks = [
        Check(Claim("jam-below-baselines", f"{JAM}, sec. 5.1",
                    "Across all levels of public data bias and almost all values of ϵ, "
                    "jam-pgm achieved lower average workload error than the baseline methods",
                    "JAM-PGM mean below PMW-Pub's and below GEM-Pub's",
                    "all but one", "(split, baseline)",
                    "the baselines are PMW-Pub and GEM-Pub (sec. 5); 'almost all' is read as "
                    "at most one epsilon missed per split and baseline"),
              pairwise(cells, data, eps, "jam-pgm", baselines, lambda d, h: f"{d}/{h}")),
        Check(Claim("public-methods-better-with-less-bias", f"{JAM}, sec. 5.1",
                    "All of the methods that utilize the public data perform better when the "
                    "public data distribution is more similar to the private data distribution",
                    "each of JAM-PGM, PMW-Pub, GEM-Pub: error on each split below its error on "
                    "the next more biased split (25% < 50% < 75% < 100% women)",
                    "every", "method"),
              [point(cells, "", e, m, m, m, lower_data=a, higher_data=b)
               for m in public for a, b in zip(data, data[1:]) for e in eps]),
        Check(Claim("jam-degrades-slowest", f"{JAM}, sec. 5.1",
                    "as the public data bias increases, the performance of jam-pgm degrades "
                    "more slowly than the other public data methods",
                    "increase of the mean error from adult_pub025 to adult_pub100: JAM-PGM's "
                    "below PMW-Pub's and below GEM-Pub's", "every", "method"),
              degradation_points(cells, eps, "jam-pgm", baselines)),
        Check(Claim("pmw-pub-worse-all-female", f"{JAM}, sec. 5.1",
                    "In the setting where the public data consists of only female records, "
                    "we see that pmwPub has much worse performance than in the settings where "
                    "the public data includes male records",
                    "PMW-Pub on each of adult_pub025/050/075 below PMW-Pub on adult_pub100",
                    "every", note="'much' has no measure: the check is 'worse'; the relative "
                                  "margins give the size"),
              [point(cells, "", e, "pmw-pub", "pmw-pub", lower_data=d, higher_data=data[-1])
               for d in data[:-1] for e in eps]),
        Check(Claim("aim-below-jam-at-10", f"{JAM}, sec. 5.1",
                    "the average workload error of aim is slightly lower than that of jam-pgm "
                    "for ϵ=10 across all levels of public data bias",
                    "AIM mean below JAM-PGM mean at epsilon 10 on every split", "every",
                    note="'slightly' has no measure: the check is 'lower'"),
              [point(cells, d, 10.0, "aim", "jam-pgm") for d in data]),
        Check(Claim("no-public-method-wins-somewhere", f"{JAM}, sec. 6",
                    "On all of the data sets we tested except for TITANIC, there were some "
                    "values of ϵ for which none of the methods that incorporate public data "
                    "outperform the baselines that do not use public data",
                    "the best private-only mean (AIM, GEM) below the best public-data mean "
                    "(JAM-PGM, PMW-Pub, GEM-Pub)", "some", "split",
                    "each Adult split is read as its own data set"),
              best_of_points(cells, data, eps, JAM_PRIVATE, public, per_split=True)),
    ]
    similar = [point(cells, d, 10.0, "aim", "jam-pgm") for d in data]
    checks.append(Check(Claim("jam-aim-similar-high-eps", f"{JAM}, sec. 5.1",
                              "the performance of jam-pgm and aim are similar for high values "
                              "of ϵ", "AIM against JAM-PGM at epsilon 10 (numbers only)",
                              note="'similar' has no measure, so no verdict"),
                        similar, checkable=False))
    few, many = "gem-pub T=5", "gem-pub T=150"
    rounds = [point(cells, ADULT_SPLITS[0], e, few, many) for e in eps] + \
        [point(cells, ADULT_SPLITS[-1], e, many, few) for e in eps]
    checks.append(Check(Claim("gem-pub-rounds-vs-bias", f"{JAM}, sec. 5.1",
                              "When the public data are from the same distribution as the "
                              "private data, it is beneficial to run gemPub for fewer rounds "
                              "[...] but as the bias increases it becomes beneficial to run "
                              "gemPub for more rounds",
                              "GEM-Pub T = 5 below T = 150 on adult_pub025, and T = 150 below "
                              "T = 5 on adult_pub100, at every epsilon", "every",
                              note="needs the paper setting's two GEM-Pub lines"),
                        rounds, checkable=set(gem_pub) == {few, many}))
    return checks


def degradation_points(cells: dict, eps, mine: str, others) -> list[Point]:
    """Per epsilon and other method: ``mine``'s error increase from the least to the
    most biased split, claimed below the other's increase."""
    out = []
    for other in others:
        for e in eps:
            rises = {}
            for m in (mine, other):
                a, b = cells.get((ADULT_SPLITS[0], m, e)), cells.get((ADULT_SPLITS[-1], m, e))
                rises[m] = None if a is None or b is None else _difference(b, a)
            out.append(Point(f"ε {e:g}: rise pub025→pub100", f"{mine} rise", f"{other} rise",
                             rises[mine], rises[other], other))
    return out


def _difference(b: dict, a: dict) -> dict:
    """The cell of b - a: mean difference; range from the extreme seed pairings."""
    return {"mean": b["mean"] - a["mean"], "min": b["min"] - a["max"],
            "max": b["max"] - a["min"], "seeds": min(a.get("seeds") or 0, b.get("seeds") or 0)}


def best_of_points(cells: dict, datasets, eps, lower_group, higher_group,
                   per_split: bool) -> list[Point]:
    """The best (lowest-mean) of ``lower_group`` below the best of ``higher_group``."""
    out = []
    for d in datasets:
        for e in eps:
            lo, hi = (_best(cells, d, e, g) for g in (lower_group, higher_group))
            out.append(Point(f"{d} ε {e:g}", f"best of {'/'.join(lower_group)}"
                             + (f" ({lo[0]})" if lo else ""),
                             f"best of {'/'.join(higher_group)}" + (f" ({hi[0]})" if hi else ""),
                             lo[1] if lo else None, hi[1] if hi else None,
                             d if per_split else ""))
    return out


def _best(cells: dict, dataset: str, eps: float, group) -> tuple[str, dict] | None:
    """(mechanism, cell) of the lowest mean in ``group``; None if any is missing."""
    found = [(m, cells.get((dataset, m, eps))) for m in group]
    if any(c is None for _, c in found):
        return None
    return min(found, key=lambda mc: mc[1]["mean"])


def jam_titanic(rows: list[dict], grid=()) -> list[Check]:
    """Section 5.2 (Figure 2) and the Discussion, on Titanic."""
    cells, data = cell_index(rows), datasets_of(rows) or ["titanic"]
    gem_pub = gem_pub_labels(rows, "titanic")
    public, baselines = ("jam-pgm", "pmw-pub") + gem_pub, ("pmw-pub",) + gem_pub
    eps = epsilons_of(rows, grid)
    upto = [e for e in eps if e <= 3.16]
    low = [e for e in eps if e <= 0.31]
    return [
        Check(Claim("public-beat-private-up-to-3.16", f"{JAM}, sec. 5.2",
                    "there is a large separation between the methods that utilize public data "
                    "and those that do not up to ϵ=3.16",
                    "each public-data method (JAM-PGM, PMW-Pub, GEM-Pub) below each "
                    "private-only one (AIM, GEM) at every epsilon <= 3.16", "every",
                    note="'large' has no measure: the check is 'below' for every pair"),
              [point(cells, d, e, pub, priv) for d in data for pub in public
               for priv in JAM_PRIVATE for e in upto]),
        Check(Claim("pmw-pub-best-low-eps", f"{JAM}, sec. 5.2",
                    "pmwPub performs best for ϵ≤0.31",
                    "PMW-Pub below each of JAM-PGM, GEM-Pub, AIM, GEM at every epsilon <= 0.31",
                    "every", note="the compared methods are the paper's five; our public-only "
                                  "line is not one of them"),
              [point(cells, d, e, "pmw-pub", m) for d in data
               for m in ("jam-pgm",) + gem_pub + ("aim", "gem") for e in low]),
        Check(Claim("pmw-pub-flat", f"{JAM}, sec. 5.2",
                    "but it does not improve as the privacy budget increases",
                    "PMW-Pub's mean at each larger epsilon not below its mean at the next "
                    "smaller one (a tie holds)", "every"),
              flat_points(cells, data, eps, "pmw-pub")),
        Check(Claim("jam-below-baselines-most-eps", f"{JAM}, sec. 6",
                    "Across all our experiments, jam-pgm achieved lower average workload error "
                    "than the public data baselines for most values of ϵ",
                    "JAM-PGM below PMW-Pub and below GEM-Pub", "most", "baseline"),
              pairwise(cells, data, eps, "jam-pgm", baselines, lambda d, h: h)),
        Check(Claim("public-method-wins-everywhere", f"{JAM}, sec. 6",
                    "there were some values of ϵ for which none of the methods that "
                    "incorporate public data outperform the baselines [...] except for "
                    "TITANIC",
                    "at every epsilon the best public-data mean (JAM-PGM, PMW-Pub, GEM-Pub) "
                    "below the best private-only mean (AIM, GEM)", "every"),
              best_of_points(cells, data, eps, public, JAM_PRIVATE, per_split=False)),
        Check(Claim("jam-gem-pub-similar-high-eps", f"{JAM}, sec. 5.2",
                    "For larger values of ϵ, jam-pgm and gemPub have very similar average "
                    "workload error", "JAM-PGM against GEM-Pub at epsilon > 3.16 (numbers only)",
                    note="'very similar' has no measure, so no verdict"),
              [point(cells, d, e, "jam-pgm", g) for d in data for g in gem_pub
               for e in eps if e > 3.16],
              checkable=False),
    ]


def flat_points(cells: dict, datasets, eps, mech: str) -> list[Point]:
    """``mech`` does not improve as epsilon grows: for each consecutive pair of
    epsilons, its mean at the larger one is not below its mean at the smaller
    one (margin = larger-eps mean - smaller-eps mean; >= 0 holds)."""
    return [NotBelow(f"{d} ε {a:g}→{b:g}", f"{mech} ε {a:g}", f"{mech} ε {b:g}",
                     cells.get((d, mech, a)), cells.get((d, mech, b)))
            for d in datasets for a, b in zip(eps, eps[1:])]


class NotBelow(Point):
    """A point claiming ``higher`` is NOT below ``lower`` (a tie holds): the
    margin ``higher mean - lower mean`` is >= 0."""

    @property
    def holds(self) -> bool:
        return self.margin >= 0


# ---------------------------------------------------------------- vertical paper

VERTICAL = "vertical paper"
VERTICAL_MECHANISMS = ("aim", "vjam-pgm", "conditional-aim", "conditional-vjam-pgm")


def fraction_name(fraction: float) -> str:
    """The dataset name of a vertical split (as reproduce.py and vertical.py write it)."""
    return f"adult, {int(fraction * 100)}% columns public"


def vertical_adult(rows: list[dict], grid=()) -> list[Check]:
    """Section 4.1 (Figure 2, Adult with 25/50/75% public columns)."""
    cells, eps = cell_index(rows), epsilons_of(rows, grid)
    f25, f50, f75 = (fraction_name(f) for f in (0.25, 0.5, 0.75))
    all_fracs = [f25, f50, f75]
    return [
        Check(Claim("vjam-not-better-25", f"{VERTICAL}, sec. 4.1",
                    "When 25% of the columns are public, none of the vertical public-assisted "
                    "methods provide better utility than using (fully) private AIM except when "
                    "ε<0.1 for vJAM-PGM",
                    "AIM below vJAM-PGM at 25% public, every epsilon >= 0.1", "every",
                    note="vGEM-Pub's side of it is the claim 'vgem-above-aim' below; the "
                         "conditional methods are the paper's separate claim below"),
              [NotBelow(f"{f25} ε {e:g}", "aim", "vjam-pgm", cells.get((f25, "aim", e)),
                        cells.get((f25, "vjam-pgm", e))) for e in eps if e >= 0.1]),
        Check(Claim("vjam-below-aim-50-low-eps", f"{VERTICAL}, sec. 4.1",
                    "at 50% with ε<1 vJAM-PGM achieves lower error than AIM",
                    "vJAM-PGM below AIM at 50% public, every epsilon < 1", "every"),
              [point(cells, f50, e, "vjam-pgm", "aim") for e in eps if e < 1]),
        Check(Claim("vjam-below-aim-75", f"{VERTICAL}, sec. 4.1",
                    "For 75% public, vJAM-PGM achieves lower error than AIM across all values "
                    "of ε", "vJAM-PGM below AIM at 75% public, every epsilon", "every"),
              [point(cells, f75, e, "vjam-pgm", "aim") for e in eps]),
        Check(Claim("vgem-above-aim", f"{VERTICAL}, sec. 4.1",
                    "We note vGEM-Pub has consistently worse error than (fully private) AIM "
                    "across all settings",
                    "AIM below vGEM-Pub at every (fraction, epsilon)", "every",
                    note="vGEM-Pub on full Adult runs in the paper setting only "
                         "(reproduce.py vertical-adult --setting paper)"),
              [point(cells, d, e, "aim", "vgem-pub") for d in all_fracs for e in eps]),
        Check(Claim("conditional-aim-lowest", f"{VERTICAL}, sec. 4.1",
                    "Figure 2 and 3, further shows Conditional AIM achieving lowest error "
                    "across all settings",
                    "Conditional AIM below each of AIM, vJAM-PGM and Conditional vJAM-PGM at "
                    "every (fraction, epsilon)", "every", "compared method"),
              pairwise(cells, all_fracs, eps, "conditional-aim",
                       ("aim", "vjam-pgm", "conditional-vjam-pgm"), lambda d, h: h)),
        Check(Claim("conditional-vjam-worse", f"{VERTICAL}, sec. 4.1",
                    "Conditional vJAM-PGM [...] performs consistently worse than "
                    "Conditional AIM",
                    "Conditional AIM below Conditional vJAM-PGM at every (fraction, epsilon)",
                    "every", note="the paper says this of Figure 1 (Adult reduced, 75% public); "
                                  "checked on Figure 2's runs"),
              pairwise(cells, all_fracs, eps, "conditional-aim", ("conditional-vjam-pgm",),
                       lambda d, h: "")),
        Check(Claim("conditional-lowers-private-error", f"{VERTICAL}, sec. 4.1",
                    "The advantage of conditional generation [...] consistently lowers private "
                    "error as well",
                    "each conditional method below its plain version (Conditional AIM < AIM, "
                    "Conditional vJAM-PGM < vJAM-PGM) at every (fraction, epsilon)", "every",
                    "method", "'private error' is the error on W' (marginals with a private "
                              "column); checked on the table's error: W' by default, W in "
                              "the paper setting"),
              [point(cells, d, e, f"conditional-{m}", m, m) for m in ("aim", "vjam-pgm")
               for d in all_fracs for e in eps]),
    ]


def gap_points(cells: dict, dataset: str, eps, wider: str, narrower: str) -> list[Point]:
    """The gap ``wider - narrower`` (mean; range from the extreme seed pairings) at the
    largest epsilon, claimed below the gap at the smallest."""
    if len(eps) < 2:
        return [Point(f"{dataset}: {wider} - {narrower}", "gap at the largest ε",
                      "gap at the smallest ε", None, None)]
    gaps = {}
    for e in (eps[0], eps[-1]):
        a, b = cells.get((dataset, wider, e)), cells.get((dataset, narrower, e))
        gaps[e] = None if a is None or b is None else _difference(a, b)
    return [Point(f"{dataset}: {wider} - {narrower}", f"gap at ε {eps[-1]:g}",
                  f"gap at ε {eps[0]:g}", gaps[eps[-1]], gaps[eps[0]])]


#: the dataset name of Adult (red.) (reproduce.py's vertical-reduced figure)
REDUCED = "adult (red.), 75% columns public"
REDUCED_VERTICAL = ("vjam-pgm", "vpmw", "vgem-pub")


def vertical_reduced(rows: list[dict], grid=()) -> list[Check]:
    """Section 4.1 on Figure 1 (Adult (red.), 6 of its 8 columns public)."""
    cells, eps = cell_index(rows), epsilons_of(rows, grid)
    d = REDUCED
    others = ("aim", "vjam-pgm", "conditional-aim", "conditional-vjam-pgm", "vgem-pub")
    return [
        Check(Claim("vpmw-poor", f"{VERTICAL}, sec. 4.1",
                    "We observe, like in prior horizontal work, that PMW has generally poor "
                    "utility across all values of ε",
                    "each other method below vPMW at every epsilon", "most",
                    note="'generally poor' read as: above the other methods at most points"),
              [point(cells, d, e, m, "vpmw") for m in others for e in eps]),
        Check(Claim("vgem-above-aim", f"{VERTICAL}, sec. 4.1",
                    "vGEM-Pub struggles to achieve good utility, performing worse than (fully) "
                    "private AIM across all settings",
                    "AIM below vGEM-Pub at every epsilon", "every"),
              [point(cells, d, e, "aim", "vgem-pub") for e in eps]),
        Check(Claim("vjam-below-aim-below-1", f"{VERTICAL}, sec. 4.1",
                    "when ε<1, vJAM-PGM achieves consistently lower error than AIM",
                    "vJAM-PGM below AIM at every epsilon < 1", "every"),
              [point(cells, d, e, "vjam-pgm", "aim") for e in eps if e < 1]),
        Check(Claim("vjam-gap-narrows", f"{VERTICAL}, sec. 4.1",
                    "as ε grows large this gap starts to decrease",
                    "AIM's error minus vJAM-PGM's: smaller at the largest epsilon than at the "
                    "smallest", "every"),
              gap_points(cells, d, eps, "aim", "vjam-pgm")),
        Check(Claim("conditional-beat-vertical", f"{VERTICAL}, sec. 4.1",
                    "In Figure 1 we plot conditional variations of AIM and vJAM-PGM. We find "
                    "both of these methods achieve superior utility, outperforming all other "
                    "vertical methods",
                    "Conditional AIM and Conditional vJAM-PGM each below vJAM-PGM, vPMW and "
                    "vGEM-Pub at every epsilon", "every", "conditional method"),
              [point(cells, d, e, c, m, c) for c in ("conditional-aim", "conditional-vjam-pgm")
               for m in REDUCED_VERTICAL for e in eps]),
        Check(Claim("conditional-vjam-worse", f"{VERTICAL}, sec. 4.1",
                    "We omit Conditional vJAM-PGM from further experiments, since it performs "
                    "consistently worse than Conditional AIM",
                    "Conditional AIM below Conditional vJAM-PGM at every epsilon", "every"),
              [point(cells, d, e, "conditional-aim", "conditional-vjam-pgm") for e in eps]),
    ]


# ---------------------------------------------------------------- AIM paper

AIM = "AIM paper"
#: the workload-aware mechanisms before AIM that we implement (the paper's RAP is not)
AIM_EARLIER_AWARE = ("mwem-pgm", "gem")
#: the workload-agnostic ones we implement (the paper's PrivMRF is not)
AIM_AGNOSTIC = ("mst", "privbayes-pgm")
#: sec. 6.2 (1): "On average, across all six datasets and nine privacy parameters,
#: AIM improved over [...] by a factor of"
AIM_AVERAGE_FACTORS = {"mst": 8.4, "mwem-pgm": 2.1, "privbayes-pgm": 2.6, "gem": 2.3}
#: the paper's Figure: panel suffix -> the section whose claims it checks
AIM_PANELS = {"all-3way": "sec. 6.2", "target": "sec. 6.3"}


def mean_ratio_point(cells: dict, dataset: str, eps, mech: str, base: str = "aim") -> Point:
    """``base`` improves over ``mech`` on average: the mean over epsilons of the
    ratio mech mean / base mean, as the higher cell (its min / max: the smallest
    and largest ratio over epsilons), against 1 (margin = average ratio - 1)."""
    ratios = []
    for e in eps:
        a, b = cells.get((dataset, base, e)), cells.get((dataset, mech, e))
        if a is None or b is None:
            ratios = None
            break
        ratios.append(b["mean"] / a["mean"])
    one = {"mean": 1.0, "min": 1.0, "max": 1.0, "seeds": None}
    ratio = None if not ratios else {"mean": sum(ratios) / len(ratios), "min": min(ratios),
                                     "max": max(ratios), "seeds": len(ratios)}
    return Point(f"{dataset}: mean over ε of {mech} / {base}", f"{base} (1×)",
                 f"{mech} / {base}", one, ratio, mech)


def aim_panel(rows: list[dict], dataset: str, workload: str, grid=()) -> list[Check]:
    """The AIM paper's sec. 6.2 findings on one panel (``dataset`` is
    "<data>, <workload>"); on the target panel they are sec. 6.3 (1)'s ("All
    three high-level findings from the previous section are supported by these
    figures as well"), with sec. 6.3's own and the introduction's claim."""
    cells, eps = cell_index(rows), epsilons_of(rows, grid)
    sec = AIM_PANELS[workload]
    where = f"{AIM}, {sec}" + (" (1), restating sec. 6.2" if workload == "target" else "")
    key = f"{workload}:"
    aware = ("aim",) + AIM_EARLIER_AWARE
    practical = [e for e in eps if e >= 1.0]
    factors = ", ".join(f"{m} {f}×" for m, f in AIM_AVERAGE_FACTORS.items())
    no_privmrf = "PrivMRF is not implemented here, so no verdict"
    checks = [
        Check(Claim(key + "aim-competitive", where,
                    "AIM consistently achieves competitive workload error, across all datasets "
                    "and privacy regimes considered",
                    "AIM against the best other mechanism at every epsilon (numbers only)",
                    note="'competitive' has no measure, so no verdict"),
              best_of_points(cells, [dataset], eps, ("aim",),
                             AIM_EARLIER_AWARE + AIM_AGNOSTIC + ("independent",), False),
              checkable=False),
        Check(Claim(key + "aim-improves-on-average", where,
                    "On average, across all six datasets and nine privacy parameters, AIM "
                    f"improved over [...] ({factors})",
                    "per mechanism: the mean over epsilons of (its mean error / AIM's) above 1",
                    "every", "compared mechanism",
                    "one dataset here, so the check is 'improved' (ratio > 1); the ratio sits "
                    "beside the paper's factor; the bracket is the smallest and largest ratio "
                    "over epsilons (its maximum is 'the most extreme case')"),
              [mean_ratio_point(cells, dataset, eps, m) for m in AIM_AVERAGE_FACTORS]),
        Check(Claim(key + "privmrf-best-before-aim", where,
                    "Prior to AIM, PrivMRF was consistently the best performing mechanism, "
                    "even outperforming all workload-aware mechanisms",
                    "PrivMRF against every other mechanism", note=no_privmrf),
              [], checkable=False),
        Check(Claim(key + "mwem-best-earlier-65", where,
                    "Prior to AIM, the best workload-aware mechanism varied [...]: MWEM+PGM was "
                    "best in 65% of settings, GEM was best in 35% of settings",
                    "MWEM+PGM below GEM at epsilons", "at least 65%",
                    note="RAP is not implemented, so the earlier workload-aware mechanisms are "
                         "MWEM+PGM and GEM; the paper's share is over six datasets"),
              [point(cells, dataset, e, "mwem-pgm", "gem") for e in eps]),
        Check(Claim(key + "aim-best-85", where,
                    "Including AIM, we observe that it is best in 85% of settings",
                    "AIM below the best of MWEM+PGM and GEM at epsilons", "at least 85%",
                    note="best among the workload-aware mechanisms (RAP not implemented)"),
              best_of_points(cells, [dataset], eps, ("aim",), AIM_EARLIER_AWARE, False)),
        Check(Claim(key + "aim-best-eps-ge-1", where,
                    "in the most interesting regime for practical deployment (ϵ≥1.0), AIM is "
                    "best in 100% of settings",
                    "AIM below MWEM+PGM and below GEM at every epsilon >= 1", "every",
                    note="best among the workload-aware mechanisms (RAP not implemented)"),
              [point(cells, dataset, e, "aim", m) for m in AIM_EARLIER_AWARE
               for e in practical]),
    ]
    if workload == "target":
        checks += [
            Check(Claim(key + "privmrf-beats-earlier-aware", f"{AIM}, sec. 6.3 (2)",
                        "PrivMRF outperforms all workload-aware mechanisms prior to AIM on this "
                        "workload [...] While AIM did outperform PrivMRF again",
                        "PrivMRF against MWEM+PGM, GEM and AIM", note=no_privmrf),
                  [], checkable=False),
            Check(Claim(key + "earlier-aware-often-lose", f"{AIM}, sec. 1",
                        "existing workload-aware techniques often fail to outperform "
                        "workload-agnostic mechanisms, even when evaluated specifically on "
                        "their target workloads",
                        "the best workload-agnostic mean (MST, PrivBayes+PGM) below the best "
                        "earlier workload-aware mean (MWEM+PGM, GEM)", "some",
                        note="'often' has no measure: the check is 'at some epsilon'; the "
                             "count of epsilons is reported (PrivMRF and RAP not implemented)"),
                  best_of_points(cells, [dataset], eps, AIM_AGNOSTIC, AIM_EARLIER_AWARE,
                                 False)),
        ]
    return checks


def aim_figures(rows: list[dict], grid=()) -> list[Check]:
    """The AIM paper's Figures 1 and 2 claims on every (dataset, workload) panel
    in the rows (panels named "<data>, all-3way" and "<data>, target")."""
    out = []
    for dataset in datasets_of(rows):
        workload = dataset.rsplit(", ", 1)[-1]
        if workload in AIM_PANELS:
            panel = [r for r in rows if r["dataset"] == dataset]
            out += aim_panel(panel, dataset, workload, grid)
    return out


CHECKS = {"jam-adult": jam_adult, "jam-titanic": jam_titanic, "vertical-adult": vertical_adult,
          "vertical-reduced": vertical_reduced,
          "aim-titanic": aim_figures, "aim-adult": aim_figures}


def findings(figure: str, rows: list[dict], grid=()) -> list[dict]:
    """Every checkable claim of the figure's paper on these rows, as dicts
    (see :meth:`Check.record`); [] for a figure without claims. ``grid``: the
    epsilons the figure's setting runs; a point at one without rows is missing."""
    check = CHECKS.get(figure)
    return [c.record() for c in check(rows, grid)] if check else []
