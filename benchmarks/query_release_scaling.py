"""How PMW-Pub and GEM-Pub scale with the wide column's domain and the public support.

Data: a generated table (no shared data needed) of ``--rows`` records (default
50,000) and 10 correlated categorical columns: ``w`` with ``--wide`` values
(50, 200, 500), ``a``, ``b``, ``c`` with 50, 40, 30 values and six small ones
(8, 6, 5, 4, 3, 2 values). Each column is a noisy function of the previous
ones, so the marginals are far from uniform. The public rows are a uniform
sample of ``--public-fraction`` of the records (default 10%); their distinct
records are PMW-Pub's support.

Workload: all 2-way and all 3-way marginals (``MAX_WIDE`` restricts the 3-way
ones by how many columns of 20+ values they hold): 4.5 million counting
queries (every cell of every marginal) for ``w`` with 500 values, 0.67 million
for 50. Arrays of that many float64 exceed glibc's largest mmap threshold
(32 MB), so every such temporary is a fresh mapping: page faults, system time.

Each case runs in its own process (``--case``), so its CPU seconds are its own:
one JSON line per round (``user_s``/``sys_s``: that round's user and system CPU
seconds, from ``resource.getrusage``) and one summary line (totals, the setup
before round 1, the number of counting queries, the support size, peak RSS,
``/proc/loadavg``). GEM-Pub uses a small network (``SMALL_GEM``).

    python benchmarks/query_release_scaling.py                       # all cases, this checkout
    PYTHONPATH=/work/main python benchmarks/query_release_scaling.py --label before
    python benchmarks/query_release_scaling.py --wide 500 --mechanisms pmw-pub --rounds 20
    python benchmarks/query_release_scaling.py --case --profile --wide 500 --mechanisms pmw-pub
"""

from __future__ import annotations

import argparse
import cProfile
import itertools
import json
import os
import pstats
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

#: GEM-Pub's network for this benchmark (the papers' is 512, (1024, 1024), 1000)
SMALL_GEM = dict(hidden=(64, 64), noise_dim=32, batch=200, inner_steps=20, max_queries=50,
                 pretrain_max_steps=20, threads=1)
SMALL_SIZES = {"d": 8, "e": 6, "f": 5, "g": 4, "h": 3, "i": 2}
MEDIUM_SIZES = {"a": 50, "b": 40, "c": 30}
#: a 3-way marginal may hold at most ``MAX_WIDE`` columns with at least ``WIDE_AT`` values
#: (3: all of them; 2 leaves out w x a x b, ... and roughly halves the queries)
WIDE_AT = 20
MAX_WIDE = 3


def sizes_for(wide: int) -> dict[str, int]:
    return {"w": int(wide), **MEDIUM_SIZES, **SMALL_SIZES}


def make_table(rows: int, wide: int, seed: int = 0) -> pd.DataFrame:
    """Correlated categorical codes: each column a noisy function of earlier ones."""
    rng = np.random.default_rng(seed)
    sizes = sizes_for(wide)
    # the wide column: a skewed (Zipf-like) distribution over its values
    p = 1.0 / np.arange(1, wide + 1) ** 1.1
    cols = {"w": rng.choice(wide, size=rows, p=p / p.sum())}
    previous = cols["w"]
    for name, k in list(sizes.items())[1:]:
        keep = rng.random(rows) < 0.7         # 70%: a function of the previous column
        derived = (previous * 7 + 3) % k
        cols[name] = np.where(keep, derived, rng.integers(0, k, rows))
        previous = cols[name] + previous % 3
    return pd.DataFrame(cols)


def schema_for(wide: int) -> dict:
    return {"columns": [{"name": c, "kind": "categorical", "categories": list(range(k))}
                        for c, k in sizes_for(wide).items()]}


def workload_spec(wide: int) -> str:
    """All 2-way marginals and the 3-way ones with at most ``MAX_WIDE`` columns of 20+ values."""
    sizes = sizes_for(wide)
    cols = list(sizes)
    cliques = list(itertools.combinations(cols, 2))
    cliques += [cl for cl in itertools.combinations(cols, 3)
                if sum(sizes[c] >= WIDE_AT for c in cl) <= MAX_WIDE]
    return ";".join(",".join(cl) for cl in cliques)


def counting_queries(wide: int) -> int:
    sizes = sizes_for(wide)
    return sum(int(np.prod([sizes[c] for c in cl.split(",")]))
               for cl in workload_spec(wide).split(";"))


def loadavg() -> str:
    with open("/proc/loadavg") as fh:
        return fh.read().strip()


def cpu() -> tuple[float, float]:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime, u.ru_stime


def run_case(mechanism: str, wide: int, rows: int, public_fraction: float, rounds: int,
             label: str, seed: int = 0, profile: bool = False) -> None:
    """One run in this process; JSON lines per round and a summary (``profile``:
    cProfile's top functions by cumulative time on stderr)."""
    import synth_core
    from synth_core import Synthesizer

    private = make_table(rows, wide, seed)
    rng = np.random.default_rng(seed + 1)
    public = private.iloc[rng.choice(rows, size=int(rows * public_fraction), replace=False)]
    public = public.reset_index(drop=True)
    options = dict(SMALL_GEM) if mechanism == "gem-pub" else {}
    synth = Synthesizer(mechanism, epsilon=1.0, seed=seed, workload=workload_spec(wide),
                        rounds=rounds, **options)
    base = dict(label=label, mechanism=mechanism, wide=wide, rows=rows,
                public_rows=len(public), support=int(len(public.drop_duplicates())),
                counting_queries=counting_queries(wide), rounds=rounds)
    t0, (u0, s0) = time.perf_counter(), cpu()
    last_u, last_s = u0, s0
    per_round = []
    setup = None
    profiler = cProfile.Profile() if profile else None
    if profiler:
        profiler.enable()
    for event in synth.run(private, public, schema=schema_for(wide)):
        u, s = cpu()
        record = dict(round=event.round, user_s=round(u - last_u, 4), sys_s=round(s - last_s, 4))
        last_u, last_s = u, s
        if event.round == 0:
            setup = record
            continue
        if setup is None:   # the setup before the first round is in round 1's reading
            setup = dict(round=0, user_s=0.0, sys_s=0.0)
        per_round.append(record)
        print(json.dumps({**base, "kind": "round", **record}), flush=True)
    if profiler:
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(25)
    u, s = cpu()
    rounds_user = sum(r["user_s"] for r in per_round[1:])   # round 1 also pays the setup
    rounds_sys = sum(r["sys_s"] for r in per_round[1:])
    steady = max(len(per_round) - 1, 1)
    print(json.dumps({**base, "kind": "summary", "synth_core": os.path.dirname(synth_core.__file__),
                      "user_s": round(u - u0, 3), "sys_s": round(s - s0, 3),
                      "wall_s": round(time.perf_counter() - t0, 3),
                      "user_s_per_round": round(rounds_user / steady, 4),
                      "sys_s_per_round": round(rounds_sys / steady, 4),
                      "pretrain_user_s": setup["user_s"], "pretrain_sys_s": setup["sys_s"],
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                           / 1024, 1),
                      "loadavg": loadavg()}), flush=True)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mechanisms", nargs="+", default=["pmw-pub", "gem-pub"])
    ap.add_argument("--wide", nargs="+", type=int, default=[50, 200, 500])
    ap.add_argument("--public-fraction", nargs="+", type=float, default=[0.1])
    ap.add_argument("--rows", type=int, default=50_000)
    ap.add_argument("--rounds", type=int, default=20,
                    help="rounds per run (PMW-Pub's default is 500; the per-round cost is flat)")
    ap.add_argument("--label", default="", help="a tag for the JSON lines, e.g. before / after")
    ap.add_argument("--case", action="store_true", help="run one case in this process")
    ap.add_argument("--profile", action="store_true",
                    help="with --case: cProfile's top functions on stderr")
    args = ap.parse_args(argv)
    if args.case:
        run_case(args.mechanisms[0], args.wide[0], args.rows, args.public_fraction[0],
                 args.rounds, args.label, profile=args.profile)
        return
    for mech, wide, frac in itertools.product(args.mechanisms, args.wide, args.public_fraction):
        # a fresh process per case: its own CPU seconds and peak RSS
        subprocess.run([sys.executable, __file__, "--case", "--mechanisms", mech,
                        "--wide", str(wide), "--public-fraction", str(frac),
                        "--rows", str(args.rows), "--rounds", str(args.rounds),
                        "--label", args.label], check=True)


if __name__ == "__main__":
    main()
