"""GEM and GEM-Pub (Liu, Vietri, Wu 2021, "Iterative Methods for Private Synthetic
Data: Unifying Framework and New Methods"), in PyTorch on the CPU, after the
authors' reproduction code (dp-query-release).

Generator: a fixed batch of ``K = 1000`` standard-normal noise vectors of
dimension 512 through two residual blocks of width 1024 (linear, batch norm,
ReLU, output concatenated with the block's input), a linear layer to the
one-hot width, and a softmax per column. A counting query (one cell of a
workload marginal) is answered by the batch mean of the product of the
involved columns' probabilities. Batch norm always uses the batch's
statistics (the authors never switch to evaluation mode).

Budget (bounded DP, queries are fractions of ``n`` with sensitivity ``1/n``),
split ``alpha = 0.67``: ``eps0 = sqrt(2 rho / (T (alpha^2 + (1 - alpha)^2)))``;
each of the ``T`` rounds

1. selects one not-yet-measured query with the exponential mechanism at
   parameter ``2 alpha eps0`` on ``|q(D) - q(G)|`` with sensitivity ``1/n``
   (``Pr ~ exp(alpha eps0 n score)``); charged ``alpha^2 eps0^2 / 2``;
2. measures it with ``N(0, sigma^2)``, ``sigma = (1/n) / ((1 - alpha) eps0)``,
   clipped to [0, 1]; charged ``(1 - alpha)^2 eps0^2 / 2``;
3. tracks ``e = 0.5 e + 0.5 max_i |a_i - q_i(G)|`` over the measured queries
   and runs a fresh Adam (learning rate 1e-4, cosine-annealed to 1e-8 over the
   inner steps as in the authors' code) for up to 100 steps on the mean
   absolute error of the (at most 100) worst measured queries whose error is
   at least ``0.5 e``; it stops early when none is (the authors' rule) or when
   10 steps in a row bring no progress (ours: no new minimum, by 0.1%, of the
   excess error above ``0.5 e``; option ``inner_patience``, 0 turns it off).
   The second rule is a speed-up that spends no budget: a noisy measurement
   of a cell the generator gives almost no probability (9e-14 on Adult) has
   a negligible gradient, the loss does not move, and the authors' loop then
   takes all 100 steps while Adam still moves the network; on Adult at
   epsilon 0.1 such rounds took 87% of the inner steps (docs/mechanisms.md).

Per round ``rho / T``; in total exactly ``rho``. The output generator is the
exponential moving average of the generator weights after each of the last
``round(T/2)`` rounds (oldest first, ``w = beta w + (1 - beta) w_new``).

GEM-Pub first trains the generator without noise on the public data, on
*every* workload query, as the authors' GEM-Pub does (their non-private
pre-training fits all queries of the public data; it is not GEM's max-error
loop). Its objective is the workload error itself on the public marginals,
``(1/|W|) sum_r ||M_r(public) - M_r(G)||_1``, with the exact gradient over all
cells (one batched pass, :meth:`_Generator.marginals`), Adam at learning rate
1e-3 cosine-annealed to 1e-7 over at most 100 steps, stopping after 5 steps
without a new best and keeping the best generator. The authors take 10,000
steps on random batches of 10,000 queries at 5e-4 (their ``gen_nn`` script),
hours on this CPU; 100 exact full-batch steps take the public-data workload
error on Adult from 1.76 to 0.20 in about two minutes. The objective is the L1
workload error, not GEM's max-error loop (add the worst public query, fit the
worst measured ones): on Adult that loop drives the *maximum* error down
(0.79 -> 0.05) but leaves the L1 workload error at 0.61, three times the
public data's own 0.19 (docs/mechanisms.md). GEM then starts from the
pre-trained generator with an empty set of measured queries.

vGEM-Pub (:class:`VGEMPub`) pre-trains on the table's own public columns
instead of public rows. Each class declares its options as data
(``GEM_OPTIONS``; vGEM-Pub's are ``public_columns`` and GEM's).

Defaults (the seed papers and the authors' scripts): T = 50 (their Adult
script), hidden sizes (1024, 1024), noise dimension 512, batch 1000,
learning rate 1e-4, alpha 0.67, weight-EMA beta 0.9 for GEM (their Adult
script) and 0.5 for GEM-Pub (their GEM-Pub script). Synthetic records: for
each of ``n`` rows of the batch (cycled, shuffled), every column is drawn
from that row's softmax.
"""

from __future__ import annotations

import copy
import functools
import time
from typing import Sequence

import numpy as np
import pandas as pd

from .. import privacy
from ..engine import PRIVATE, PUBLIC, RunState
from ..errors import ConfigError
from .base import (BOUNDED, PUBLIC_COLUMNS_OPTION, QUERY_ANSWERS, REQUIRED, Capabilities,
                   Option, check_budget_share)
from .query_release import (CountingQueries, QueryReleaseLoop, QueryReleaseMechanism,
                            measure_counting_query)
from ..runtime import require_packages
from .pretrain_cache import PretrainCache
from .vertical import check_public_split, parse_public_columns

#: GEM's share of each round's eps0 for selection (the seed papers' setting).
GEM_ALPHA = 0.67
#: Rounds T of the authors' Adult script.
GEM_DEFAULT_ROUNDS = 50
GEM_LEARNING_RATE = 1e-4
GEM_NOISE_DIM = 512
GEM_HIDDEN = (1024, 1024)
GEM_BATCH = 1000
#: inner Adam steps per round, and the most measured queries in one loss
GEM_INNER_STEPS = 100
GEM_MAX_QUERIES = 100
#: a measured query is trained on if its error is at least this times the running max
GEM_ERROR_FACTOR = 0.5
#: the inner loop also stops after this many consecutive steps without progress (0: never,
#: the authors' loop): progress is a new minimum of the excess error above the threshold,
#: ``sum_i max(|a_i - q_i(G)| - threshold, 0)``, lower than the best by ``GEM_INNER_RTOL``
GEM_INNER_PATIENCE = 10
GEM_INNER_RTOL = 1e-3
#: smoothing of the running maximum error
GEM_ERROR_EMA_BETA = 0.5
#: weight-EMA beta: GEM (authors' Adult script) and GEM-Pub (authors' GEM-Pub script)
GEM_WEIGHTS_EMA_BETA = 0.9
GEM_PUB_WEIGHTS_EMA_BETA = 0.5
#: GEM-Pub pre-training (full-batch steps on the public marginals, see the module
#: docstring): at most this many steps, stop after ``patience`` steps without a new
#: best, learning rate cosine-annealed from ``GEM_PUB_PRETRAIN_LR`` to 1e-7
GEM_PUB_PRETRAIN_PATIENCE = 5
GEM_PUB_PRETRAIN_MAX_STEPS = 100
GEM_PUB_PRETRAIN_LR = 1e-3
#: CPU threads for PyTorch. Fixed (not adaptive), because results are only
#: bit-reproducible for a fixed thread count. One, because on the shared 2-core
#: machine under load one thread was faster: 0.71 s against 1.13 s per inner
#: step on Adult, 0.6 s against 4.4 s for answering all 2.65M queries; on an
#: idle machine ``threads=2`` is faster for the big matrix products.
GEM_THREADS = 1
#: the most numbers (float32) in one block of a marginal's row-wise outer product
#: (:meth:`_Generator._joint`): 4 MB, below glibc's mmap threshold
GEM_JOINT_BLOCK = 1 << 20


def _torch():
    """PyTorch, imported on first use (``import synth_core`` stays free of it)."""
    import torch
    return torch


@functools.lru_cache(maxsize=None)
def _network_class():
    torch = _torch()
    nn = torch.nn

    class Residual(nn.Module):
        def __init__(self, i: int, o: int):
            super().__init__()
            self.fc = nn.Linear(i, o)
            self.bn = nn.BatchNorm1d(o)
            self.relu = nn.ReLU()

        def forward(self, x):
            return torch.cat([self.relu(self.bn(self.fc(x))), x], dim=1)

    class Network(nn.Module):
        """Residual blocks (linear, batch norm, ReLU, concatenated with the input),
        then a linear layer to the one-hot width."""

        def __init__(self, noise_dim: int, hidden: Sequence[int], width: int):
            super().__init__()
            layers, dim = [], noise_dim
            for h in hidden:
                layers.append(Residual(dim, h))
                dim += h
            layers.append(nn.Linear(dim, width))
            self.seq = nn.Sequential(*layers)

        def forward(self, z):
            return self.seq(z)

    return Network


class _MarginalPlan:
    """Cliques grouped by all but their last column (for :meth:`_Generator.marginals`)."""

    def __init__(self, cliques: Sequence[Sequence[str]]):
        self.cliques = [tuple(cl) for cl in cliques]
        groups: dict[tuple, list[int]] = {}
        for i, cl in enumerate(self.cliques):
            groups.setdefault(cl[:-1], []).append(i)
        self.groups = list(groups.items())


class _Generator:
    """The network, its fixed noise batch, and query answering."""

    def __init__(self, sizes: dict[str, int], queries: CountingQueries, noise_dim: int,
                 hidden: Sequence[int], batch: int, seed: int):
        self.columns = list(sizes)
        self.col_sizes = [sizes[c] for c in self.columns]
        starts = np.concatenate([[0], np.cumsum(self.col_sizes)]).astype(int)
        self.slices = {c: slice(int(starts[i]), int(starts[i + 1])) for i, c in enumerate(self.columns)}
        self.width = int(starts[-1])
        self.queries = queries
        self.plan = _MarginalPlan(queries.cliques)
        self.K = batch
        torch = _torch()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = _network_class()(noise_dim, hidden, self.width)
            self.z = torch.randn(batch, noise_dim)
        self.net.train()  # batch statistics always (as the authors' code)
        self._answers = None   # all_answers' float32 buffer (Q numbers)

    @property
    def size_mb(self) -> float:
        return sum(p.numel() for p in self.net.parameters()) * 4 / 2 ** 20

    def probabilities(self) -> "torch.Tensor":
        torch = _torch()
        logits = self.net(self.z)
        return torch.cat([logits[:, sl].softmax(-1) for sl in self.slices.values()], dim=1)

    def marginals(self, x: "torch.Tensor", plan: "_MarginalPlan",
                  out: "torch.Tensor | None" = None) -> "torch.Tensor":
        """The batch-mean marginals of ``plan``'s cliques under row probabilities ``x``
        (differentiable), flattened in C order and concatenated in the plan's order
        (into ``out`` when given: no gradient, no new result vector)."""
        torch = _torch()
        pieces: list = [None] * len(plan.cliques)
        for prefix, members in plan.groups:
            lasts = [x[:, self.slices[plan.cliques[i][-1]]] for i in members]
            if not prefix:
                for i, p in zip(members, lasts):
                    pieces[i] = p.mean(0)
                continue
            joint = self._joint(x, prefix, torch.cat(lasts, dim=1))
            start = 0
            for i, p in zip(members, lasts):
                pieces[i] = joint[:, start:start + p.shape[1]].reshape(-1)
                start += p.shape[1]
        return torch.cat(pieces) if out is None else torch.cat(pieces, out=out)

    def _joint(self, x: "torch.Tensor", prefix: Sequence[str], lasts: "torch.Tensor"):
        """``J[(v_1..v_m), l] = (1/K) sum_k x_k[v_1] ... x_k[v_m] lasts_k[l]``: the batch-mean
        joint of the prefix columns with each last column (rows in C order of the prefix).

        The row-wise outer product of the prefix columns (``K`` times the product of
        their sizes) is formed for a block of the first column's values at a time,
        at most about ``GEM_JOINT_BLOCK`` numbers, so its size does not grow with
        the widest column's domain.
        """
        torch = _torch()
        first = x[:, self.slices[prefix[0]]]
        rest = [x[:, self.slices[c]] for c in prefix[1:]]
        per_value = self.K * int(np.prod([p.shape[1] for p in rest], dtype=np.int64))
        block = max(1, GEM_JOINT_BLOCK // per_value)
        parts = []
        for lo in range(0, first.shape[1], block):
            acc = first[:, lo:lo + block]
            for p in rest:
                acc = (acc[:, :, None] * p[:, None, :]).reshape(self.K, -1)
            parts.append((acc.T @ lasts) / self.K)
        return parts[0] if len(parts) == 1 else torch.cat(parts)

    def answers_float32(self) -> np.ndarray:
        """Every workload query's answer (no gradient) in a float32 buffer kept by the
        generator: the array is overwritten by the next call."""
        torch = _torch()
        if self._answers is None:
            self._answers = torch.empty(self.queries.total, dtype=torch.float32)
        with torch.no_grad():
            self.marginals(self.probabilities(), self.plan, out=self._answers)
        return self._answers.numpy()

    def all_answers(self) -> np.ndarray:
        """Every workload query's answer (no gradient), as float64.

        Cliques sharing all but their last column share one row-wise outer
        product of the leading columns, then one matrix product with the
        concatenated last columns answers all of them.
        """
        return self.answers_float32().astype(np.float64)

    def onehot_index(self, q: int) -> list[int]:
        i, cell = self.queries.locate(q)
        return [self.slices[c].start + v for c, v in zip(self.queries.cliques[i], cell)]

    def index_tensor(self, qs: Sequence[int]) -> "torch.Tensor":
        """(m, k) one-hot positions of queries; padded with the constant-one column."""
        torch = _torch()
        rows = [self.onehot_index(q) for q in qs]
        k = max(len(r) for r in rows)
        return torch.tensor([r + [self.width] * (k - len(r)) for r in rows], dtype=torch.long)

    def answers(self, index: "torch.Tensor") -> "torch.Tensor":
        """Answers of the queries in ``index`` (with gradient)."""
        torch = _torch()
        x = self.probabilities()
        x = torch.cat([x, torch.ones(self.K, 1)], dim=1)
        return x[:, index].prod(-1).mean(0)

    def state(self) -> dict:
        return copy.deepcopy(self.net.state_dict())


class _Trainer:
    """The measured queries and the per-round inner loop."""

    def __init__(self, gen: _Generator, lr: float, inner_steps: int, max_queries: int,
                 patience: int = GEM_INNER_PATIENCE):
        self.gen = gen
        self.lr, self.inner_steps, self.max_queries = lr, inner_steps, max_queries
        self.patience = patience
        #: why the last round's loop ended: "fitted" (no query above the threshold),
        #: "no progress" (``patience`` steps without a new best) or "steps" (all taken)
        self.stopped = ""
        self.measured: list[int] = []
        self.values: list[float] = []
        self.ema_error: float | None = None
        self._index: "torch.Tensor" | None = None

    def add(self, q: int, value: float) -> None:
        self.measured.append(int(q))
        self.values.append(float(value))
        self._index = None

    def optimise(self) -> tuple[int, float]:
        """One round's inner loop; returns (steps taken, last loss).

        Up to ``inner_steps`` Adam steps on the mean absolute error of the (at most
        ``max_queries``) worst measured queries at or above the threshold; it stops
        when none is (the authors' rule) or, with ``patience > 0``, when the excess
        error above the threshold has not reached a new best (by a relative
        ``GEM_INNER_RTOL``) for ``patience`` consecutive steps. The second rule ends
        the rounds in which the measured answers are out of the generator's reach:
        a noisy measurement of a cell to which the generator gives almost no
        probability has a negligible gradient, the loss does not move, and the
        authors' loop would spend all its steps there (on Adult at epsilon 0.1,
        100 steps in 26 of 50 rounds; benchmarks/results/peers/NOTES.md).
        """
        torch = _torch()
        gen = self.gen
        if self._index is None:
            self._index = gen.index_tensor(self.measured)
        target = torch.tensor(self.values, dtype=torch.float32)
        # the first step's forward pass also gives the running maximum's new error
        errors = (gen.answers(self._index) - target).abs()
        max_err = float(errors.detach().max())
        self.ema_error = max_err if self.ema_error is None else \
            GEM_ERROR_EMA_BETA * self.ema_error + (1 - GEM_ERROR_EMA_BETA) * max_err
        threshold = GEM_ERROR_FACTOR * self.ema_error
        opt = torch.optim.Adam(gen.net.parameters(), lr=self.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, self.inner_steps, eta_min=1e-8)
        steps, loss_value = 0, 0.0
        best, stall = float("inf"), 0
        self.stopped = "steps"
        for step in range(self.inner_steps):
            opt.zero_grad()
            if step:
                errors = (gen.answers(self._index) - target).abs()
            detached = errors.detach()
            above = torch.nonzero(detached >= threshold).flatten()
            if above.numel() == 0:
                self.stopped = "fitted"
                break
            excess = float((detached[above] - threshold).sum())
            if excess < best * (1 - GEM_INNER_RTOL):
                best, stall = excess, 0
            else:
                stall += 1
                if self.patience and stall >= self.patience:
                    self.stopped = "no progress"
                    break
            worst = above[detached[above].argsort()[-self.max_queries:]]
            loss = errors[worst].mean()
            loss.backward()
            opt.step()
            sched.step()
            steps += 1
            loss_value = float(loss.detach())
        return steps, loss_value


def _parse_hidden(hidden) -> tuple[int, ...]:
    if isinstance(hidden, str):
        hidden = [h for h in hidden.replace("x", ",").split(",") if h.strip()]
    try:
        out = tuple(int(h) for h in hidden)
    except (TypeError, ValueError):
        raise ConfigError(f"hidden must be a list of layer widths, got {hidden!r}.") from None
    if not out or min(out) < 1:
        raise ConfigError(f"hidden must be a non-empty list of positive widths, got {hidden!r}.")
    return out


#: GEM's constructor options (GEM-Pub's and, after ``public_columns``, vGEM-Pub's)
GEM_OPTIONS = (
    Option("rounds", int, None, f"rounds T (default {GEM_DEFAULT_ROUNDS})"),
    Option("alpha", float, GEM_ALPHA, "share of each round's eps0 spent on selection"),
    Option("lr", float, GEM_LEARNING_RATE, "Adam's learning rate in the rounds"),
    Option("inner_steps", int, GEM_INNER_STEPS, "most Adam steps per round"),
    Option("max_queries", int, GEM_MAX_QUERIES, "most measured queries in one round's loss"),
    Option("noise_dim", int, GEM_NOISE_DIM, "dimension of the generator's input noise"),
    Option("hidden", tuple, GEM_HIDDEN, "widths of the residual blocks (e.g. 1024,1024)"),
    Option("batch", int, GEM_BATCH, "rows of the generator's fixed noise batch"),
    Option("ema_beta", float, None, "weight-EMA beta (default: 0.9 GEM, 0.5 GEM-Pub)"),
    Option("threads", int, GEM_THREADS, "PyTorch CPU threads (results are reproducible "
                                        "for a fixed count)"),
    Option("pretrain_patience", int, GEM_PUB_PRETRAIN_PATIENCE,
           "pre-training stops after this many steps without a new best"),
    Option("pretrain_max_steps", int, GEM_PUB_PRETRAIN_MAX_STEPS, "most pre-training steps"),
    Option("pretrain_lr", float, GEM_PUB_PRETRAIN_LR, "pre-training's learning rate"),
    Option("inner_patience", int, GEM_INNER_PATIENCE,
           "a round stops after this many steps without progress (0: never)"),
    Option("max_model_size", float, None,
           "accepted (the API passes it to every mechanism) and unused: no PGM model"),
)


class GEM(QueryReleaseMechanism):
    name = "gem"
    title = "GEM"
    capabilities = Capabilities(public_columns_variant="vGEM-Pub (--mechanism vgem-pub)",
                                neighbours=(BOUNDED,), releases=QUERY_ANSWERS)
    options = GEM_OPTIONS
    weights_ema_beta = GEM_WEIGHTS_EMA_BETA
    pretrain = False
    pretrain_source = "public rows"
    #: optional packages (the [gem] extra); missing: ConfigError when built or configured
    requires = ("torch",)

    def __init__(self, rounds: int | None = None, alpha: float = GEM_ALPHA,
                 lr: float = GEM_LEARNING_RATE, inner_steps: int = GEM_INNER_STEPS,
                 max_queries: int = GEM_MAX_QUERIES, noise_dim: int = GEM_NOISE_DIM,
                 hidden=GEM_HIDDEN, batch: int = GEM_BATCH, ema_beta: float | None = None,
                 threads: int = GEM_THREADS, pretrain_patience: int = GEM_PUB_PRETRAIN_PATIENCE,
                 pretrain_max_steps: int = GEM_PUB_PRETRAIN_MAX_STEPS,
                 pretrain_lr: float = GEM_PUB_PRETRAIN_LR,
                 inner_patience: int = GEM_INNER_PATIENCE,
                 max_model_size: float | None = None):
        require_packages(self)
        self.T = GEM_DEFAULT_ROUNDS if rounds is None else int(rounds)
        if self.T < 1:
            raise ConfigError("GEM needs at least one round.")
        alpha = check_budget_share(alpha, "the selection share")
        for label, v in (("lr", lr), ("inner_steps", inner_steps), ("max_queries", max_queries),
                         ("noise_dim", noise_dim), ("batch", batch), ("threads", threads),
                         ("pretrain_patience", pretrain_patience),
                         ("pretrain_max_steps", pretrain_max_steps),
                         ("pretrain_lr", pretrain_lr)):
            if not float(v) > 0:
                raise ConfigError(f"{label} must be positive, got {v!r}.")
        if int(batch) < 2:
            raise ConfigError("batch must be at least 2 (batch norm needs two rows).")
        try:
            patience_ok = float(inner_patience) >= 0 and float(inner_patience).is_integer()
        except (TypeError, ValueError):
            patience_ok = False
        if not patience_ok:
            raise ConfigError(f"inner_patience must be a whole number >= 0 (0: no stall stop, the "
                              f"authors' loop), got {inner_patience!r}.")
        self.inner_patience = int(float(inner_patience))
        self.alpha = float(alpha)
        self.lr = float(lr)
        self.inner_steps = int(inner_steps)
        self.max_queries = int(max_queries)
        self.noise_dim = int(noise_dim)
        self.hidden = _parse_hidden(hidden)
        self.batch = int(batch)
        self.ema_beta = self.weights_ema_beta if ema_beta is None else float(ema_beta)
        if not 0 <= self.ema_beta < 1:
            raise ConfigError(f"ema_beta must lie in [0, 1), got {ema_beta}.")
        self.threads = int(threads)
        self.pretrain_patience = int(pretrain_patience)
        self.pretrain_max_steps = int(pretrain_max_steps)
        self.pretrain_lr = float(pretrain_lr)
        self.generator: _Generator | None = None
        self.pretrain_report: dict | None = None
        #: whether the last run's pre-training came from the cache (:mod:`.pretrain_cache`)
        self.pretrain_cache_hit = False
        self._probs: np.ndarray | None = None

    def rounds_planned(self, state: RunState) -> int | None:
        return self.T

    # -- GEM-Pub's public pre-training -------------------------------------------

    def _pretrain_cliques(self, state: RunState) -> list[tuple[str, ...]]:
        """The marginals pre-training fits (GEM-Pub: the workload's)."""
        return list(state.workload.cliques)

    def _pretrain_target(self, state: RunState, cliques) -> np.ndarray:
        """Their exact answers (fractions) on the public data (GEM-Pub: the public rows)."""
        pub = state.data.public
        return np.concatenate([pub.marginal(cl) / pub.n for cl in cliques])

    def _pretrain(self, gen: _Generator, cliques, target: np.ndarray):
        """Fit the generator to the public marginals ``cliques`` (exact answers ``target``).

        The objective is the workload error itself on these marginals, the mean over
        marginals of ``||M_r(public) - M_r(G)||_1``, with its exact gradient over every
        cell (see the module docstring); Adam at ``pretrain_lr``, cosine-annealed to
        1e-7 over ``pretrain_max_steps``; it stops when the objective has not reached
        a new best for ``pretrain_patience`` steps and keeps the best generator.
        """
        torch = _torch()
        plan = _MarginalPlan(cliques)
        sizes = [int(np.prod([gen.col_sizes[gen.columns.index(c)] for c in cl])) for cl in cliques]
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        y = torch.tensor(target, dtype=torch.float32)

        def summary(answers: np.ndarray) -> dict:
            err = np.abs(target - answers)
            return {"max_error": float(err.max()), "mean_error": float(err.mean()),
                    "workload_error": float(np.add.reduceat(err, offsets[:-1]).mean())}

        with torch.no_grad():
            before = summary(gen.marginals(gen.probabilities(), plan).double().numpy())
        best, best_state, stall, steps = before["workload_error"], gen.state(), 0, 0
        opt = torch.optim.Adam(gen.net.parameters(), lr=self.pretrain_lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, self.pretrain_max_steps,
                                                           eta_min=1e-7)
        while steps < self.pretrain_max_steps and stall < self.pretrain_patience:
            opt.zero_grad()
            loss = (gen.marginals(gen.probabilities(), plan) - y).abs().sum() / len(cliques)
            value = float(loss.detach())  # the objective before this step's update
            if value < best:
                best, best_state, stall = value, gen.state(), 0
            elif steps:
                stall += 1
            loss.backward()
            opt.step()
            sched.step()
            steps += 1
        with torch.no_grad():
            last = float((gen.marginals(gen.probabilities(), plan) - y).abs().sum()) / len(cliques)
        if last < best:
            best_state = gen.state()
        gen.net.load_state_dict(best_state)
        with torch.no_grad():
            after = summary(gen.marginals(gen.probabilities(), plan).double().numpy())
        self.pretrain_report = {"steps": steps, "marginals": len(cliques), "before": before,
                                "after": after}

    def _pretrain_or_load(self, gen: _Generator, cliques, target: np.ndarray,
                          seed: int, research: bool) -> None:
        """:meth:`_pretrain`, or its result from the pre-training cache when the
        environment names one and it holds this pre-training (:mod:`.pretrain_cache`:
        the same public marginals, seed and settings give the same generator). Only
        seeded research runs use the cache: a release run's seed is fresh, so its
        entry would never be found again."""
        cache = PretrainCache.from_environment() if research else None
        key = None if cache is None else PretrainCache.key(
            target, cliques=[list(c) for c in cliques], columns=gen.columns,
            sizes=gen.col_sizes, seed=seed, noise_dim=self.noise_dim, hidden=list(self.hidden),
            batch=self.batch, lr=self.pretrain_lr, patience=self.pretrain_patience,
            max_steps=self.pretrain_max_steps, threads=self.threads, block=GEM_JOINT_BLOCK)
        entry = None if cache is None else cache.load(key)
        expected = {name: t.shape for name, t in gen.net.state_dict().items()}
        # an entry that is not this network's (damaged, or foreign) is a miss
        self.pretrain_cache_hit = entry is not None and \
            {name: t.shape for name, t in entry[0].items()} == expected
        if self.pretrain_cache_hit:
            state, self.pretrain_report = entry
            gen.net.load_state_dict(state)
            return
        self._pretrain(gen, cliques, target)
        if cache is not None:
            cache.save(key, gen.state(), self.pretrain_report)

    # -- the run -----------------------------------------------------------------

    def _check(self, state: RunState) -> None:
        self._require_bounded(state)
        if self.pretrain:
            self._require_public(state)

    def _selectable(self, queries: CountingQueries) -> np.ndarray | None:
        """Mask of the queries selection may pick before any is measured (``None``: all)."""
        return None

    def run(self, loop: QueryReleaseLoop):
        torch = _torch()
        state = loop.state
        self._check(state)
        data, ledger, rng = state.data, loop.ledger, loop.rng
        n = data.n
        queries = CountingQueries(state.workload, data.sizes)
        selectable = self._selectable(queries)
        pool = queries.total if selectable is None else int(selectable.sum())
        if self.T > pool:
            raise ConfigError(f"{self.name} measures T={self.T} distinct counting queries but the "
                              f"workload offers only {pool}.", hint="Use fewer rounds.")
        old_threads = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            started = time.perf_counter()
            seed = int(rng.integers(2 ** 62))
            gen = _Generator(data.sizes, queries, self.noise_dim, self.hidden, self.batch, seed)
            self.generator = gen
            if self.pretrain:
                cliques = self._pretrain_cliques(state)
                self._pretrain_or_load(gen, cliques, self._pretrain_target(state, cliques),
                                       seed, research=loop.noise.mode == "research")
                rep = self.pretrain_report
                yield loop.event(round=0, cliques=[], source=PUBLIC, started=started,
                                 model_size_mb=gen.size_mb,
                                 note=f"pre-trained on {self.pretrain_source} "
                                      f"({rep['marginals']} marginals): {rep['steps']} steps, "
                                      f"error {rep['before']['workload_error']:.4f} -> "
                                      f"{rep['after']['workload_error']:.4f}")
            true = queries.answers(data.private)
            eps0 = privacy.gem_eps0(ledger.total, self.T, self.alpha)
            eps_select = 2 * self.alpha * eps0
            sens = 1.0 / n
            sigma = sens / ((1 - self.alpha) * eps0)
            trainer = _Trainer(gen, self.lr, self.inner_steps, self.max_queries,
                               self.inner_patience)
            # a query leaves the pool once measured (GEM never re-measures a query)
            measured = np.zeros(queries.total, dtype=bool) if selectable is None else ~selectable
            scores = np.empty(queries.total)      # |q(D) - q(G)|, rewritten in place each round
            candidates = np.empty(queries.total)  # the scores, -inf where already measured
            save_num = max(1, int(np.round(self.T * 0.5)))
            ema: dict | None = None
            for t in range(1, self.T + 1):
                started = time.perf_counter()
                state.round = t
                np.subtract(true, gen.answers_float32(), out=scores)
                np.abs(scores, out=scores)
                np.copyto(candidates, scores)
                np.putmask(candidates, measured, -np.inf)
                rho_select = privacy.exponential_rho(eps_select)
                ledger.charge(rho_select, round=t, step="select", mechanism="exponential",
                              detail=f"{pool - t + 1} counting queries")
                q = loop.noise.select(candidates, eps_select, sens)  # research: rng
                measured[q] = True
                i, a, rho_measure = measure_counting_query(state, queries, q, true, sigma, sens,
                                                           rng, t, last=t == self.T)
                trainer.add(q, a)
                steps, loss = trainer.optimise()
                if t > self.T - save_num:
                    w = gen.net.state_dict()
                    if ema is None:
                        ema = copy.deepcopy(w)
                    else:
                        for key, v in w.items():
                            if v.is_floating_point():
                                ema[key] = self.ema_beta * ema[key] + (1 - self.ema_beta) * v
                            else:
                                ema[key] = v.clone()
                yield loop.event(round=t, cliques=[queries.cliques[i]], source=PRIVATE,
                                 sigma=n * sigma, epsilon=eps_select, rho_select=rho_select,
                                 rho_measure=rho_measure, started=started,
                                 model_size_mb=gen.size_mb, n_candidates=pool - t + 1,
                                 note=f"cell {queries.describe(q)}; {steps} inner steps"
                                      f"{' (no progress)' if trainer.stopped == 'no progress' else ''}, "
                                      f"loss {loss:.4g}",
                                 curator=queries.curator(scores, q))
            gen.net.load_state_dict(ema)
            with torch.no_grad():
                self._probs = gen.probabilities().double().numpy()
        finally:
            torch.set_num_threads(old_threads)

    def answers(self) -> np.ndarray:
        """Every workload counting query answered by the output generator (fractions)."""
        return self.generator.all_answers()

    def sample(self, loop, rows: int, rng: np.random.Generator, public_codes=None) -> pd.DataFrame:
        """``rows`` records: rows of the batch (cycled, shuffled), each column drawn
        from that row's softmax."""
        gen, probs = self.generator, self._probs
        which = rng.permutation(np.resize(np.arange(gen.K), rows))
        out = {}
        for c, size in zip(gen.columns, gen.col_sizes):
            cdf = np.cumsum(probs[which, gen.slices[c]], axis=1)
            u = rng.random(rows)[:, None] * cdf[:, -1:]
            out[c] = np.minimum((u > cdf).sum(axis=1), size - 1).astype(np.int64)
        return pd.DataFrame(out)


class GEMPub(GEM):
    name = "gem-pub"
    title = "GEM-Pub"
    capabilities = Capabilities(public_rows=True,
                                public_columns_variant="vGEM-Pub (--mechanism vgem-pub)",
                                neighbours=(BOUNDED,), releases=QUERY_ANSWERS)
    weights_ema_beta = GEM_PUB_WEIGHTS_EMA_BETA
    pretrain = True


class VGEMPub(GEMPub):
    """vGEM-Pub (seed 002): GEM-Pub for a *vertical* split. The user marks public
    columns ``P``; bounded DP, neighbours differ in one record's private values.

    Pre-training fits only the workload's marginals inside ``P``: the maximal
    sets among ``r ∩ P`` for the workload marginals ``r`` (for all-3way with at
    least three public columns, the 3-way marginals of ``P``), answered exactly
    from the table's own public columns (sensitivity 0: free). The private
    rounds are GEM's, over the counting queries that touch a private column
    (a query inside ``P`` is already answered exactly; measuring it would
    spend budget on a public answer). Public rows are not used.
    """

    name = "vgem-pub"
    title = "vGEM-Pub"
    capabilities = Capabilities(public_columns=REQUIRED, neighbours=(BOUNDED,),
                                releases=QUERY_ANSWERS)
    #: ``public_columns``, then GEM's options (its constructor passes them on)
    options = (PUBLIC_COLUMNS_OPTION, *GEM_OPTIONS)
    pretrain_source = "the public columns"

    def __init__(self, public_columns: Sequence[str] = (), **options):
        super().__init__(**options)
        self.public_columns = parse_public_columns("vGEM-Pub", public_columns)
        self.private_columns: tuple[str, ...] = ()

    def _check(self, state: RunState) -> None:
        self._require_bounded(state)
        self.private_columns = check_public_split("vGEM-Pub", self.public_columns,
                                                  state.data.sizes)

    def _pretrain_cliques(self, state: RunState) -> list[tuple[str, ...]]:
        public = set(self.public_columns)
        parts = {tuple(c for c in cl if c in public) for cl in state.workload.cliques}
        parts.discard(())
        if not parts:
            raise ConfigError("vGEM-Pub: no workload marginal involves a public column, so "
                              "there is nothing to pre-train on.",
                              hint="Use a workload with public columns, or gem.")
        maximal = [p for p in parts if not any(set(p) < set(o) for o in parts)]
        return sorted(maximal)

    def _pretrain_target(self, state: RunState, cliques) -> np.ndarray:
        own = state.data.private   # only its public columns are read
        return np.concatenate([own.marginal(cl) / own.n for cl in cliques])

    def _selectable(self, queries: CountingQueries) -> np.ndarray:
        public = set(self.public_columns)
        mask = np.ones(queries.total, dtype=bool)
        for i, cl in enumerate(queries.cliques):
            if set(cl) <= public:
                mask[queries.offsets[i]:queries.offsets[i + 1]] = False
        return mask

