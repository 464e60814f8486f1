"""The verifier's metrics and the reference judge pinned on hand-built trajectories (JE-1, seed 0).

The trajectories use the world's own key records (defects' required evidence, decoys' clearing
evidence and decisive facts), so they hold whatever documents the task plants.
"""

import pytest

from jeval_ray.env import JEEnv
from jeval_ray.scoring import build_judge_packet, combine, reference_judge, verify
from jeval_ray.scoring.judge import REFERENCE_JUDGE_VERSION, fact_stated
from support.actions import do, open_evidence


@pytest.fixture
def env():
    e = JEEnv("JE-1", {"n_defects": 4, "n_decoys": 2})
    e.reset(seed=0)
    return e


_do = do
_open = open_evidence


def _noise_doc(env):
    needed = {e for d in env.world.defects for e in d.required_evidence}
    needed |= {e for d in env.world.decoys for e in d.clearing_evidence}
    return next(d.doc_id for d in env.world.documents if d.doc_id not in needed and d.doc_type != "policy")


def _v(env):
    return verify(env.spec, env.world, env.state, env.steps)


def _flag_properly(env, d, rationale=None):
    for e in d.required_evidence:
        _open(env, e)
    _do(env, "flag_entry", entry_id=d.entry_id, criteria=d.criteria, evidence=list(d.required_evidence),
        rationale=rationale or f"Exception: {'; '.join(d.facts)}.")


def _clear_properly(env, d):
    for e in d.clearing_evidence:
        _open(env, e)
    _do(env, "clear_entry", entry_id=d.entry_id, evidence=list(d.clearing_evidence),
        rationale=f"Supported: {'; '.join(d.facts)}.")


def test_a_perfect_audit_scores_one_on_every_part(env):
    for d in env.world.defects:
        _flag_properly(env, d)
    for d in env.world.decoys:
        _clear_properly(env, d)
    v = _v(env)
    assert (v.tp, v.fp, v.fn) == (4, 0, 0)
    assert v.precision == v.recall == v.f2 == v.criteria_accuracy == 1.0
    assert v.tn == env.world.n_entries - 4
    assert v.outcome == 1.0 and v.fabrications == 0
    assert v.evidence_coverage == 1.0 and v.evidence_precision == 1.0
    assert v.premature_disposition == 0
    assert v.process == pytest.approx(1 / (1 + v.redundant_calls / 20))
    j = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    assert j.rationale_score == 1.0 and j.judge_version == REFERENCE_JUDGE_VERSION


def test_outcome_is_the_share_of_reported_or_real_exceptions_got_right(env):
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[], rationale="x")
    v = _v(env)
    assert (v.tp, v.fn) == (1, 3) and v.recall == 0.25 and v.precision == 1.0
    assert v.f2 == pytest.approx(5 * 1 * 0.25 / (4 * 1 + 0.25))
    assert v.outcome == pytest.approx(1 / 4)  # TP / (TP + FP + FN)
    decoy = env.world.decoys[0]
    _do(env, "flag_entry", entry_id=decoy.entry_id, criteria=d0.criteria, evidence=[], rationale="x")
    assert _v(env).outcome == pytest.approx(1 / 5)  # a false exception costs what a miss costs


def test_flagging_every_defect_and_every_decoy_scores_half_at_equal_numbers():
    env = JEEnv("JE-1", {"n_defects": 3, "n_decoys": 3})
    env.reset(seed=1)
    for d in env.world.defects:
        _do(env, "flag_entry", entry_id=d.entry_id, criteria=d.criteria, evidence=[], rationale="x")
    for d in env.world.decoys:
        _do(env, "flag_entry", entry_id=d.entry_id, criteria=env.world.defects[0].criteria, evidence=[], rationale="x")
    v = _v(env)
    assert v.f2 == pytest.approx(5 * 0.5 / 3)  # F2 would have given 0.83
    assert v.outcome == pytest.approx(0.5)


def test_a_wrong_criteria_code_earns_half_a_true_positive(env):
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[], rationale="x")
    env.state.dispositions[-1].criteria = "OTHER"  # single-criterion task: edit the state to test a wrong code
    v = _v(env)
    assert v.criteria_accuracy == 0.0 and v.outcome == pytest.approx(0.5 / 4)


def test_citing_an_unopened_document_voids_the_disposition_and_counts_as_fabrication(env):
    d0, d1 = env.world.defects[:2]
    doc = _noise_doc(env)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[doc], rationale="x")  # never opened
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria=d1.criteria, evidence=[doc], rationale="x")  # opened later
    _do(env, "open_document", doc_id=doc)
    v = _v(env)
    assert v.fabrications == 2 and v.tp == 0 and v.fn == 4
    assert v.evidence_precision == 0.0


def test_last_disposition_wins(env):
    d0 = env.world.defects[0]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[], rationale="x")
    _do(env, "clear_entry", entry_id=d0.entry_id, evidence=[], rationale="on reflection fine")
    v = _v(env)
    assert v.tp == 0 and v.n_flags == 0 and v.n_dispositions == 1


def test_evidence_coverage_counts_required_ids_opened(env):
    required = sorted({e for d in env.world.defects for e in d.required_evidence})
    _open(env, required[0])
    _open(env, required[1])
    assert _v(env).evidence_coverage == pytest.approx(2 / len(required))


def test_evidence_precision_counts_only_evidence_that_bears_on_the_entry(env):
    d0 = env.world.defects[0]
    unrelated = _noise_doc(env)
    for e in d0.required_evidence:
        _open(env, e)
    _open(env, unrelated)
    cited = [*d0.required_evidence, unrelated]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=cited, rationale="x")
    v = _v(env)
    assert v.evidence_precision == pytest.approx(len(d0.required_evidence) / len(cited))


def test_process_credit_comes_only_from_right_final_dispositions(env):
    # clearing a defect and flagging a decoy, however well documented, earn no process credit
    d0, decoy = env.world.defects[0], env.world.decoys[0]
    for e in (*d0.required_evidence, *decoy.clearing_evidence):
        _open(env, e)
    _do(env, "clear_entry", entry_id=d0.entry_id, evidence=list(d0.required_evidence), rationale="fine")
    _do(env, "flag_entry", entry_id=decoy.entry_id, criteria=d0.criteria, evidence=list(decoy.clearing_evidence),
        rationale="x")
    assert _v(env).process == 0.0
    # one right, well-evidenced disposition of six planted entries would earn a sixth, but the decoy
    # flagged after its clearing documents were read is a misread and takes that sixth away
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=list(d0.required_evidence), rationale="x")
    assert _v(env).process == 0.0
    # clearing the decoy on its evidence turns the misread into a second right decision: two sixths
    _do(env, "clear_entry", entry_id=decoy.entry_id, evidence=list(decoy.clearing_evidence), rationale="x")
    v = _v(env)
    assert v.process == pytest.approx((2 / 6) / (1 + v.redundant_calls / 20))


def test_doing_nothing_or_clearing_ordinary_entries_earns_nothing(env):
    planted = {d.entry_id for d in env.world.defects} | {d.entry_id for d in env.world.decoys}
    ordinary = [e for e in env.world.entry_ids if e not in planted][:5]
    for e in ordinary:
        _do(env, "get_entry", entry_id=e)
        _do(env, "clear_entry", entry_id=e, evidence=[e], rationale=f"Entry {e} agreed to support, 1,234.56 on 2025-03-31.")
    _do(env, "submit", summary="done")
    score = env.score()
    assert score.outcome == 0.0 and score.process == 0.0 and score.rationale == 0.0 and score.score == 0.0


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
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[], rationale="plain")
    assert _v(env).baseline_before_claim is None
    env.state.stats_steps.append(5)  # compute_stats is not a JE-1 tool; record a baseline at step 5
    env.state.step_idx = 3
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria=d1.criteria, evidence=[], rationale="an unusual amount")
    assert _v(env).baseline_before_claim is False
    env.state.stats_steps[:] = [1]
    assert _v(env).baseline_before_claim is True


def test_statistics_that_found_the_population_too_small_are_no_baseline():
    env = JEEnv("JE-12")
    env.reset(seed=0)
    _do(env, "compute_stats", filters=[{"column": "entry_id", "op": "eq", "value": "nope"}])
    assert env.state.stats_steps == []
    _do(env, "compute_stats")
    assert env.state.stats_steps == [1]


def test_premature_disposition_counts_dispositions_before_needed_evidence(env):
    d0, d1 = env.world.defects[:2]
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[], rationale="x")  # nothing opened
    _flag_properly(env, d1)
    v = _v(env)
    assert v.premature_disposition == 1 and v.tp == 2


def test_combined_score_scales_process_and_rationale_by_the_outcome(env):
    w = env.spec.weights
    assert combine(w, 1.0, 0.5, 0.0) == pytest.approx(w.outcome + w.process * 0.5)
    assert combine(w, 0.5, 1.0, 1.0) == pytest.approx(0.5 * w.outcome + 0.5 * (w.process + w.rationale))
    assert combine(w, 0.0, 1.0, 1.0) == 0.0


def test_facts_are_stated_as_amounts_dates_and_words():
    assert fact_stated("5000.00", "the limit is USD 5,000 exactly")
    assert fact_stated("4873.20", "amount 4,873.20 is close")
    assert not fact_stated("4873.20", "amount 4,873.21")
    assert fact_stated("2025-06-06", "closed on 2025-06-06.")
    assert not fact_stated("2025-06-06", "closed on 2025-06-16")
    assert fact_stated("GSILVA", "approved by gsilva herself")
    assert not fact_stated("DOC-0012", "see DOC-00123")


def test_reference_judge_reads_facts_not_length_figures_or_the_entry_id(env):
    d0, d1 = env.world.defects[:2]
    for d in (d0, d1):
        for e in d.required_evidence:
            _open(env, e)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=list(d0.required_evidence),
        rationale=f"Exception: {'; '.join(d0.facts)}.")
    filler = " ".join(f"{x}.{x:02d}" for x in range(10, 60))
    _do(env, "flag_entry", entry_id=d1.entry_id, criteria=d1.criteria, evidence=list(d1.required_evidence),
        rationale=f"Entry {d1.entry_id} is an exception after careful review. Figures {filler}. " * 8)
    j = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    by = {d.entry_id: d for d in j.dispositions}
    factual, padded = sum(by[d0.entry_id].scores.values()), sum(by[d1.entry_id].scores.values())
    assert factual == 20
    assert padded <= 8  # the right criteria and evidence, but no decisive fact: length and figures earn nothing


def test_reference_judge_zeroes_fabricated_and_wrong_dispositions_and_judges_each_entry_once(env):
    d0, d1 = env.world.defects[:2]
    decoy = env.world.decoys[0]
    doc = _noise_doc(env)
    _do(env, "flag_entry", entry_id=d0.entry_id, criteria=d0.criteria, evidence=[doc], rationale="made up")
    _do(env, "open_document", doc_id=doc)
    _do(env, "flag_entry", entry_id=decoy.entry_id, criteria=d0.criteria, evidence=[doc], rationale="wrong")
    _flag_properly(env, d1, rationale="first")
    _flag_properly(env, d1)  # judged once: its final disposition
    j = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    by = {d.entry_id: d for d in j.dispositions}
    assert len(j.dispositions) == 3
    assert by[d0.entry_id].dealbreaker == "fabricated_evidence" and sum(by[d0.entry_id].scores.values()) == 0
    assert sum(by[decoy.entry_id].scores.values()) == 0
    assert sum(by[d1.entry_id].scores.values()) == 20
    assert j.rationale_score == pytest.approx(1 / 6)  # one of six planted entries, judged in full


def test_a_judgment_record_writes_the_same_row_and_aggregates_like_the_model(env):
    import json

    from jeval_ray.records import EpisodeKeys, judgment_rows
    from jeval_ray.scoring import Judgment, aggregate_judgments

    d1 = env.world.defects[1]
    _flag_properly(env, d1)
    ok = reference_judge(build_judge_packet(env.spec, env.world, env.state, env.brief))
    failed = Judgment(judge="llm", status="failed", error="timed out")
    keys = EpisodeKeys("run", "ep", 1, "JE-1", "m", 0, "full")
    records = [ok.as_record(), failed.as_record()]
    assert judgment_rows(keys, records) == judgment_rows(keys, [ok, failed])
    assert aggregate_judgments(records) == aggregate_judgments([ok, failed]) == {
        "rationale": ok.rationale_score, "judge_spread": 0.0, "judges_ok": 1, "judges_failed": 1,
        "judges_unscored": 0}
    assert json.loads(records[0]["item_scores"])[0]["entry_id"] == d1.entry_id
    assert records[0]["judge_version"] == REFERENCE_JUDGE_VERSION
    assert records[1]["status"] == "failed" and records[1]["error"] == "timed out"
