"""JE-12 (population outliers): the planted world obeys the analytics plan's tests, the base is
clean, decoys are typical of their account by the baseline the agent sees, and the built-in
agents discriminate (the careful solver computes its baseline before any claim)."""

from __future__ import annotations

import re
import statistics
from collections import Counter

import numpy as np
import pytest

from jeval_ray.env._tools import ComputeStatsArgs, EpisodeState, compute_stats
from jeval_ray.episode import play
from jeval_ray.tasks import get_task, je12
from jeval_ray.world import WorldBuilder, generate_world

SEEDS = range(5)


def _agent_view(world) -> dict[str, tuple[float, bool, int]]:
    """Entry id -> (robust z, flow single, preparer's entry count), from what compute_stats shows."""
    st = EpisodeState(world, ("OUTLIER",))
    groups = compute_stats(st, ComputeStatsArgs(group_by="account", top_z=0))["groups"]
    rows = [r for r in world.ledger.to_pylist() if r["line_no"] == 1]
    users = Counter(r["preparer"] for r in rows)
    pairs = Counter((r["preparer"], r["account"]) for r in rows)
    out = {}
    for r in rows:
        g = groups[r["account"]]
        z = (r["debit"] - g["median"]) / (1.4826 * g["mad"]) if g["n"] >= je12.MIN_POP and g.get("mad") else 0.0
        single = pairs[(r["preparer"], r["account"])] == 1 and users[r["preparer"]] - 1 >= je12.MIN_USER
        out[r["entry_id"]] = (z, single, users[r["preparer"]])
    return out


def _hit(z: float, single: bool) -> bool:
    return z > je12.AMOUNT_Z or (single and z > je12.FLOW_Z)


@pytest.fixture(scope="module", params=list(SEEDS))
def world(request):
    return generate_world("JE-12", request.param)


def test_defects_and_only_defects_fail_the_plan_tests(world):
    view = _agent_view(world)
    assert world.defects and world.decoys
    hits = {eid for eid, (z, single, _n) in view.items() if _hit(z, single)}
    assert hits == world.defect_ids  # the base population never trips either test
    for d in world.defects:
        z, single, _n = view[d.entry_id]
        assert d.criteria == "OUTLIER" and d.entry_id in d.required_evidence
        if d.defect_type == "amount_outlier":
            assert z >= 7.9
        else:
            assert d.defect_type == "user_account_flow" and single and 3.7 < z < je12.AMOUNT_Z


def test_decoys_are_large_but_typical_of_their_account(world):
    view = _agent_view(world)
    st = EpisodeState(world, ("OUTLIER",))
    ledger_wide = compute_stats(st, ComputeStatsArgs(top_z=0))["population"]
    for c in world.decoys:
        z, single, _n = view[c.entry_id]
        assert 1.4 < z < je12.AMOUNT_Z and not single
        amount = next(r["debit"] for r in world.ledger.to_pylist() if r["entry_id"] == c.entry_id and r["line_no"] == 1)
        assert amount > ledger_wide["median"]  # large against the ledger as a whole
        plan = next(d.doc_id for d in world.documents if d.title == je12.PLAN_TITLE)
        assert set(c.clearing_evidence) == {c.entry_id, plan}


def test_builder_rule_matches_planted_defects_over_many_seeds():
    spec = get_task("JE-12")
    for seed in range(20):
        for knobs in ({}, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}):
            b = WorldBuilder(spec, seed, spec.resolve_knobs(knobs))
            je12.plant(b)
            assert set(np.flatnonzero(je12.rule_hits(b)).tolist()) == {d[0] for d in b.defects}, (seed, knobs)


def test_plan_document_states_the_method(world):
    plan = next(d for d in world.documents if d.title == je12.PLAN_TITLE)
    assert "1.4826" in plan.body and "median absolute deviation" in plan.body
    assert je12._thresholds(plan.body) == {"amount_z": je12.AMOUNT_Z, "min_pop": je12.MIN_POP,
                                           "min_user": je12.MIN_USER, "flow_z": je12.FLOW_Z}
    for d in world.documents:
        assert not re.search(r"decoy|defect|planted|red flag|exception", d.title + d.body, re.I)


@pytest.fixture(scope="module")
def results():
    return {(a, s): play("JE-12", a, s) for a in ("random", "naive", "careful") for s in SEEDS}


def test_careful_solves_every_seed_with_a_baseline_first(results):
    for s in SEEDS:
        c = results[("careful", s)]
        v = c.score.verification
        assert c.score.outcome >= 0.95, (s, v)
        assert c.termination == "submitted" and v.fabrications == 0 and v.premature_disposition == 0
        assert v.baseline_before_claim is True
        flags = [d for d in c.dispositions if d["decision"] == "flag"]
        assert all("median" in d["rationale"] and "MAD" in d["rationale"] for d in flags)
        assert results[("naive", s)].score.outcome < 0.9
    mean = {a: statistics.fmean(results[(a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"], mean


def test_careful_without_compute_stats_still_finds_the_outliers():
    o = play("JE-12", "careful", 1, tools_withheld=("compute_stats",))
    assert o.score.outcome >= 0.95
    assert o.score.verification.baseline_before_claim is False  # the withheld condition costs process
