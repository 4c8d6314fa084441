"""The peers benchmark's scorer and its input/output mapping (no peer is installed here)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "benchmarks" / "peers_drivers"))

import common_driver  # noqa: E402
import peers  # noqa: E402

from synth_core.privacy import rho_from_epsilon_delta  # noqa: E402
from synth_core.schema import Schema  # noqa: E402

SIZES = {"a": 2, "b": 2, "c": 3}
PRIVATE = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 0, 1, 0], "c": [0, 0, 2, 2]})


def write_labelled(path: Path, codes: pd.DataFrame) -> Path:
    peers.labelled(codes, SIZES).to_csv(path, index=False)
    return path


def read(path: Path, codes: pd.DataFrame):
    return peers.read_synthetic(write_labelled(path, codes), peers.schema_json(SIZES))


def test_private_table_scores_zero(tmp_path):
    private = peers.coded(PRIVATE, SIZES)
    assert peers.score(private, read(tmp_path / "same.csv", PRIVATE)) == 0.0


def test_hand_made_tables_score_their_l1(tmp_path):
    """One 3-way marginal (a, b, c). Private cells 000: 1/2, 112: 1/4, 102: 1/4.

    * 000 twice and 112 twice: |1/2-1/2| + |1/4-1/2| + |1/4-0| = 0.5
    * 000 alone (one row; marginals are normalised): 1/2 + 1/4 + 1/4 = 1.0
    """
    private = peers.coded(PRIVATE, SIZES)
    half = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 0, 1, 1], "c": [0, 0, 2, 2]})
    one = pd.DataFrame({"a": [0], "b": [0], "c": [0]})
    assert peers.score(private, read(tmp_path / "half.csv", half)) == pytest.approx(0.5)
    assert peers.score(private, read(tmp_path / "one.csv", one)) == pytest.approx(1.0)


def test_score_averages_over_all_three_way_marginals(tmp_path):
    """Four columns: four 3-way marginals; only those with column d differ (d flipped in one row)."""
    sizes = {**SIZES, "d": 2}
    private = PRIVATE.assign(d=[0, 0, 0, 0])
    synthetic = PRIVATE.assign(d=[1, 0, 0, 0])
    path = tmp_path / "d.csv"
    peers.labelled(synthetic, sizes).to_csv(path, index=False)
    got = peers.score(peers.coded(private, sizes), peers.read_synthetic(path, peers.schema_json(sizes)))
    # three marginals hold d, each moves 1/4 of the mass: L1 = 1/2 each; mean over 4 = 3/8
    assert got == pytest.approx(3 / 8)


def test_reader_maps_labels_back_whatever_the_column_order(tmp_path):
    """A peer may reorder columns and add its own; labels map back to the same codes."""
    path = tmp_path / "peer.csv"
    pd.DataFrame({"c": ["v2", "v0", "v1"], "extra": ["x", "y", "z"], "a": ["v1", "v0", "v0"],
                  "b": ["v0", "v1", "v1"]}).to_csv(path, index=False)
    table = peers.read_synthetic(path, peers.schema_json(SIZES))
    assert table.columns == ("a", "b", "c")
    assert [list(table.data[c]) for c in "abc"] == [[1, 0, 0], [0, 1, 1], [2, 0, 1]]


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"a": ["v0"], "b": ["v0"], "c": ["v3"]}), "outside the domain"),
    (pd.DataFrame({"a": ["v0"], "b": ["v0"], "c": ["0"]}), "outside the domain"),
    (pd.DataFrame({"a": ["v0"], "b": ["v0"]}), "column 'c' missing"),
])
def test_reader_refuses_what_is_not_in_the_domain(tmp_path, frame, message):
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=message):
        peers.read_synthetic(path, peers.schema_json(SIZES))


def test_schema_gives_synth_core_the_same_codes():
    """synth_core encodes the labelled CSV with the benchmark's schema to the original codes."""
    schema = Schema.from_json(peers.schema_json(SIZES))
    codes = schema.encode(peers.labelled(PRIVATE, SIZES))
    assert codes.equals(PRIVATE.astype("int64"))


def test_driver_mapping_round_trips_codes_and_labels(tmp_path):
    """The drivers' labels -> codes -> labels is the identity and agrees with the reader."""
    schema_path = tmp_path / "schema.json"
    schema_path.write_text(__import__("json").dumps(peers.schema_json(SIZES)))
    cats = common_driver.categories(str(schema_path))
    labels = peers.labelled(PRIVATE, SIZES)
    codes = common_driver.to_codes(labels, cats)
    assert codes.equals(PRIVATE.astype("int64"))
    assert common_driver.to_labels(codes, cats).equals(labels)
    with pytest.raises(ValueError, match="'c'"):
        common_driver.to_codes(labels.assign(c="v9"), cats)


def test_matching_epsilon_gives_the_library_the_same_rho():
    """A library whose conversion differs gets the epsilon at which its rho equals ours."""
    rho = peers.target_rho(1.0)
    assert rho == rho_from_epsilon_delta(1.0, peers.DELTA)
    same = common_driver.matching_epsilon(rho_from_epsilon_delta, rho, 1.0, peers.DELTA)
    assert same == 1.0

    def halving(eps, delta):  # a library that spends only half its epsilon on the model
        return rho_from_epsilon_delta(eps / 2.0, delta)

    eps = common_driver.matching_epsilon(halving, rho, 1.0, peers.DELTA)
    assert eps == pytest.approx(2.0, rel=1e-6)
    assert halving(eps, peers.DELTA) == pytest.approx(rho, rel=1e-9)


def test_cpu_cap_stops_a_run_and_reports_a_timeout(tmp_path):
    """A child spinning past --max-cpu-seconds is killed; its line has the CPU used and no error."""
    # spins for 20 CPU seconds unless stopped, then exits without writing its CSV
    spin = [sys.executable, "-c", "import time\nwhile time.process_time() < 20: pass"]
    rec = peers.run_one("spinner", "0", spin, tmp_path / "never.csv", peers.coded(PRIVATE, SIZES),
                        peers.schema_json(SIZES), "toy", 1.0, 0, max_cpu_seconds=1)
    assert rec["status"] == "timeout" and rec["max_cpu_seconds"] == 1
    # the kernel's CPU clock and rusage differ by a few tenths; the hard limit is 5 s above
    assert 0.5 <= rec["cpu_seconds"] <= 1 + peers.CPU_LIMIT_GRACE_SECONDS
    assert "workload_error" not in rec


def test_cpu_cap_leaves_a_run_inside_it_scored(tmp_path):
    out = write_labelled(tmp_path / "quick.csv", PRIVATE)
    touch = [sys.executable, "-c", "import sys; open(sys.argv[1], 'ab').close()", str(out)]  # leaves the CSV as is
    rec = peers.run_one("toucher", "0", touch, out, peers.coded(PRIVATE, SIZES),
                        peers.schema_json(SIZES), "toy", 1.0, 0, max_cpu_seconds=60)
    assert rec["status"] == "ok" and rec["workload_error"] == 0.0
