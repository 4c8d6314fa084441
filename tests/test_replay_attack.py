"""The noise-replay attack, as an adversary holding only a report would run it.

A research-mode run draws every noise vector from ``numpy.random.default_rng(seed)``
in a fixed order (synth_core/engine.py, synth_core/mechanisms/query_release.py):

* Engine mechanisms (AIM, MWEM+PGM, JAM-PGM, vJAM-PGM): one Gaussian vector per
  private initial measurement; then per round one Gumbel vector of
  ``n_candidates`` draws (the selection) and, for a private pick, one Gaussian
  vector of ``cells`` draws with std ``noise_std``.
* PMW-Pub: per round one exponential vector (permute-and-flip as report-noisy-max)
  over every counting query, then one Gaussian draw of std ``noise_std / n`` on
  the fraction (released as ``n`` times the fraction clipped to [0, 1]).
* GEM, GEM-Pub: one integer draw (the network's seed) first; per round one Gumbel
  vector over every counting query (measured ones included, masked to -inf), then
  one Gaussian draw as PMW-Pub.

An attacker who knows the seed regenerates these vectors from the report's
counts and scales and subtracts them: the private answers come out as whole
counts. The tests show the attack works when the seed is known (a positive
control), that a report never carries the seed, and that without it (release
mode, or research mode with a seed from the operating system) no seed of a
brute-force search recovers anything. A small seed such as 0 is found by brute
force; the privacy statement of a seeded run says so.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from synth_core import Synthesizer
from tiny_tables import FIT, GEM_TINY, PRIVATE, PUBLIC, SCHEMA, SHIFTED_PUBLIC
from synth_core.report import CURATOR_ONLY_KEYS, check_release
from synth_core.errors import ConfigError
from conftest import all_keys

#: seeds an attacker tries by brute force
BRUTE_FORCE = range(201)
#: how close to a whole number a recovered count must be
WHOLE = 1e-6

#: mechanism -> (settings, run arguments); all release noisy measurements
MECHANISMS = {
    "aim": (dict(rounds=6, **FIT), {}),
    "mwem-pgm": (dict(rounds=3, **FIT), {}),
    "jam-pgm": (dict(rounds=3, **FIT), {"public": SHIFTED_PUBLIC}),
    "vjam-pgm": (dict(rounds=3, **FIT), {"public_columns": ["a", "b"]}),
    "pmw-pub": (dict(rounds=4), {"public": PUBLIC}),
    "gem": (dict(rounds=3, **GEM_TINY), {}),
    "gem-pub": (dict(rounds=3, pretrain_max_steps=10, **GEM_TINY), {"public": PUBLIC}),
}
#: the mechanisms whose three runs take longest: in the slow set (jam-pgm stays in the fast one)
SLOW_RUNS = {"aim", "mwem-pgm", "vjam-pgm"}


# ---------------------------------------------------------------- the attack


def _selection_draws(report: dict, round_: int) -> int:
    """How many selection-noise draws round ``round_`` made (from the report)."""
    events = {e["round"]: e for e in report["rounds"]}
    if report["config"]["mechanism"] in ("gem", "gem-pub"):
        # measured queries stay in the vector (masked to -inf), so every round draws
        # one per query; the round's n_candidates counts the unmeasured ones
        return events[round_]["n_candidates"] + round_ - 1
    return events[round_]["n_candidates"]


def regenerate_noise(report: dict, seed: int) -> list[tuple[dict, np.ndarray]]:
    """Each private measurement of ``report`` with the noise (in counts) that a
    research run seeded with ``seed`` added to it, replayed in the engine's order."""
    rng = np.random.default_rng(seed)
    mechanism = report["config"]["mechanism"]
    n = report["data"]["n"]
    if mechanism in ("gem", "gem-pub"):
        rng.integers(2 ** 62)  # the generator network's seed
    by_round: dict[int, list[dict]] = {}
    for m in report["measurements"]:
        by_round.setdefault(m["round"], []).append(m)
    out = []
    for round_ in sorted({e["round"] for e in report["rounds"]} | set(by_round)):
        if round_ > 0:
            k = _selection_draws(report, round_)
            if mechanism == "pmw-pub":
                rng.exponential(size=k)
            else:
                rng.gumbel(size=k)
        for m in by_round.get(round_, []):
            if m["source"] != "private":
                continue
            if "query" in m:  # a counting query: noise on the fraction, released in counts
                out.append((m, n * rng.normal(0.0, m["noise_std"] / n, size=1)))
            else:
                out.append((m, rng.normal(0.0, m["noise_std"], size=m["cells"])))
    return out


def recover(report: dict, seed: int) -> list[tuple[dict, np.ndarray]] | None:
    """The private answers the replay with ``seed`` recovers, or None when some
    subtracted measurement is not a whole number (the seed is wrong). A counting
    query clipped at 0 or n lost its noise to the clip and is left out."""
    n = report["data"]["n"]
    answers = []
    for m, noise in regenerate_noise(report, seed):
        noisy = np.asarray(m["noisy_answer"], dtype=float)
        if "query" in m and noisy[0] in (0.0, float(n)):
            continue
        exact = noisy - noise
        if not np.all(np.abs(exact - np.rint(exact)) <= WHOLE):
            return None
        answers.append((m, np.rint(exact)))
    return answers or None


def brute_force(report: dict) -> list[int]:
    """Seeds that recover the private answers: the report's own (if it held one)
    and every seed of :data:`BRUTE_FORCE`."""
    candidates = [report["config"]["seed"]] if "seed" in report["config"] else []
    return [s for s in [*candidates, *BRUTE_FORCE] if recover(report, s) is not None]


def assert_true_counts(report: dict, answers) -> None:
    """Recovered answers are the private counts: whole, non-negative, a marginal
    sums to n and a counting query lies in [0, n]."""
    n = report["data"]["n"]
    assert answers
    for m, exact in answers:
        assert np.all(exact >= 0)
        if "query" in m:
            assert exact[0] <= n
        else:
            assert exact.sum() == n


# ---------------------------------------------------------------- the runs


def _run(mechanism: str, **mode) -> tuple[dict, dict]:
    """(report as an adversary reads it from the JSON file, curator record)."""
    settings, run_args = MECHANISMS[mechanism]
    synth = Synthesizer(mechanism, epsilon=3.0, workload="all-2way", **mode, **settings)
    result = synth.fit(PRIVATE, run_args.get("public"), schema=SCHEMA,
                       public_columns=run_args.get("public_columns", ()))
    return json.loads(json.dumps(result.report)), result.curator_record()


@pytest.fixture(scope="module", params=[pytest.param(m, marks=pytest.mark.slow) if m in SLOW_RUNS
                                        else m for m in MECHANISMS])
def runs(request):
    """The three kinds of run of one mechanism: seeded research, research with a
    seed from the operating system, release."""
    m = request.param
    return m, {"seeded": _run(m, seed=0), "os-seed": _run(m, mode="research"),
               "release": _run(m)}


def test_a_report_never_holds_the_seed(runs):
    _, by_kind = runs
    for report, record in by_kind.values():
        assert "seed" not in set(all_keys(report))
        assert isinstance(record["seed"], int)  # the curator keeps it
        # nor round timings: they grow with the private table's size (not public
        # under unbounded DP) and with the work its fits took
        assert report["rounds"] and not any("seconds" in e for e in report["rounds"])
    assert by_kind["seeded"][1] == {**by_kind["seeded"][1], "seed": 0, "mode": "research"}


def test_the_attack_recovers_the_private_counts_given_the_seed(runs):
    mechanism, by_kind = runs
    for kind in ("seeded", "os-seed"):
        report, record = by_kind[kind]
        answers = recover(report, record["seed"])
        assert answers is not None, f"{mechanism} {kind}: the replay failed"
        assert_true_counts(report, answers)


def test_from_the_report_alone_only_a_guessable_seed_falls(runs):
    mechanism, by_kind = runs
    # a small seed is found by brute force: the statement warns of exactly this
    assert brute_force(by_kind["seeded"][0]) == [0]
    statement = by_kind["seeded"][0]["privacy"]["statement"]
    assert "guesses the seed" in statement and "not fit for publication" in statement
    # research mode with a seed from the operating system: nothing to find
    report, _ = by_kind["os-seed"]
    assert brute_force(report) == []
    assert "not fit for publication" not in report["privacy"]["statement"]
    assert "use release mode for anything you publish" in report["privacy"]["statement"]
    # release mode: OpenDP's CSPRNG; even the run's own (sampling) seed recovers nothing
    report, record = by_kind["release"]
    assert report["privacy"]["mode"] == "release" and not report["privacy"]["seeded"]
    assert brute_force(report) == []
    assert recover(report, record["seed"]) is None


def test_check_release_refuses_a_seed_anywhere():
    assert "seed" in CURATOR_ONLY_KEYS
    with pytest.raises(ConfigError, match=r"report\.config\.seed"):
        check_release({"config": {"seed": 0}})
    with pytest.raises(ConfigError, match="seed"):
        check_release({"rounds": [{"round": 1, "seed": None}]})
