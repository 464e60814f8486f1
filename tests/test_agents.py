"""Built-in agents prove every available task is solvable from the tools alone and discriminates.

Over seeds 0-4 at default knobs: careful outcome >= 0.95 on each seed; mean final score
random < naive < careful; naive outcome < 0.9 wherever the task has decoys.
"""

import statistics

import pytest

from jeval_ray.agents import make_agent
from jeval_ray.episode import play
from jeval_ray.errors import ConfigError
from jeval_ray.tasks import available_tasks, get_task
from jeval_ray.world import generate_world

AVAILABLE = [t.id for t in available_tasks()]
SEEDS = range(5)


@pytest.fixture(scope="module")
def results():
    out = {}
    for t in AVAILABLE:
        for s in SEEDS:
            world = generate_world(t, s)  # immutable: the three agents play the same world
            for a in ("random", "naive", "careful"):
                out[(t, a, s)] = play(t, a, s, world=(world, False))
    return out


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_careful_agent_reaches_outcome_095_on_every_seed(results, task_id):
    for s in SEEDS:
        o = results[(task_id, "careful", s)]
        assert o.score.outcome >= 0.95, (task_id, s, o.score.verification)
        assert o.termination == "submitted"
        assert o.score.verification.fabrications == 0 and o.score.verification.premature_disposition == 0


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_mean_score_orders_random_below_naive_below_careful(results, task_id):
    mean = {a: statistics.fmean(results[(task_id, a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"], mean


@pytest.mark.parametrize("task_id", AVAILABLE)
def test_naive_agent_is_fooled_by_decoys(results, task_id):
    for s in SEEDS:
        if generate_world(task_id, s).decoys:
            assert results[(task_id, "naive", s)].score.outcome < 0.9, (task_id, s)


@pytest.mark.parametrize("task_id, withheld", [(t.id, w) for t in available_tasks() for w in ((), t.withheld_variant)])
def test_careful_fits_the_budget_at_the_largest_default_counts(task_id, withheld):
    # 8 defects + 8 decoys is the top of the default 3-8 range; the withheld-tool variant too
    budget = get_task(task_id).step_budget
    for s in (0, 1):
        o = play(task_id, "careful", s, {"n_defects": 8, "n_decoys": 8}, tools_withheld=withheld)
        assert o.termination == "submitted" and len(o.steps) <= budget
        assert o.score.outcome >= 0.95, (task_id, withheld, s, o.score.verification)


def test_unknown_builtin_agent_is_a_config_error():
    with pytest.raises(ConfigError, match="unknown built-in agent"):
        make_agent("genius")


def test_builtin_agents_are_deterministic():
    a, b = play("JE-1", "random", 3), play("JE-1", "random", 3)
    assert [(s.tool, s.args) for s in a.steps] == [(s.tool, s.args) for s in b.steps]
