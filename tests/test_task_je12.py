"""JE-12 (population outliers, selected and vouched): the analytics plan's tests select every planted
entry (and genuine outliers of the books) by the baseline the agent sees, the listing does not
separate defects from decoys, and the careful solver computes its baseline before any claim (what
every task promises, the built-in agents included, is tests/test_task_contract.py). What vouching shows is audited in tests/test_key_audit_je12.py."""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import pyarrow.compute as pc

from jeval_ray.tools._tools import ComputeStatsArgs, EpisodeState, Filter, compute_stats
from jeval_ray.tasks import get_task, je12
from jeval_ray.world import WorldBuilder, generate_world
from support.worlds import played, world as cached_world

SEEDS = range(5)
#: worlds checked one by one (the key itself is audited over 20 seeds in tests/test_key_audit_je12.py)
KEY_SEEDS = range(8)


def _agent_view(world) -> dict[str, tuple[float, bool, int]]:
    """Entry id -> (robust z, flow single, preparer's entry count) of the manual entries, from what
    compute_stats shows."""
    st = EpisodeState(world, ("OUTLIER",))
    manual = Filter(column="source", op="eq", value="manual")
    groups = compute_stats(st, ComputeStatsArgs(filters=[manual], group_by="account", top_z=0))["groups"]
    first = world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1))
    rows = [r for r in first.to_pylist() if r["source"] == "manual"]
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
    return cached_world("JE-12", request.param)


def _planted(world) -> set[str]:
    return world.defect_ids | {d.entry_id for d in world.decoys}


def test_the_plan_tests_select_the_planted_entries_and_genuine_ones(world):
    view = _agent_view(world)
    assert world.defects and world.decoys
    hits = {eid for eid, (z, single, _n) in view.items() if _hit(z, single)}
    assert _planted(world) <= hits
    assert len(hits - _planted(world)) >= 3  # the books' genuine outliers are selected too
    for rec in (*world.defects, *world.decoys):
        z, _single, _n = view[rec.entry_id]
        assert z > je12.AMOUNT_Z
    # every entry selected has its source document in the pack, and so do a few ordinary ones
    heads = {r["entry_id"]: r for r in world.ledger.filter(pc.equal(world.ledger.column("line_no"), 1)).to_pylist()}
    titles = " ".join(d.title for d in world.documents)
    assert all(heads[e]["reference"] in titles for e in hits)
    support = [d for d in world.documents if re.search(r"\b[A-Z]{2}-\d{7}\b", d.title)]
    assert len(support) >= len(hits) + 3


def test_defects_and_decoys_share_one_listing_surface():
    """Defects and decoys are drawn from one pool with their slips before their labels: document type,
    robust z and the size of the slip do not predict the label (tests/test_adversarial.py trains a
    classifier on the whole listing)."""
    rows = []  # (is defect, accrual, robust z)
    for seed in range(100, 112):
        w = generate_world("JE-12", seed)
        view = _agent_view(w)
        heads = {r["entry_id"]: r for r in w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1)).to_pylist()}
        for rec in (*w.defects, *w.decoys):
            assert heads[rec.entry_id]["document_type"] in ("VN", "AC") and heads[rec.entry_id]["source"] == "manual"
            rows.append((rec.entry_id in w.defect_ids, heads[rec.entry_id]["document_type"] == "AC",
                         view[rec.entry_id][0]))

    def mean(xs):
        return sum(xs) / len(xs)

    share = {bad: mean([r[1] for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(share[True] - share[False]) < 0.2, share
    logz = {bad: mean([np.log(r[2]) for r in rows if r[0] == bad]) for bad in (True, False)}
    assert abs(logz[True] - logz[False]) < 0.35, logz


def test_builder_rule_matches_planted_entries_over_many_seeds():
    spec = get_task("JE-12")
    for seed in range(20):
        for knobs in ({}, {"n_defects": 8, "n_decoys": 8, "near_miss": 1.0, "n_entries": 5000}):
            b = WorldBuilder(spec, seed, spec.resolve_knobs(knobs))
            je12.plant(b)
            planted = {d[0] for d in b.defects} | {d[0] for d in b.decoys}
            assert planted <= set(np.flatnonzero(je12.rule_hits(b)).tolist()), (seed, knobs)


def test_plan_document_states_the_method(world):
    plan = next(d for d in world.documents if d.title == je12.PLAN_TITLE)
    assert "1.4826" in plan.body and "median absolute deviation" in plan.body and "manual" in plan.body
    assert je12._thresholds(plan.body) == {"amount_z": je12.AMOUNT_Z, "min_pop": je12.MIN_POP,
                                           "min_user": je12.MIN_USER, "flow_z": je12.FLOW_Z}


@pytest.fixture(scope="module")
def results():
    return {(a, s): played("JE-12", a, s) for a in ("naive", "careful") for s in SEEDS}


def test_careful_computes_its_baseline_first_and_naive_flags_the_genuine_outliers(results):
    """careful computes the baseline before any claim and states it (median and MAD) in every flag;
    naive flags every selected entry: the planted decoys and at least three genuine outliers of the
    books (the rest of what the agents promise is tests/test_task_contract.py)."""
    for s in SEEDS:
        c = results[("careful", s)]
        assert c.score.verification.baseline_before_claim is True, s
        flags = [d for d in c.dispositions if d["decision"] == "flag"]
        assert all("median" in d["rationale"] and "MAD" in d["rationale"] for d in flags)
        n = results[("naive", s)].score.verification
        assert n.fn == 0 and n.fp >= len(cached_world("JE-12", s).decoys) + 3, s


def test_without_compute_stats_careful_computes_no_baseline_first():
    """The withheld variant (careful still solves it: the task contract) costs process: no baseline
    before the first claim."""
    o = played("JE-12", "careful", 1, tools_withheld=("compute_stats",))
    assert o.score.verification.baseline_before_claim is False
