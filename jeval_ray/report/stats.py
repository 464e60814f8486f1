"""The statistics of the report, as plain functions of numbers (no Arrow, no run layout).

Following Miller, "Adding Error Bars to Evals" (2024, arXiv:2411.00640):

* **Clustered standard error** of a mean (``clustered_mean``): episodes of one task are not
  independent (they share the task's difficulty), so the unit of resampling is the task. With
  ``G`` clusters, ``u_g`` the sum of the deviations from the overall mean within cluster ``g`` and
  ``n`` observations, ``SE² = G/(G-1) · Σ_g u_g² / n²`` (Miller's clustered estimator with the
  usual ``G/(G-1)`` small-sample factor), and the interval uses Student's t with ``G-1`` degrees of
  freedom because a benchmark has few tasks. With one cluster (one task) the observations are the
  seeds of that task and the plain standard error with ``n-1`` degrees of freedom is used.
* **Paired difference** (``paired_difference``): two models scored on the same (task, seed) cells;
  the per-cell difference gets the same clustered estimator, so the task difficulty both models share
  cancels. The Pearson correlation of the two models' scores over the cells says how much pairing
  helped. The **minimum detectable effect** is ``(z_{1-α/2} + z_{1-β}) · SE`` of the difference
  (α = 0.05, power 1-β = 0.8: 2.80 · SE).
* **Holm** step-down adjustment of p-values across the pairs of a board (``holm``).
* **pass^k** (``pass_hat_k``): per task, with ``c`` of ``n`` seeds passing, ``C(c,k)/C(n,k)`` is the
  unbiased estimate of the chance that k independent seeds all pass (the average over all C(n, k)
  seed combinations); a model's pass^k is the mean over tasks, with a percentile bootstrap interval
  that resamples tasks (``bootstrap_mean``), seeded so it reproduces.
* **Power planning** (``seeds_needed``): from a pilot's per-cell paired differences, the seeds per
  task needed for the minimum detectable effect to reach a target difference.

"Variance not measurable": a number with fewer than ``MIN_SEEDS`` seeds behind it gets no
interval, p-value or MDE (``None``), never an interval of zero.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

MIN_SEEDS = 5
ALPHA = 0.05
POWER = 0.8


def z_alpha_beta(alpha: float = ALPHA, power: float = POWER) -> float:
    """``z_{1-α/2} + z_{power}``: 1.96 + 0.84 = 2.80 at the defaults."""
    return float(stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power))


@dataclass(frozen=True)
class Estimate:
    """A mean with its clustered standard error and interval; ``se`` is ``None`` when not measurable."""

    mean: float | None
    se: float | None
    lo: float | None
    hi: float | None
    n: int
    clusters: int
    seeds: int
    df: int | None

    @property
    def measurable(self) -> bool:
        return self.se is not None

    @property
    def half_width(self) -> float | None:
        return None if self.hi is None or self.mean is None else self.hi - self.mean


def _groups(values: Sequence[float], clusters: Sequence[Hashable]) -> dict[Hashable, list[float]]:
    g: dict[Hashable, list[float]] = defaultdict(list)
    for v, c in zip(values, clusters):
        g[c].append(float(v))
    return g


def clustered_se(values: Sequence[float], clusters: Sequence[Hashable]) -> tuple[float, int]:
    """``(SE, degrees of freedom)`` of the mean of ``values`` clustered by ``clusters`` (see module doc)."""
    x = np.asarray(values, dtype=float)
    n = len(x)
    groups = _groups(x, clusters)
    g = len(groups)
    if n < 2:
        raise ValueError("a standard error needs at least 2 observations")
    if g == 1:
        se, df = float(np.std(x, ddof=1) / math.sqrt(n)), n - 1
    else:
        m = x.mean()
        u = np.array([sum(v) - len(v) * m for v in groups.values()])
        se, df = float(math.sqrt(g / (g - 1) * float(np.sum(u**2)) / n**2)), g - 1
    # identical values leave rounding residue (~1e-17), not a variance: call it exactly 0
    return (0.0 if se < 1e-12 else se), df


def clustered_mean(values: Sequence[float], clusters: Sequence[Hashable], seeds: Sequence[Hashable],
                   alpha: float = ALPHA) -> Estimate:
    """Mean with a ``1-alpha`` interval clustered by ``clusters``; not measurable below ``MIN_SEEDS`` seeds."""
    n, n_clusters, n_seeds = len(values), len(set(clusters)), len(set(seeds))
    if n == 0:
        return Estimate(None, None, None, None, 0, 0, 0, None)
    mean = float(np.mean(values))
    if n_seeds < MIN_SEEDS:
        return Estimate(mean, None, None, None, n, n_clusters, n_seeds, None)
    se, df = clustered_se(values, clusters)
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    return Estimate(mean, se, mean - half, mean + half, n, n_clusters, n_seeds, df)


@dataclass(frozen=True)
class Paired:
    """The difference ``a - b`` over shared cells, its interval, two-sided p-value, correlation and MDE."""

    diff: Estimate
    corr: float | None
    p: float | None
    mde: float | None


def paired_difference(a: Sequence[float], b: Sequence[float], clusters: Sequence[Hashable], seeds: Sequence[Hashable],
                      alpha: float = ALPHA, power: float = POWER) -> Paired:
    """Paired comparison of two aligned score lists (one entry per shared (task, seed) cell)."""
    d = [x - y for x, y in zip(a, b)]
    est = clustered_mean(d, clusters, seeds, alpha)
    corr = None
    if len(a) >= 2 and np.std(a) > 0 and np.std(b) > 0:
        corr = float(np.corrcoef(a, b)[0, 1])
    if not est.measurable:
        return Paired(est, corr, None, None)
    if est.se == 0:  # every cell differs by the same amount: the difference is exact
        p = 1.0 if est.mean == 0 else 0.0
    else:
        p = float(2 * stats.t.sf(abs(est.mean / est.se), est.df))
    return Paired(est, corr, p, z_alpha_beta(alpha, power) * est.se)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (``None`` entries stay ``None`` and do not count)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda i: pvalues[i])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def tie_ranks(means: dict[str, float], better: set[tuple[str, str]]) -> dict[str, int]:
    """Rank = 1 + the number of models significantly better; models not separable share a rank.

    ``better`` holds ``(winner, loser)`` pairs whose difference is significant after Holm.
    """
    return {m: 1 + sum((o, m) in better for o in means) for m in means}


def pass_hat_k(c: int, n: int, k: int) -> float:
    """Unbiased pass^k of one task: C(c, k) / C(n, k), the mean over all k-subsets of its n seeds."""
    if not 0 < k <= n:
        raise ValueError(f"k must be in 1..{n}")
    return math.comb(c, k) / math.comb(n, k)


def bootstrap_mean(values: Sequence[float], seed: int, resamples: int = 2000,
                   alpha: float = ALPHA) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the mean of ``values`` (scipy), seeded; ``None`` below 2 values."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return None
    if np.all(x == x[0]):  # every resample has the same mean (scipy would warn about a degenerate sample)
        return float(x[0]), float(x[0])
    res = stats.bootstrap((x,), np.mean, n_resamples=resamples, confidence_level=1 - alpha, method="percentile",
                          rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@dataclass(frozen=True)
class Plan:
    """Seeds per task needed to detect ``effect`` between two models (``None``: not reachable by seeds)."""

    effect: float
    tasks: int
    pilot_seeds: int
    within_var: float
    between_var: float
    mde_pilot: float | None
    seeds_needed: int | None
    tasks_needed_at_pilot_seeds: int | None


def seeds_needed(diffs: Sequence[float], tasks: Sequence[Hashable], seeds: Sequence[Hashable], effect: float,
                 alpha: float = ALPHA, power: float = POWER) -> Plan:
    """Seeds per task for the MDE of a paired difference to reach ``effect`` (Miller's power formula).

    The per-cell difference is ``d_ts = μ + a_t + e_ts``: ``a_t`` is how the gap varies between tasks
    and ``e_ts`` between seeds of a task. With ``T`` tasks and ``S`` seeds per task
    ``Var(mean d) = σ_a²/T + σ_e²/(T·S)``; ``σ_e²`` is the pooled within-task variance of the pilot and
    ``σ_a² = max(0, var(task means) - σ_e²/S_pilot)``. Seeds only shrink the second term: when
    ``(z_{1-α/2}+z_{1-β})² σ_a²/T`` alone exceeds ``effect²`` no number of seeds is enough and more
    tasks are needed (``tasks_needed_at_pilot_seeds``).
    """
    if effect <= 0:
        raise ValueError("effect must be > 0")
    by_task = _groups(diffs, tasks)
    t = len(by_task)
    s_pilot = len(set(seeds))
    multi = [v for v in by_task.values() if len(v) >= 2]
    dof = sum(len(v) - 1 for v in multi)
    sigma_e2 = float(sum(np.var(v, ddof=1) * (len(v) - 1) for v in multi) / dof) if dof else 0.0
    means = [float(np.mean(v)) for v in by_task.values()]
    sigma_a2 = max(0.0, float(np.var(means, ddof=1)) - sigma_e2 / max(s_pilot, 1)) if t >= 2 else 0.0
    z = z_alpha_beta(alpha, power)
    mde_pilot = z * math.sqrt(sigma_a2 / t + sigma_e2 / (t * s_pilot)) if t and s_pilot else None
    budget = (effect / z) ** 2 - sigma_a2 / t  # what is left for the seed term
    need = None if budget <= 0 else max(MIN_SEEDS, math.ceil(sigma_e2 / (t * budget)))
    tasks_needed = None
    if sigma_a2 > 0 or sigma_e2 > 0:
        tasks_needed = max(2, math.ceil((sigma_a2 + sigma_e2 / max(s_pilot, 1)) / (effect / z) ** 2))
    return Plan(effect, t, s_pilot, sigma_e2, sigma_a2, mde_pilot, need, tasks_needed)
