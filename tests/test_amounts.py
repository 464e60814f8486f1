"""Amounts by a stated rule: only a misstatement's amount is asked and scored; a control deviation has
none; where an approval covers part of an entry, the amount posted and the unapproved excess both earn
full credit (docs/scoring.md, "Amounts")."""

import pytest
from pydantic import ValidationError

from jeval_ray.agents import Action
from jeval_ray.builder.spec import spec
from jeval_ray.env import JEEnv
from jeval_ray.scoring import build_judge_packet, reference_judge, verify
from jeval_ray.tasks import all_tasks, get_task


def _env(task_id, seed):
    env = JEEnv(task_id)
    env.reset(seed=seed)
    return env


def _flag(env, d, **amount):
    """Open the defect's evidence and flag it under its own criteria, with ``amount`` if given."""
    for e in d.required_evidence:
        if e.startswith("master:balances"):
            env.step(Action("get_balances", {}))
        elif e.startswith("master:"):
            env.step(Action("get_master_data", {"table": e.split(":", 1)[1]}))
        elif e.startswith("DOC-"):
            env.step(Action("open_document", {"doc_id": e}))
        else:
            env.step(Action("get_entry", {"entry_id": e}))
    _text, _r, _t, _tr, info = env.step(Action("flag_entry", {
        "entry_id": d.entry_id, "criteria": d.criteria, "evidence": list(d.required_evidence),
        "rationale": f"Exception: {'; '.join(d.facts)}.", **amount}))
    assert not info["is_error"]
    return verify(env.spec, env.world, env.state, env.steps)


def _judged(env):
    return reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief)).dispositions[0].scores


def _defect(task_id, seed, criteria):
    return next(d for d in _env(task_id, seed).world.defects if d.criteria == criteria)


JE16_SEED = 1  # a JE-16 world with OFF_HOURS, CUTOFF, UNBALANCED and COMPLETENESS_GAP defects
JE9_SEED = 3  # a JE-9 world with a post-closing entry approved for part of its amount


@pytest.mark.parametrize("criteria", ["OFF_HOURS", "UNAUTHORISED_USER", "CUTOFF"])
def test_a_control_deviation_scores_the_same_with_amount_0_none_or_the_entry_total(criteria):
    d = _defect("JE-16", JE16_SEED, criteria)
    runs = []
    for amount in ({"amount": 0}, {}, {"amount": d.misstatement}, {"amount": 123456.78}):
        env = _env("JE-16", JE16_SEED)
        v = _flag(env, d, **amount)
        runs.append((v.outcome, v.tp, v.misstatement_error, _judged(env)))
    assert all(r == runs[0] for r in runs), runs
    n = len(_env("JE-16", JE16_SEED).world.defects)
    assert runs[0][0] == pytest.approx(1 / n)  # a full true-positive credit, whatever the amount
    assert runs[0][2] == 1.0  # no misstatement found yet: the world's misstatements count as missed


@pytest.mark.parametrize("criteria", ["UNBALANCED", "COMPLETENESS_GAP"])
def test_a_misstatement_flagged_with_a_wrong_amount_loses_the_amount_credit(criteria):
    d = _defect("JE-16", JE16_SEED, criteria)
    n = len(_env("JE-16", JE16_SEED).world.defects)
    right = _flag(_env("JE-16", JE16_SEED), d, amount=d.misstatement)
    assert right.outcome == pytest.approx(1 / n) and right.misstatement_error == 0.0
    for wrong in ({"amount": 0}, {}, {"amount": d.misstatement * 3}):
        v = _flag(_env("JE-16", JE16_SEED), d, **wrong)
        assert v.outcome == pytest.approx(0.5 / n) and v.misstatement_error == 1.0, wrong
    half = _flag(_env("JE-16", JE16_SEED), d, amount=d.misstatement * 1.5)
    assert half.outcome == pytest.approx(0.75 / n) and half.misstatement_error == pytest.approx(0.5)


def test_je9_post_closing_entry_approved_for_part_earns_full_credit_at_the_whole_and_at_the_excess():
    env = _env("JE-9", JE9_SEED)
    d = next(x for x in env.world.defects if x.also_accepted)
    assert d.defect_type == "post_closing_entry_unauthorised" and d.criteria == "CUTOFF"
    excess = d.also_accepted[0]
    approved = round(d.misstatement - excess, 2)
    assert f"{approved:.2f}" in d.facts  # the request's approved amount is a decisive fact
    n = len(env.world.defects)
    for amount in (d.misstatement, excess, -excess):
        env = _env("JE-9", JE9_SEED)
        v = _flag(env, d, amount=amount)
        assert v.outcome == pytest.approx(1 / n) and v.misstatement_error == 0.0, amount
        assert _judged(env)["quantification"] > 2  # the judge accepts it too
    v = _flag(_env("JE-9", JE9_SEED), d, amount=approved)  # the approved part is what is not misstated
    assert v.outcome < 1 / n and v.misstatement_error > 0


def test_every_criterion_of_every_task_is_classified_and_amounts_are_asked_for_misstatements_only():
    for t in all_tasks():
        for c in t.criteria:
            assert c.amount is None or c.amount.strip(), (t.id, c.code)
        asked = {c.code for c in t.amount_criteria}
        assert asked == ({c.code for c in t.criteria if c.is_misstatement} if t.asks_amount else set())
    je16 = get_task("JE-16")
    assert {c.code for c in je16.amount_criteria} == {"UNBALANCED", "DUPLICATE", "COMPLETENESS_GAP"}
    assert not any(je16.amount_asked(c) for c in ("SELF_APPROVAL", "INVALID_ACCOUNT", "UNAUTHORISED_USER", "OFF_HOURS",
                                                   "CUTOFF"))
    assert {c.code for c in get_task("JE-9").amount_criteria} == {"CUTOFF", "UNSUPPORTED"}
    with pytest.raises(ValidationError, match="none of its criteria is a misstatement"):
        spec("JE-X", "L1", "t", objective="o", defect="d", decoys="d", required_evidence="r", sources=(),
             tools=("flag_entry",), criteria=(("SELF_APPROVAL", "a deviation"),), asks_amount=True)


def test_the_brief_of_a_task_with_deviations_says_which_criteria_want_an_amount():
    brief = _env("JE-16", JE16_SEED).brief
    assert "for UNBALANCED, the residual posted to suspense" in brief
    assert "for COMPLETENESS_GAP, the missing entry's amount" in brief
    assert ("SELF_APPROVAL, INVALID_ACCOUNT, UNAUTHORISED_USER, OFF_HOURS, CUTOFF are control deviations: report each "
            "as an exception without an amount (none is asked or scored)") in brief
    je9 = _env("JE-9", JE9_SEED).brief
    assert "the amount posted or the unapproved excess" in je9 and "control deviation" not in je9.split("Rules")[1]
    assert "`amount`" not in _env("JE-1", 0).brief


def test_the_flag_tool_asks_for_an_amount_only_where_the_task_asks_for_one():
    def flag_schema(task_id):
        return next(s["function"] for s in _env(task_id, 0).tool_schemas if s["function"]["name"] == "flag_entry")

    je16 = flag_schema("JE-16")["parameters"]["properties"]["amount"]["description"]
    assert "UNBALANCED: the residual posted to suspense" in je16
    assert "Leave it out for a control deviation (SELF_APPROVAL, INVALID_ACCOUNT" in je16
    je1 = flag_schema("JE-1")
    assert "amount" not in je1["parameters"]["properties"] and "amount" not in je1["description"]
    # an amount sent anyway is accepted and ignored, never an error
    env = _env("JE-1", 0)
    d = env.world.defects[0]
    with_amount = _flag(env, d, amount=5.0)
    assert with_amount.misstatement_error is None and with_amount.tp == 1
