"""The report's statistics against values worked out independently on small fixed tables.

Each expected value is computed by hand in the comment next to it, or by a different route
(scipy's t-tests, brute force over seed combinations, scipy's bootstrap called directly).
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from jeval_ray.report import stats

SEEDS5 = [0, 1, 2, 3, 4]


def test_clustered_standard_error_by_hand():
    # x = 0.2 0.4 0.6 | 0.5 0.7 (tasks A | B), n = 5, mean = 2.4 / 5 = 0.48
    # u_A = 1.2 - 3 * 0.48 = -0.24, u_B = 1.2 - 2 * 0.48 = 0.24, sum u^2 = 0.1152
    # SE^2 = G/(G-1) * 0.1152 / n^2 = 2 * 0.1152 / 25 = 0.009216 -> SE = 0.096, df = G - 1 = 1
    x, tasks = [0.2, 0.4, 0.6, 0.5, 0.7], ["A", "A", "A", "B", "B"]
    se, df = stats.clustered_se(x, tasks)
    assert se == pytest.approx(0.096) and df == 1
    e = stats.clustered_mean(x, tasks, SEEDS5)
    t = 12.706204736  # t_{0.975, 1} from tables
    assert e.mean == pytest.approx(0.48) and e.lo == pytest.approx(0.48 - t * 0.096) and e.hi == pytest.approx(0.48 + t * 0.096)


def test_balanced_clusters_equal_a_one_sample_t_on_the_task_means():
    # with equal cluster sizes the clustered SE of the mean is sd(task means) / sqrt(G): scipy's one-sample t
    rng = np.random.default_rng(7)
    scores = rng.uniform(0, 1, size=(4, 5))  # 4 tasks x 5 seeds
    x = scores.ravel().tolist()
    tasks = [t for t in range(4) for _ in range(5)]
    seeds = [s for _ in range(4) for s in range(5)]
    e = stats.clustered_mean(x, tasks, seeds)
    ref = sps.ttest_1samp(scores.mean(axis=1), 0.0)
    ci = ref.confidence_interval(0.95)
    assert e.se == pytest.approx(scores.mean(axis=1).std(ddof=1) / 2) and e.df == 3
    assert (e.lo, e.hi) == (pytest.approx(ci.low), pytest.approx(ci.high))


def test_one_task_uses_the_plain_standard_error_across_seeds():
    x = [0.1, 0.2, 0.3, 0.4, 0.5]  # sd = sqrt(0.025) = 0.1581, SE = 0.1581 / sqrt(5) = 0.0707, df 4
    e = stats.clustered_mean(x, ["A"] * 5, SEEDS5)
    assert e.se == pytest.approx(math.sqrt(0.025 / 5)) and e.df == 4


def test_fewer_than_five_seeds_is_not_measurable_never_an_interval_of_zero():
    e = stats.clustered_mean([0.5, 0.5, 0.7, 0.7], ["A", "A", "B", "B"], [0, 1, 0, 1])
    assert e.mean == pytest.approx(0.6) and e.seeds == 2
    assert not e.measurable and e.se is None and e.lo is None and e.hi is None
    p = stats.paired_difference([0.5, 0.6, 0.7, 0.9], [0.4, 0.5, 0.5, 0.5], ["A", "A", "B", "B"], [0, 1, 0, 1])
    assert p.diff.mean == pytest.approx(0.2) and p.p is None and p.mde is None


def test_paired_difference_with_one_cell_per_task_is_scipys_paired_t_test():
    a = [0.9, 0.7, 0.8, 0.6, 0.95]
    b = [0.7, 0.65, 0.5, 0.55, 0.8]
    tasks = ["T1", "T2", "T3", "T4", "T5"]
    p = stats.paired_difference(a, b, tasks, SEEDS5)
    ref = sps.ttest_rel(a, b)
    ci = ref.confidence_interval(0.95)
    # d = 0.2 0.05 0.3 0.05 0.15: mean 0.15
    assert p.diff.mean == pytest.approx(0.15)
    assert p.p == pytest.approx(ref.pvalue) and (p.diff.lo, p.diff.hi) == (pytest.approx(ci.low), pytest.approx(ci.high))
    assert p.corr == pytest.approx(np.corrcoef(a, b)[0, 1])
    # MDE = (z_0.975 + z_0.8) * SE = (1.959964 + 0.841621) * SE
    assert p.mde == pytest.approx(2.801585 * p.diff.se, rel=1e-6)
    assert stats.z_alpha_beta() == pytest.approx(2.801585, rel=1e-6)


def test_a_constant_paired_difference_is_exact():
    p = stats.paired_difference([0.9] * 5, [0.7] * 5, ["A"] * 5, SEEDS5)
    assert p.diff.mean == pytest.approx(0.2) and p.diff.se == pytest.approx(0) and p.p == 0.0 and p.corr is None


def test_holm_by_hand():
    # sorted p: 0.005 x4 = 0.02; 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # unmeasurable comparisons stay None and do not count in m
    assert stats.holm([0.02, None, 0.5]) == [pytest.approx(0.04), None, pytest.approx(0.5)]
    assert stats.holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])  # capped at 1


def test_tie_ranks_share_a_rank_when_not_separable():
    means = {"a": 0.9, "b": 0.6, "c": 0.55, "d": 0.1}
    better = {("a", "b"), ("a", "c"), ("a", "d"), ("b", "d"), ("c", "d")}  # b vs c not significant
    assert stats.tie_ranks(means, better) == {"a": 1, "b": 2, "c": 2, "d": 4}
    assert stats.tie_ranks(means, set()) == {"a": 1, "b": 1, "c": 1, "d": 1}


@pytest.mark.parametrize("flags", [[1, 1, 1, 0, 0], [1, 0, 1, 1, 1, 0, 1], [0, 0, 0, 1], [1, 1, 1]])
def test_pass_hat_k_is_the_mean_over_all_seed_combinations(flags):
    n, c = len(flags), sum(flags)
    for k in range(1, n + 1):
        combos = list(itertools.combinations(flags, k))
        brute = sum(all(x) for x in combos) / len(combos)
        assert stats.pass_hat_k(c, n, k) == pytest.approx(brute)
    assert stats.pass_hat_k(3, 5, 2) == pytest.approx(3 / 10)  # C(3,2)/C(5,2)


def test_bootstrap_is_seeded_and_is_scipys_percentile_interval():
    vals = [0.2, 0.4, 0.9, 1.0, 0.5, 0.0]
    lo, hi = stats.bootstrap_mean(vals, seed=3, resamples=1000)
    assert (lo, hi) == stats.bootstrap_mean(vals, seed=3, resamples=1000)
    ref = sps.bootstrap((np.array(vals),), np.mean, n_resamples=1000, method="percentile",
                        rng=np.random.default_rng(3)).confidence_interval
    assert (lo, hi) == (pytest.approx(ref.low), pytest.approx(ref.high))
    assert lo < np.mean(vals) < hi and stats.bootstrap_mean(vals, seed=4, resamples=1000) != (lo, hi)
    assert stats.bootstrap_mean([0.5, 0.5, 0.5], seed=0) == (0.5, 0.5)
    assert stats.bootstrap_mean([0.5], seed=0) is None


def test_seeds_needed_by_hand():
    # two tasks with the same per-seed differences: task means equal, so sigma_tasks^2 = 0
    # within-task variance: d = 0, .1, .2, .1, .1 -> mean .1, var = (.01 + 0 + .01 + 0 + 0) / 4 = 0.005
    d = [0.0, 0.1, 0.2, 0.1, 0.1] * 2
    tasks = ["A"] * 5 + ["B"] * 5
    plan = stats.seeds_needed(d, tasks, SEEDS5 * 2, effect=0.05)
    assert plan.within_var == pytest.approx(0.005) and plan.between_var == 0
    # S = ceil(sigma_e^2 / (T * (D/z)^2)) = ceil(0.005 / (2 * (0.05 / 2.801585)^2)) = ceil(7.849) = 8
    assert plan.seeds_needed == 8
    assert plan.mde_pilot == pytest.approx(2.801585 * math.sqrt(0.005 / 10), rel=1e-6)
    # a big effect still asks for the minimum of 5 seeds (below that variance is not measurable)
    assert stats.seeds_needed(d, tasks, SEEDS5 * 2, effect=0.5).seeds_needed == 5


def test_seeds_cannot_fix_a_gap_that_varies_between_tasks():
    # task A gap 0.0, task B gap 0.4 (no seed noise): sigma_tasks^2 = var(0, 0.4) = 0.08
    d = [0.0] * 5 + [0.4] * 5
    plan = stats.seeds_needed(d, ["A"] * 5 + ["B"] * 5, SEEDS5 * 2, effect=0.1)
    assert plan.between_var == pytest.approx(0.08) and plan.seeds_needed is None
    # tasks: ceil(0.08 / (0.1 / 2.801585)^2) = ceil(62.79) = 63
    assert plan.tasks_needed_at_pilot_seeds == 63
