"""JE-12 (population outliers, selected and vouched): the analytics plan's tests select exactly the
planted entries by the baseline the agent sees, vouching separates defects from decoys, the listing
does not, and the built-in agents discriminate (the careful solver computes its baseline before
any claim)."""

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
#: the answer key is audited over more seeds than the agents play (a world takes ~20 ms)
KEY_SEEDS = range(16)


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


@pytest.fixture(scope="module", params=list(KEY_SEEDS))
def world(request):
    return generate_world("JE-12", request.param)


def _planted(world) -> set[str]:
    return world.defect_ids | {d.entry_id for d in world.decoys}


def _support(world, rec) -> tuple[float, str]:
    """(amount, GL account) shown on a planted entry's support document."""
    doc = next(world.document(e) for e in (getattr(rec, "required_evidence", None) or rec.clearing_evidence)
               if e.startswith("DOC-") and world.document(e).title != je12.PLAN_TITLE)
    amount = re.search(r"(?:Invoice total|Amount accrued): USD ([\d,]+\.\d\d)", doc.body).group(1)
    return float(amount.replace(",", "")), re.search(r"GL account:? (\d{4})", doc.body).group(1)


def test_the_plan_tests_select_exactly_the_planted_entries(world):
    view = _agent_view(world)
    assert world.defects and world.decoys
    hits = {eid for eid, (z, single, _n) in view.items() if _hit(z, single)}
    assert hits == _planted(world)  # the base population never trips either test
    for rec in (*world.defects, *world.decoys):
        z, single, _n = view[rec.entry_id]
        kind = rec.defect_type if hasattr(rec, "defect_type") else rec.decoy_type
        if kind in ("keying_error", "outlier_vouched_amount"):
            assert z >= 7.4
        else:
            assert kind in ("posted_to_wrong_account", "outlier_vouched_flow")
            assert single and 3.7 < z < je12.AMOUNT_Z


def test_vouching_decides_defects_from_decoys(world):
    heads = {r["entry_id"]: r for r in world.ledger.to_pylist() if r["line_no"] == 1}
    plan = next(d.doc_id for d in world.documents if d.title == je12.PLAN_TITLE)
    for d in world.defects:
        h = heads[d.entry_id]
        amount, account = _support(world, d)
        assert d.criteria == "OUTLIER" and {d.entry_id, plan} <= set(d.required_evidence)
        if d.defect_type == "keying_error":
            assert account == h["account"] and amount != pytest.approx(h["debit"])
            # one extra digit typed into the dollars
            assert len(str(int(h["debit"]))) == len(str(int(amount))) + 1
            assert d.misstatement == pytest.approx(h["debit"] - amount)
            assert {f"{amount:.2f}", f"{h['debit']:.2f}"} <= set(d.facts)
        else:
            assert account != h["account"] and amount == pytest.approx(h["debit"])
            assert {account, h["account"]} <= set(d.facts)
    for c in world.decoys:
        h = heads[c.entry_id]
        assert _support(world, c) == (pytest.approx(h["debit"]), h["account"])
        assert plan in c.clearing_evidence and f"{h['debit']:.2f}" in c.facts
    # the pack holds more support than the selection, so its documents do not list the selection
    support = [d for d in world.documents if d.title.startswith(("Vendor invoice", "Accrual workpaper"))]
    assert len(support) >= len(_planted(world)) + 3


def test_defects_and_decoys_share_one_listing_surface():
    """Defects and decoys are selected by the same tests at the same z-scores, from the same
    templates: the kind (amount or flow) does not predict the label and z does not separate them
    (tests/test_leak_probe.py trains a classifier on the whole listing)."""
    rows = []  # (is defect, flow kind, robust z, manual)
    for seed in range(100, 125):
        w = generate_world("JE-12", seed)
        view = _agent_view(w)
        heads = {r["entry_id"]: r for r in w.ledger.to_pylist() if r["line_no"] == 1}
        for rec in (*w.defects, *w.decoys):
            kind = getattr(rec, "defect_type", None) or rec.decoy_type
            flow = kind in ("posted_to_wrong_account", "outlier_vouched_flow")
            assert heads[rec.entry_id]["document_type"] in ("KR", "SA")  # vendor invoices and accruals
            rows.append((rec.entry_id in w.defect_ids, flow, view[rec.entry_id][0],
                         heads[rec.entry_id]["source"] == "manual"))

    def mean(xs):
        return sum(xs) / len(xs)

    share = {bad: mean([r[1] for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(share[True] - share[False]) < 0.2, share  # about 3.5 standard errors at this sample size
    for flow, tol in ((False, 1.0), (True, 0.3)):
        z = {bad: mean([r[2] for r in rows if r[0] == bad and r[1] == flow]) for bad in (True, False)}
        assert abs(z[True] - z[False]) < tol, (flow, z)
    manual = {bad: mean([r[3] for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(manual[True] - manual[False]) < 0.15, manual


def test_builder_rule_matches_planted_entries_over_many_seeds():
    spec = get_task("JE-12")
    for seed in range(20):
        for knobs in ({}, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0}):
            b = WorldBuilder(spec, seed, spec.resolve_knobs(knobs))
            je12.plant(b)
            planted = {d[0] for d in b.defects} | {d[0] for d in b.decoys}
            assert set(np.flatnonzero(je12.rule_hits(b)).tolist()) == planted, (seed, knobs)


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
        assert c.score.rationale >= 0.95
        n = results[("naive", s)].score.verification
        assert n.fn == 0 and n.fp == len(generate_world("JE-12", s).decoys)  # flags every selected entry
    mean = {a: statistics.fmean(results[(a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean


def test_careful_without_compute_stats_still_finds_the_outliers():
    o = play("JE-12", "careful", 1, tools_withheld=("compute_stats",))
    assert o.score.outcome >= 0.95
    assert o.score.verification.baseline_before_claim is False  # the withheld condition costs process
