"""Process credit (docs/scoring.md, "Process: how they combine"), on every task with real worlds and
real episodes: a decoy flagged after its clearing document was read is a misread and costs a whole
entry's credit; a right decision earns the share of its needed evidence it cites, and nothing without
its decisive document; process is never negative."""

import pytest

from jeval_ray.env import JEEnv
from jeval_ray.scoring.verifier import decisive_evidence, needed_evidence
from jeval_ray.tasks import TASK_IDS
from support.actions import do, open_evidence

SEED = 7


_do = do
_open = open_evidence


def _env(task):
    env = JEEnv(task)
    env.reset(seed=SEED)
    return env


def _process(env):
    return env.score().process


def _flag_right(env, defect):
    need = needed_evidence(env.world, defect.entry_id)
    for e in need:
        _open(env, e)
    _do(env, "flag_entry", entry_id=defect.entry_id, criteria=defect.criteria, evidence=list(need),
        rationale=f"Exception: {'; '.join(map(str, defect.facts))}.")


def _flag_decoy(env, decoy, crit, read: bool):
    """Flag a decoy, citing and having opened its clearing evidence (read) or neither."""
    need = list(needed_evidence(env.world, decoy.entry_id)) if read else []
    for e in need:
        _open(env, e)
    _do(env, "flag_entry", entry_id=decoy.entry_id, criteria=crit, evidence=need, rationale="Looks wrong.")


@pytest.mark.parametrize("task", TASK_IDS)
def test_a_decoy_flagged_after_reading_its_clearing_document_scores_lower_process_than_unread(task):
    scores = {}
    for read in (False, True):
        env = _env(task)
        for d in env.world.defects:
            _flag_right(env, d)
        # the same tool calls in both runs, so redundancy and step counts do not decide
        decoy = env.world.decoys[0]
        _flag_decoy(env, decoy, env.world.defects[0].criteria, read)
        scores[read] = _process(env)
        assert scores[read] >= 0.0
    assert scores[False] > 0 and scores[True] < scores[False], (task, scores)


@pytest.mark.parametrize("task", TASK_IDS)
def test_a_right_decision_citing_part_of_its_evidence_earns_that_share_and_nothing_without_the_decisive_one(task):
    env = _env(task)
    w = env.world
    # an entry needing two ids or more, preferring one whose needed ids are not all decisive
    recs = [r for r in (*w.defects, *w.decoys) if len(needed_evidence(w, r.entry_id)) >= 2]
    recs.sort(key=lambda r: len(decisive_evidence(w, r.entry_id)) == len(needed_evidence(w, r.entry_id)))
    if not recs:  # JE-3, JE-4: every planted entry needs one master table, so there is no part to cite
        pytest.skip(f"{task}: every planted entry needs one id; the share rule is tested on the other tasks")
    rec = recs[0]
    need = list(needed_evidence(w, rec.entry_id))
    decisive = decisive_evidence(w, rec.entry_id)
    part = [decisive[0], *[e for e in need if e != decisive[0]]][: len(need) // 2]
    without = [e for e in need if e not in decisive]
    for e in need:
        _open(env, e)
    is_defect = rec in env.world.defects

    def decide(evidence):
        if is_defect:
            _do(env, "flag_entry", entry_id=rec.entry_id, criteria=rec.criteria, evidence=evidence, rationale="x")
        else:
            _do(env, "clear_entry", entry_id=rec.entry_id, evidence=evidence, rationale="x")
        return _process(env)

    # the same calls before each decision: only the evidence cited differs (redundancy is equal)
    full = decide(need)
    assert full > 0
    assert decide(part) == pytest.approx(full * len(part) / len(need)), task
    if without:  # ids that bear on the entry but decide nothing: citing only them earns nothing
        assert decide(without) == 0.0, task


@pytest.mark.parametrize("task", TASK_IDS)
def test_process_is_never_negative_however_many_misreads(task):
    env = _env(task)
    crit = env.world.defects[0].criteria
    for decoy in env.world.decoys:
        _flag_decoy(env, decoy, crit, read=True)
    v = env.score()
    assert v.process == 0.0 and v.score >= 0.0
    _flag_right(env, env.world.defects[0])
    assert env.score().process == 0.0  # one right decision does not outweigh several misreads
