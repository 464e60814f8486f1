"""The verifier's metrics pinned on hand-built trajectories (JE-1, seed 0, known defect ledger)."""

import pytest

from jeval_ray.agents import Action
from jeval_ray.env import JEEnv
from jeval_ray.scoring import build_judge_packet, combine, reference_judge, verify


@pytest.fixture
def env():
    e = JEEnv("JE-1", {"n_defects": 4, "n_decoys": 2})
    e.reset(seed=0)
    return e


def _policy(env):
    return next(d.doc_id for d in env.world.documents if "balancing and rounding" in d.title)


def _noise_doc(env):
    return next(d.doc_id for d in env.world.documents if "balancing" not in d.title)


def _do(env, tool, **args):
    env.step(Action(tool, args))


def _v(env):
    return verify(env.spec, env.world, env.state, env.steps)


def test_perfect_flags_give_precision_recall_f2_one(env):
    pol = _policy(env)
    _do(env, "open_document", doc_id=pol)
    for d in env.world.defects:
        _do(env, "get_entry", entry_id=d.entry_id)
        _do(env, "flag_entry", entry_id=d.entry_id, criteria="UNBALANCED", evidence=[d.entry_id, pol], rationale="x")
    v = _v(env)
    assert (v.tp, v.fp, v.fn) == (4, 0, 0)
    assert v.precision == v.recall == v.f2 == v.criteria_accuracy == 1.0
    assert v.tn == env.world.n_entries - 4
    assert v.outcome == 1.0 and v.fabrications == 0
    assert v.evidence_coverage == 1.0 and v.evidence_precision == 1.0
    assert v.premature_disposition == 0 and v.redundant_calls == 0
    assert v.steps_to_first_flag == 2


def test_undispositioned_defects_are_implicit_approvals(env):
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[], rationale="x")
    v = _v(env)
    assert (v.tp, v.fn) == (1, 3)
    assert v.recall == 0.25 and v.precision == 1.0
    assert v.f2 == pytest.approx(5 * 1 * 0.25 / (4 * 1 + 0.25))
    assert v.outcome == pytest.approx(0.8 * v.f2 + 0.2 * 1.0)


def test_citing_an_unopened_document_voids_the_disposition_and_counts_as_fabrication(env):
    d0, d1 = env.world.defects[:2]
    pol = _policy(env)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[pol], rationale="x")  # never opened
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria="UNBALANCED", evidence=[pol], rationale="x")  # opened later
    _do(env, "open_document", doc_id=pol)
    v = _v(env)
    assert v.fabrications == 2 and v.tp == 0 and v.fn == 4
    assert v.evidence_precision == 0.0


def test_flagging_a_decoy_is_a_false_positive_and_wrong_criteria_lowers_criteria_accuracy():
    env = JEEnv("JE-1", {"n_defects": 4, "n_decoys": 2})
    env.reset(seed=0)
    env.spec.criteria_codes  # single-criterion task: use an episode state edit to test a wrong code
    decoy = env.world.decoys[0].entry_id
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=decoy, criteria="UNBALANCED", evidence=[], rationale="x")
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[], rationale="x")
    env.state.dispositions[-1].criteria = "OTHER"
    v = _v(env)
    assert (v.tp, v.fp) == (1, 1) and v.precision == 0.5
    assert v.criteria_accuracy == 0.0


def test_last_disposition_wins(env):
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[], rationale="x")
    _do(env, "clear_entry", entry_id=d0.entry_id, evidence=[], rationale="on reflection fine")
    v = _v(env)
    assert v.tp == 0 and v.n_flags == 0 and v.n_dispositions == 1


def test_evidence_coverage_counts_required_ids_opened(env):
    # required = every defect's entry + the policy: 4 entries + 1 policy = 5 ids
    d0 = env.world.defects[0]
    _do(env, "open_document", doc_id=_policy(env))
    _do(env, "get_entry", entry_id=d0.entry_id)
    assert _v(env).evidence_coverage == pytest.approx(2 / 5)


def test_evidence_precision_is_cited_and_opened_over_cited(env):
    d0 = env.world.defects[0]
    pol, other = _policy(env), _noise_doc(env)
    _do(env, "open_document", doc_id=pol)
    _do(env, "clear_entry", entry_id=d0.entry_id, evidence=[pol, other], rationale="x")
    assert _v(env).evidence_precision == 0.5


def test_redundant_calls_count_repeats_with_the_same_arguments(env):
    _do(env, "list_documents", limit=5)
    _do(env, "list_documents", limit=5)
    _do(env, "list_documents", limit=6)
    _do(env, "get_master_data", table="users")
    _do(env, "get_master_data", table="users")
    _do(env, "get_master_data", table="users")
    assert _v(env).redundant_calls == 3


def test_steps_to_first_flag_is_none_without_flags(env):
    _do(env, "list_documents")
    assert _v(env).steps_to_first_flag is None


def test_baseline_before_claim_needs_stats_before_the_first_unusual_claim():
    env = JEEnv("JE-1")
    env.reset(seed=0)
    d0, d1 = env.world.defects[:2]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[], rationale="plain")
    assert _v(env).baseline_before_claim is None
    env.state.stats_steps.append(5)  # compute_stats is not a JE-1 tool; record a baseline at step 5
    env.state.step_idx = 3
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria="UNBALANCED", evidence=[], rationale="an unusual amount")
    assert _v(env).baseline_before_claim is False
    env.state.stats_steps[:] = [1]
    assert _v(env).baseline_before_claim is True


def test_premature_disposition_counts_dispositions_before_required_evidence(env):
    d0, d1 = env.world.defects[:2]
    pol = _policy(env)
    _do(env, "open_document", doc_id=pol)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[pol], rationale="x")  # entry not opened
    _do(env, "get_entry", entry_id=d1.entry_id)
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria="UNBALANCED", evidence=[pol, d1.entry_id], rationale="x")
    v = _v(env)
    assert v.premature_disposition == 1 and v.tp == 2


def test_combined_score_uses_the_task_weights(env):
    w = env.spec.weights
    assert combine(w, 1.0, 0.5, 0.0) == pytest.approx(0.7 + 0.1)


def test_reference_judge_zeroes_fabricated_dispositions_and_rewards_specific_ones(env):
    d0, d1 = env.world.defects[:2]
    pol = _policy(env)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria="UNBALANCED", evidence=[pol], rationale="made up")
    _do(env, "open_document", doc_id=pol)
    _do(env, "get_entry", entry_id=d1.entry_id)
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria="UNBALANCED", evidence=[d1.entry_id, pol],
        rationale=f"Entry {d1.entry_id}: debits 100.00 vs credits 150.00 exceed the 1.00 tolerance in {pol}.")
    j = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    by = {d.entry_id: d for d in j.dispositions}
    assert by[d0.entry_id].dealbreaker == "fabricated_evidence" and sum(by[d0.entry_id].scores.values()) == 0
    assert sum(by[d1.entry_id].scores.values()) == 20
    assert j.rationale_score == pytest.approx(0.5)


def test_a_judgment_record_writes_the_same_row_and_aggregates_like_the_model(env):
    import json

    from jeval_ray.records import EpisodeKeys, judgment_rows
    from jeval_ray.scoring import Judgment, aggregate_judgments

    d1 = env.world.defects[1]
    _do(env, "get_entry", entry_id=d1.entry_id)
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria="UNBALANCED", evidence=[d1.entry_id], rationale="unbalanced")
    ok = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    failed = Judgment(judge="llm", status="failed", error="timed out")
    keys = EpisodeKeys("run", "ep", 1, "JE-1", "m", 0, "full")
    records = [ok.as_record(), failed.as_record()]
    assert judgment_rows(keys, records) == judgment_rows(keys, [ok, failed])
    assert aggregate_judgments(records) == aggregate_judgments([ok, failed]) == {
        "rationale": ok.rationale_score, "judge_spread": 0.0, "judges_ok": 1, "judges_failed": 1,
        "judges_unscored": 0}
    assert json.loads(records[0]["item_scores"])[0]["entry_id"] == d1.entry_id
    assert records[1]["status"] == "failed" and records[1]["error"] == "timed out"
