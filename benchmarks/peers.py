"""AIM side by side: synth_core against dpmm and smartnoise-synth on one table.

Every library runs AIM on the same labelled CSV and the same categorical
domain, with the same workload (all 3-way marginals of the table's columns),
the same rho, add/remove-one neighbours (AIM's; the peers know no other), the
same model-size limit (80 MB) and AIM's default budget scale T = 16 d.

* rho: ``rho_from_epsilon_delta(epsilon, delta)`` of ``synth_core.privacy``
  (the exact conversion of Canonne, Kamath and Steinke). Each driver checks
  that its library's own conversion of ``(epsilon, delta)`` gives that rho and,
  if not, hands the library the epsilon (same delta) whose conversion does;
  the driver reports the epsilon it passed.
* CPU seconds: user + system time of the one fresh child process of the run
  (``os.wait4``), peak RSS of that child, wall seconds, and /proc/loadavg.
* Error: ONE scorer for every library, synth_core's workload error
  ``(1/|W|) sum_{r in W} || M_r(D)/n - M_r(S)/|S| ||_1`` of the synthetic CSV
  the library wrote to disk, read back through the domain's category lists
  (a label outside the domain is an error, never silently dropped).

Peers are installed from PyPI, each into its own scratch venv (their pinned
requirements conflict: dpmm pins disjoint-set 0.7.4, smartnoise-synth needs
0.9), never into the project's environment:

    python benchmarks/peers.py --data titanic --epsilons 1 --seeds 0 1 2 3 4 \
        >> benchmarks/results/peers/aim_peers.jsonl
    python benchmarks/peers.py --data adult --libraries synth_core dpmm --seeds 0
    python benchmarks/peers.py --data adult --libraries smartnoise-synth --seeds 0 \
        --max-cpu-seconds 1800
    python benchmarks/peers.py --summarise benchmarks/results/peers/aim_peers.jsonl

``--max-cpu-seconds S`` stops a run whose child has used S CPU seconds (the
kernel's ``RLIMIT_CPU`` on the child process); its line has ``status:
"timeout"``, the CPU seconds used (a lower bound on the run's cost) and no
error figure.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA, ROOT, emit  # noqa: E402

DRIVERS = Path(__file__).resolve().parent / "peers_drivers"
DEFAULT_VENVS = Path.home() / ".cache" / "synth-peers"
DELTA = 1e-9
MAX_MODEL_SIZE_MB = 80.0
NEIGHBOURS = "unbounded"  # add/remove one record: the relation AIM and both peers use
WORKLOAD_WAY = 3


@dataclass(frozen=True)
class Peer:
    """A library installed into its own venv and run through a driver script."""

    name: str
    requirement: str  # pinned PyPI requirement
    distribution: str  # name for importlib.metadata.version
    driver: str  # file in peers_drivers/


PEERS = {
    "dpmm": Peer("dpmm", "dpmm==0.1.9", "dpmm", "dpmm_aim.py"),
    "smartnoise-synth": Peer("smartnoise-synth", "smartnoise-synth==1.0.8",
                             "smartnoise-synth", "smartnoise_aim.py"),
}
OURS = "synth_core"


class PeerUnavailable(RuntimeError):
    """A peer that cannot be installed or run here; the message is the reason."""


# ------------------------------------------------------------ data and domain

def label(code: int) -> str:
    """The category label written for integer code ``code`` (``v0``, ``v1``, ...)."""
    return f"v{int(code)}"


def shared_table(name: str) -> tuple[pd.DataFrame, dict[str, int]]:
    """Coded private table and ``{column: size}`` of a dataset in ../shared/data."""
    folder = DATA / name
    csv = folder / "priv.csv" if (folder / "priv.csv").exists() else folder / f"{name}.csv"
    sizes = json.loads((folder / "domain.json").read_text())
    return pd.read_csv(csv)[list(sizes)], {c: int(s) for c, s in sizes.items()}


def schema_json(sizes: dict[str, int]) -> dict:
    """A categorical schema (synth_core's JSON) with categories ``label(0..size-1)``."""
    return {"columns": [{"name": c, "kind": "categorical",
                         "categories": [label(k) for k in range(s)], "missing": False}
                        for c, s in sizes.items()]}


def categories(schema: dict) -> dict[str, list[str]]:
    """``{column: [category, ...]}`` of a categorical schema JSON; code = position."""
    return {col["name"]: [str(v) for v in col["categories"]] for col in schema["columns"]}


def labelled(codes: pd.DataFrame, sizes: dict[str, int]) -> pd.DataFrame:
    """The coded table with every code ``k`` written as ``label(k)``."""
    return pd.DataFrame({c: [label(k) for k in codes[c]] for c in sizes})


def read_synthetic(path, schema: dict):
    """Read a library's synthetic CSV back to synth_core codes through ``schema``.

    Every cell is read as text and mapped to its position in the column's
    category list; a missing column or a label outside the list raises
    ``ValueError`` naming the file, column and label.
    """
    from synth_core.marginals import CodedTable

    cats = categories(schema)
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    codes = {}
    for col, values in cats.items():
        if col not in frame.columns:
            raise ValueError(f"{path}: column {col!r} missing from the synthetic table")
        index = {v: k for k, v in enumerate(values)}
        unknown = sorted(set(frame[col]) - set(index))
        if unknown:
            raise ValueError(f"{path}: column {col!r} holds labels outside the domain: {unknown[:5]}")
        codes[col] = frame[col].map(index).to_numpy(dtype=np.int64)
    return CodedTable.from_frame(pd.DataFrame(codes), {c: len(v) for c, v in cats.items()})


def coded(codes: pd.DataFrame, sizes: dict[str, int]):
    """The private table as a synth_core ``CodedTable``."""
    from synth_core.marginals import CodedTable

    return CodedTable.from_frame(codes, sizes)


def score(private, synthetic) -> float:
    """synth_core's workload error over all 3-way marginals of the private table's columns."""
    from synth_core.evaluate import workload_error
    from synth_core.workload import all_k_way

    return workload_error(private, synthetic, all_k_way(private.columns, WORKLOAD_WAY))


def target_rho(epsilon: float, delta: float = DELTA) -> float:
    """The rho every library is given: the largest rho whose zCDP implies (epsilon, delta)-DP."""
    from synth_core.privacy import rho_from_epsilon_delta

    return rho_from_epsilon_delta(epsilon, delta)


# ------------------------------------------------------------ child processes

def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return ""


def run_child(cmd: list[str], *, env: dict | None = None,
              max_cpu_seconds: float | None = None) -> dict:
    """Run ``cmd`` as a fresh child; its own user+sys CPU seconds, peak RSS and wall.

    ``os.wait4`` returns the rusage of exactly that child (with its waited-for
    descendants), so one run's figures never mix with another's. With
    ``max_cpu_seconds`` the child runs under ``RLIMIT_CPU`` = ceil(cap): the
    kernel sends it SIGXCPU once its own CPU time (all threads) passes the cap
    and SIGKILL a few seconds later; ``timed_out`` says it was stopped so.
    """
    start = time.perf_counter()
    limit = None if max_cpu_seconds is None else math.ceil(max_cpu_seconds)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env, text=True,
                            preexec_fn=None if limit is None else lambda: _cap_cpu(limit))
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return dict(returncode=proc.returncode, stderr_tail=err[-2000:], cpu_seconds=cpu,
                peak_rss_mb=usage.ru_maxrss / 1024.0,
                wall_seconds=time.perf_counter() - start,
                timed_out=limit is not None and _killed_by_cpu_limit(proc.returncode, cpu, limit))


CPU_LIMIT_GRACE_SECONDS = 5  # hard RLIMIT_CPU (SIGKILL) above the soft one (SIGXCPU)


def _cap_cpu(seconds: int) -> None:
    """In the child before exec: soft CPU limit ``seconds``, hard limit a few seconds above."""
    resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + CPU_LIMIT_GRACE_SECONDS))


def _killed_by_cpu_limit(returncode: int, cpu_seconds: float, limit: int) -> bool:
    """A child ended by SIGXCPU, or by SIGKILL after using about the limit's CPU seconds.

    The kernel's CPU clock for the limit and the rusage figures are sampled
    differently (they differ by up to about a second), hence the 0.9.
    """
    killed = returncode == -signal.SIGKILL and cpu_seconds >= 0.9 * limit
    return returncode == -signal.SIGXCPU or killed


def quiet_env() -> dict:
    """The environment for child runs: JAX on the CPU (no accelerator probing), warnings off."""
    env = dict(os.environ)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env["PYTHONWARNINGS"] = "ignore"
    return env


# ------------------------------------------------------------ peers' venvs

def venv_python(root: Path, peer: Peer) -> Path:
    return root / peer.name / "bin" / "python"


def ensure_peer(root: Path, peer: Peer) -> tuple[Path, str]:
    """Python of the peer's scratch venv (created and installed if missing) and its version."""
    python = venv_python(root, peer)
    found = _installed_version(python, peer)
    if found.returncode != 0:
        _install(root / peer.name, peer)
        found = _installed_version(python, peer)
    if found.returncode != 0:
        raise PeerUnavailable(f"{peer.requirement} not importable in {python}: {found.stderr[-300:]}")
    return python, found.stdout.strip()


def _installed_version(python: Path, peer: Peer) -> subprocess.CompletedProcess:
    """``importlib.metadata.version`` of the peer's distribution, asked of the venv's python."""
    if not python.exists():
        return subprocess.CompletedProcess([], 1, "", f"{python} does not exist")
    return subprocess.run([str(python), "-c", "import importlib.metadata as m, sys; "
                           "print(m.version(sys.argv[1]))", peer.distribution],
                          capture_output=True, text=True)


def _install(venv: Path, peer: Peer) -> None:
    """Create ``venv`` (if missing) and pip-install the pinned requirement into it."""
    steps = [[str(venv / "bin" / "pip"), "install", "--quiet", peer.requirement]]
    if not (venv / "bin" / "python").exists():
        steps.insert(0, [_base_python(), "-m", "venv", str(venv)])
    for step in steps:
        out = subprocess.run(step, capture_output=True, text=True)
        if out.returncode != 0:
            raise PeerUnavailable(f"{' '.join(step)} failed: {out.stderr.strip()[-500:]}")


def _base_python() -> str:
    """A Python to create the scratch venvs from (the base of the project's venv)."""
    return getattr(sys, "_base_executable", None) or sys.executable


# ------------------------------------------------------------ one run

def ours_command(workdir: Path, epsilon: float, seed: int, out: Path) -> list[str]:
    """synth_core's AIM in research mode through the CLI, same inputs as the peers."""
    return [sys.executable, "-m", "synth_core.cli", "run",
            "--data", str(workdir / "data.csv"), "--schema", str(workdir / "schema.json"),
            "--mechanism", "aim", "--epsilon", str(epsilon), "--delta", str(DELTA),
            "--neighbours", NEIGHBOURS, "--workload", f"all-{WORKLOAD_WAY}way",
            "--max-model-size", str(MAX_MODEL_SIZE_MB), "--seed", str(seed),
            "--mode", "research", "--out", str(out),
            "--report", str(out.with_suffix(".report.json")), "--quiet"]


def peer_command(python: Path, peer: Peer, workdir: Path, epsilon: float, seed: int,
                 out: Path) -> list[str]:
    """The peer's driver in its own venv; it writes ``out`` and ``out.info.json``."""
    return [str(python), str(DRIVERS / peer.driver),
            "--data", str(workdir / "data.csv"), "--schema", str(workdir / "schema.json"),
            "--epsilon", str(epsilon), "--delta", str(DELTA), "--rho", repr(target_rho(epsilon)),
            "--max-model-size", str(MAX_MODEL_SIZE_MB), "--degree", str(WORKLOAD_WAY),
            "--seed", str(seed), "--out", str(out), "--info", str(out.with_suffix(".info.json"))]


def run_one(library: str, version: str, cmd: list[str], out: Path, private, schema: dict,
            dataset: str, epsilon: float, seed: int, max_cpu_seconds: float | None = None) -> dict:
    """Run one library once in a fresh child and score the CSV it wrote.

    A child stopped at ``max_cpu_seconds`` gives ``status: "timeout"``: its
    ``cpu_seconds`` are a lower bound on the run's cost and there is no error.
    """
    env = quiet_env()
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    before = loadavg()
    child = run_child(["nice", "-n", "5", *cmd], env=env, max_cpu_seconds=max_cpu_seconds)
    rec = dict(bench="aim-peers", library=library, version=version, dataset=dataset,
               epsilon=epsilon, delta=DELTA, rho=target_rho(epsilon), seed=seed,
               neighbours=NEIGHBOURS, workload=f"all-{WORKLOAD_WAY}way",
               max_model_size_mb=MAX_MODEL_SIZE_MB,
               cpu_seconds=child["cpu_seconds"], peak_rss_mb=child["peak_rss_mb"],
               wall_seconds=child["wall_seconds"], loadavg_before=before, loadavg=loadavg())
    if max_cpu_seconds is not None:
        rec["max_cpu_seconds"] = max_cpu_seconds
    info = out.with_suffix(".info.json")
    if info.exists():
        rec["driver"] = json.loads(info.read_text())
    if child["timed_out"]:
        rec.update(status="timeout", reason=f"stopped past the cap of {max_cpu_seconds} CPU "
                   "seconds; cpu_seconds is a lower bound on the run's cost")
        return rec
    if child["returncode"] != 0 or not out.exists():
        rec.update(status="failed", reason=child["stderr_tail"][-600:])
        return rec
    try:
        synthetic = read_synthetic(out, schema)
    except ValueError as exc:
        rec.update(status="failed", reason=str(exc))
        return rec
    rec.update(status="ok", rows=synthetic.n, workload_error=score(private, synthetic))
    return rec


def prepare(dataset: str, workdir: Path):
    """Write data.csv (labels) and schema.json for one dataset; the coded private table."""
    codes, sizes = shared_table(dataset)
    schema = schema_json(sizes)
    labelled(codes, sizes).to_csv(workdir / "data.csv", index=False)
    (workdir / "schema.json").write_text(json.dumps(schema))
    return coded(codes, sizes), schema


def libraries_ready(names: list[str], venvs: Path) -> dict:
    """``{library: (command builder, version)}``; unavailable peers as ``PeerUnavailable``."""
    ready = {}
    for name in names:
        if name == OURS:
            ready[name] = (None, _ours_version())
            continue
        try:
            ready[name] = ensure_peer(venvs, PEERS[name])
        except PeerUnavailable as exc:
            ready[name] = exc
    return ready


def _ours_version() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    from synth_core.version import __version__

    return f"{__version__}+{out.stdout.strip()}" if out.returncode == 0 else __version__


def summaries(records: list[dict]) -> list[dict]:
    """One ``aim-peers-summary`` line per (dataset, epsilon, library) with ok runs.

    Medians of CPU seconds, wall seconds and peak RSS; mean and median workload
    error; ``cpu_ratio_ours_over_library`` = median CPU of synth_core / median
    CPU of the library (below 1: ours needs less CPU).
    """
    ok = [r for r in records if r.get("bench") == "aim-peers" and r.get("status") == "ok"]
    groups: dict[tuple, list[dict]] = {}
    for r in ok:
        groups.setdefault((r["dataset"], r["epsilon"], r["library"]), []).append(r)
    out = []
    for (dataset, epsilon, library), runs in sorted(groups.items()):
        ours = groups.get((dataset, epsilon, OURS))
        cpu = float(np.median([r["cpu_seconds"] for r in runs]))
        ratio = float(np.median([r["cpu_seconds"] for r in ours])) / cpu if ours else None
        errors = [r["workload_error"] for r in runs]
        out.append(dict(bench="aim-peers-summary", dataset=dataset, epsilon=epsilon,
                        library=library, version=runs[0]["version"], seeds=len(runs),
                        median_cpu_seconds=cpu, cpu_ratio_ours_over_library=ratio,
                        median_wall_seconds=float(np.median([r["wall_seconds"] for r in runs])),
                        median_peak_rss_mb=float(np.median([r["peak_rss_mb"] for r in runs])),
                        mean_workload_error=float(np.mean(errors)),
                        median_workload_error=float(np.median(errors))))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", default=["titanic"],
                    help="datasets in ../shared/data (titanic, adult, ...)")
    ap.add_argument("--libraries", nargs="+", default=[OURS, *PEERS],
                    choices=[OURS, *PEERS])
    ap.add_argument("--epsilons", nargs="+", type=float, default=[1.0])
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENVS,
                    help="folder of the peers' scratch venvs (one per peer)")
    ap.add_argument("--max-cpu-seconds", type=float, default=None, metavar="S",
                    help="stop a library's run once its child has used S CPU seconds "
                         "(status timeout, no error figure)")
    ap.add_argument("--summarise", type=Path, metavar="JSONL",
                    help="print the summary lines of the runs in JSONL and stop")
    args = ap.parse_args(argv)
    if args.summarise:
        rows = [json.loads(line) for line in args.summarise.read_text().splitlines() if line.strip()]
        for rec in summaries(rows):
            emit(**rec)
        return
    ready = libraries_ready(args.libraries, args.venv)
    for dataset in args.data:
        with tempfile.TemporaryDirectory(prefix=f"peers-{dataset}-") as tmp:
            workdir = Path(tmp)
            private, schema = prepare(dataset, workdir)
            for epsilon in args.epsilons:
                for seed in args.seeds:
                    for library in args.libraries:
                        emit(**run_library(library, ready[library], workdir, private, schema,
                                           dataset, epsilon, seed, args.max_cpu_seconds))


def run_library(library: str, ready, workdir: Path, private, schema: dict, dataset: str,
                epsilon: float, seed: int, max_cpu_seconds: float | None = None) -> dict:
    """One JSON record: a run, or a ``status`` saying why the library could not run."""
    if isinstance(ready, PeerUnavailable):
        return dict(bench="aim-peers", library=library, dataset=dataset, epsilon=epsilon,
                    seed=seed, status="unavailable", reason=str(ready))
    out = workdir / f"{library}-{epsilon}-{seed}.csv"
    if library == OURS:
        cmd = ours_command(workdir, epsilon, seed, out)
    else:
        cmd = peer_command(ready[0], PEERS[library], workdir, epsilon, seed, out)
    return run_one(library, ready[1], cmd, out, private, schema, dataset, epsilon, seed,
                   max_cpu_seconds)


if __name__ == "__main__":
    main()
