"""No credit without a right final decision (docs/scoring.md, "Credits and the decisions they need").

A property of the whole score, on every task and two seeds: a trajectory whose final decisions on the
planted entries are all wrong or absent scores exactly 0 — outcome, process, judged rationale and
every task bonus (JE-15's scheme user) — whatever its summary, rationales and citations. Played on
real worlds through ``JEEnv`` and scored by the verifier and the reference judge."""

import pytest

from jeval_ray.env import JEEnv
from jeval_ray.scoring.verifier import needed_evidence
from jeval_ray.tasks import TASK_IDS
from support.actions import do, open_evidence

SEEDS = (11, 12)
BUDGET = 5000


def _env(task, seed):
    env = JEEnv(task, step_budget=BUDGET)
    env.reset(seed=seed)
    return env


def _staff(world):
    return [u for u in world.master["users"].to_pylist() if u.get("role") != "System"]


def _top_preparers(world, n=3):
    """The most frequent preparers of the planted entries (JE-15's scheme user is among them)."""
    heads = {r["entry_id"]: r for r in world.ledger.to_pylist() if r["line_no"] == 1}
    preps = [heads[d.entry_id]["preparer"] for d in (*world.defects, *world.decoys) if d.entry_id in heads]
    return sorted(sorted(set(preps)), key=lambda p: -preps.count(p))[:n]


def _everything(world):
    """A summary naming every planted entry, every staff member and every decisive fact."""
    facts = "; ".join(str(f) for r in (*world.defects, *world.decoys) for f in r.facts)
    ids = ", ".join(r.entry_id for r in (*world.defects, *world.decoys))
    staff = ", ".join(f"{u['user_id']} ({u['name']})" for u in _staff(world))
    return f"Exceptions: {ids}. Facts: {facts}. Staff: {staff}."


def _pointed(world):
    """A summary naming only the three most frequent preparers (what the listing gives away)."""
    return f"The scheme was run by {', '.join(_top_preparers(world))}."


def _open_all_needed(env):
    opened = []
    for rec in (*env.world.defects, *env.world.decoys):
        for e in needed_evidence(env.world, rec.entry_id):
            if e not in opened:
                open_evidence(env, e)
                opened.append(e)
    return opened


def _rationale(rec, world):
    names = " ".join(_top_preparers(world, 1))
    return f"Entry {rec.entry_id}: {'; '.join(str(f) for f in rec.facts)}. Keyed by {names}."


def never_flag(env, summary):
    """Never flags; submits a summary naming everything."""
    do(env, "submit", summary=summary)


def flag_unplanted(env, summary):
    """Opens every planted entry's evidence and flags only unplanted entries, citing all it can (20 ids)
    and stating every defect's decisive facts."""
    w = env.world
    opened = _open_all_needed(env)
    planted = {r.entry_id for r in (*w.defects, *w.decoys)}
    crit = w.defects[0].criteria
    facts = " ".join(_rationale(r, w) for r in w.defects)
    for eid in [e for e in w.entry_ids if e not in planted][:5]:
        # flag_entry takes at most 20 evidence ids
        do(env, "flag_entry", entry_id=eid, criteria=crit, evidence=opened[:20], rationale=facts, amount=1.0)
    do(env, "submit", summary=summary)


def invert(env, summary):
    """Reads every planted entry's evidence, clears every defect and flags every decoy, each with a
    rationale stating its decisive facts and citing its needed evidence."""
    w = env.world
    _open_all_needed(env)
    crit = w.defects[0].criteria
    for d in w.defects:
        if d.entry_id in w.entry_ids:
            do(env, "clear_entry", entry_id=d.entry_id, evidence=list(needed_evidence(w, d.entry_id)),
               rationale=_rationale(d, w))
    for d in w.decoys:
        do(env, "flag_entry", entry_id=d.entry_id, criteria=crit, evidence=list(needed_evidence(w, d.entry_id)),
           rationale=_rationale(d, w), amount=1.0)
    do(env, "submit", summary=summary)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("task", TASK_IDS)
def test_trajectories_with_every_planted_decision_wrong_or_absent_score_exactly_zero(task, seed):
    for play in (never_flag, flag_unplanted, invert):
        for summary in (_everything, _pointed):
            env = _env(task, seed)
            assert env.world.defects, task
            play(env, summary(env.world))
            s = env.score()
            v = s.verification
            # the decisions were taken and stand (nothing void): they are wrong, not missing
            assert v.tp == 0 and v.fabrications == 0, (task, seed, play.__name__)
            if play is not never_flag:
                assert v.fp > 0, (task, seed, play.__name__)
            if play is invert:
                assert v.n_dispositions >= len(env.world.decoys) + 1, (task, seed)
            parts = {"outcome": s.outcome, "process": s.process, "rationale": s.rationale, "score": s.score}
            assert parts == {"outcome": 0.0, "process": 0.0, "rationale": 0.0, "score": 0.0}, \
                (task, seed, play.__name__, summary.__name__, parts)
            assert not s.verification.extra.get("scheme_user_named"), (task, seed, play.__name__)
