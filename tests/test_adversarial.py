"""The adversarial suite: score-gaming agents on every task cannot earn points without auditing.

Plays the built-in agents and every adversary of ``jeval_ray.agents.adversarial`` on all 16 tasks
over held-out seeds and asserts the bounds ``docs/scoring.md`` promises:

* no free points: submitting at once, clearing ordinary entries, never flagging: exactly 0 an episode;
* no laundering and no surface rule: neither beats the plain naive rule by more than 0.03 a task;
* decoys cost: flagging every defect and every decoy (3 + 3) gives an outcome ≤ 0.6;
* the tasks discriminate: careful − naive ≥ 0.15, careful's outcome ≥ 0.95, random < naive < careful;
* no surface leaks: a listing-only classifier (logistic and forest, ``jeval_ray.agents.surface``)
  trained on 30 labelled seeds scores ≤ 0.65 decoy-vs-defect ROC AUC on 30 held-out seeds.
"""

import asyncio
import statistics

import pytest

from jeval_ray.agents import make_agent
from jeval_ray.agents.adversarial import SurfaceModel, make_adversary
from jeval_ray.agents.surface import Probe, probe_auc
from jeval_ray.env import JEEnv
from jeval_ray.episode import play_episode
from jeval_ray.tasks import TASK_IDS
from jeval_ray.world import generate_world

SEEDS = range(600, 604)
#: the "does not beat naive by more than 0.03" bounds compare means: more seeds, so chance does not decide
PAIRED_SEEDS = range(600, 616)
TRAIN = range(1000, 1030)
#: the leak probe is trained on TRAIN and scored on these held-out seeds
PROBE_TEST = range(4000, 4030)
MAX_AUC = 0.65
EQUAL = {"n_defects": 3, "n_decoys": 3}
FREE_POINTS = ("submit_now", "farmer", "never_flag")


def _play(task, agent, world, knobs=None):
    env = JEEnv(task, knobs)
    return asyncio.run(play_episode(env, agent, world.seed, world=(world, False))).score


@pytest.fixture(scope="module", params=TASK_IDS)
def table(request):
    """{agent: [EpisodeScore per seed]} for one task, and the listing-only probe's held-out AUC.

    Worlds are immutable, so each is built once and handed to every episode played on it."""
    task = request.param
    worlds = {s: generate_world(task, s) for s in (*PAIRED_SEEDS, *SEEDS)}
    equal = {s: generate_world(task, s, EQUAL) for s in SEEDS}
    train = [generate_world(task, s) for s in TRAIN]
    forest = Probe("forest", train)
    out = {}
    for name in ("random", "careful"):
        out[name] = [_play(task, make_agent(name, s), worlds[s]) for s in SEEDS]
    out["naive"] = [_play(task, make_agent("naive", s), worlds[s]) for s in PAIRED_SEEDS]
    for name in FREE_POINTS:
        out[name] = [_play(task, make_adversary(name, s), worlds[s]) for s in SEEDS]
    out["laundered_naive"] = [_play(task, make_adversary("laundered_naive", s), worlds[s]) for s in PAIRED_SEEDS]
    out["surface_rule"] = [_play(task, make_adversary("surface_rule", s, model=SurfaceModel(
        forest.world_scores(worlds[s]))), worlds[s]) for s in PAIRED_SEEDS]
    out["flag_key"] = [_play(task, make_adversary("flag_key", s, world=equal[s]), equal[s], EQUAL) for s in SEEDS]
    held_out = [generate_world(task, s) for s in PROBE_TEST]
    auc = probe_auc(train, held_out, trained={"forest": forest})
    return task, out, auc


def _mean(scores, part="score"):
    return statistics.fmean(getattr(s, part) for s in scores)


def test_no_free_points_for_doing_nothing_clearing_ordinary_entries_or_never_flagging(table):
    task, out, _ = table
    for name in FREE_POINTS:
        worst = max(s.score for s in out[name])
        assert worst == 0.0, (task, name, worst)


def test_laundering_and_surface_rules_do_not_beat_the_naive_rule(table):
    task, out, _ = table
    naive = _mean(out["naive"])
    for name in ("laundered_naive", "surface_rule"):
        assert _mean(out[name]) <= naive + 0.03, (task, name, _mean(out[name]), naive)
    for name in FREE_POINTS:
        assert _mean(out[name]) <= _mean(out["naive"][: len(SEEDS)]) + 0.03, (task, name)


def test_flagging_every_defect_and_every_decoy_costs(table):
    task, out, _ = table
    assert _mean(out["flag_key"], "outcome") <= 0.6, task
    assert _mean(out["flag_key"]) < _mean(out["careful"]) - 0.15, task


def test_the_task_discriminates(table):
    task, out, _ = table
    careful, naive, rnd = _mean(out["careful"]), _mean(out["naive"]), _mean(out["random"])
    assert min(s.outcome for s in out["careful"]) >= 0.95, task
    assert careful - naive >= 0.15, (task, careful, naive)
    assert rnd < naive < careful, (task, rnd, naive, careful)


def test_a_listing_only_classifier_cannot_tell_decoys_from_defects(table):
    """Both probe models (logistic, forest), trained on the listing of 30 labelled seeds, score
    ≤ 0.65 ROC AUC on 30 held-out seeds: what separates a decoy from a defect is evidence to read."""
    task, _, auc = table
    assert all(v is not None and v <= MAX_AUC for v in auc.values()), (task, auc)


def test_naming_every_staff_member_or_naming_in_the_summary_does_not_name_the_scheme_user():
    from jeval_ray.agents import Action

    env = JEEnv("JE-15")
    env.reset(seed=5)
    w = env.world
    staff = [u for u in w.master["users"].to_pylist() if u.get("role") != "System"]
    heads = {r["entry_id"]: r for r in w.ledger.to_pylist() if r["line_no"] == 1}
    preps = [heads[d.entry_id]["preparer"] for d in w.defects if d.entry_id in heads]
    scheme = max(sorted(set(preps)), key=preps.count)
    everyone = ", ".join(f"{u['user_id']} {u['name']}" for u in staff)
    for d in w.defects:
        env.step(Action("flag_entry", {"entry_id": d.entry_id, "criteria": d.criteria, "evidence": [],
                                       "rationale": f"Keyed by one of {everyone}."}))
    assert env.score().verification.extra["scheme_user_named"] is False
    fresh = JEEnv("JE-15")
    fresh.reset(seed=5)
    fresh.step(Action("submit", {"summary": f"The scheme was run by {scheme}."}))
    named = fresh.score()
    assert named.verification.extra["scheme_user_named"] is False and named.score == 0.0
    for d in w.defects:
        env.step(Action("flag_entry", {"entry_id": d.entry_id, "criteria": d.criteria, "evidence": [],
                                       "rationale": f"Keyed by {scheme}, whose bank account the vendor uses."}))
    assert env.score().verification.extra["scheme_user_named"] is True
