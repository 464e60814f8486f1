"""JE-13 (digit-pattern anomalies): the digit test itself, the planted world, and the built-in agents."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.env import JEEnv
from jeval_ray.env._tools import digit_test
from jeval_ray.tasks.je13 import MIN_SELECTED, MIN_TEST
from jeval_ray.world import generate_world

SEEDS = range(5)


def _amounts_with_first_digits(counts: list[int]) -> np.ndarray:
    """Amounts whose leading digits occur ``counts[d - 1]`` times (the rest of each amount is arbitrary)."""
    return np.array([d * 100 + 23.45 for d, c in zip(range(1, 10), counts) for _ in range(c)])


# ---------------------------------------------------------------------------- the digit test
def test_first_digit_mad_matches_hand_computation_close_conformity():
    # 100 amounts, leading digits 30/18/12/10/8/7/6/5/4; Benford: .30103 .17609 .12494 .09691 .07918
    # .06695 .05799 .05115 .04576; |differences| sum to .02576, / 9 digits = 0.00286 -> close (< 0.006)
    out = digit_test(_amounts_with_first_digits([30, 18, 12, 10, 8, 7, 6, 5, 4]), "first")
    assert out["n"] == 100
    assert out["mad"] == pytest.approx(0.00286, abs=1e-5)
    assert out["conformity"] == "close conformity"
    assert out["distribution"]["1"] == {"count": 30, "observed": 0.3, "expected": 0.301}


def test_first_digit_mad_matches_hand_computation_acceptable_band():
    # 1,000 amounts 250/200/140/100/80/70/60/55/45: |differences| .05103 .02391 .01506 .00309 .00082
    # .00305 .00201 .00385 .00076 sum to .10358, / 9 = 0.01151 -> acceptable (0.006-0.012)
    out = digit_test(_amounts_with_first_digits([250, 200, 140, 100, 80, 70, 60, 55, 45]), "first")
    assert out["mad"] == pytest.approx(0.01151, abs=1e-5)
    assert out["conformity"] == "acceptable conformity"


def test_first_digit_single_digit_population_is_nonconforming():
    # every amount starts with 9: |differences| are the Benford shares of 1-8 (0.95424) plus
    # 1 - 0.04576 for digit 9 (0.95424): 1.90849 / 9 = 0.21205 -> nonconformity (> 0.015)
    out = digit_test(np.full(60, 9_412.37), "first")
    assert out["mad"] == pytest.approx(0.21205, abs=1e-5)
    assert out["conformity"] == "nonconformity"


def test_last_two_digits_mad_matches_hand_computation():
    # 100 amounts with endings 00..99 once each: observed = expected = 0.01 everywhere -> MAD 0
    uniform = digit_test(np.array([1_000 + k + 0.5 for k in range(100)]), "last_two")
    assert uniform["mad"] == 0.0 and uniform["conformity"] == "close conformity"
    # 50 amounts with endings 00..49: 50 bins at 0.02 and 50 at 0 -> every |difference| is 0.01 -> MAD 0.01
    half = digit_test(np.array([1_000 + k + 0.5 for k in range(50)]), "last_two")
    assert half["mad"] == pytest.approx(0.01) and half["conformity"] == "nonconformity"


def test_tiny_population_gets_too_small_message_not_nan():
    out = digit_test(np.array([123.45, 234.50, 99.10]), "first")
    assert out == {"n": 3, "message": f"population of 3 entries is too small for a digit test (need at least {MIN_TEST})"}


def test_compute_stats_answers_too_small_for_small_and_empty_populations():
    env = JEEnv("JE-13")
    env.reset(0)
    w = env.world
    first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1))
    counts = {}
    for r in first.filter(pc.equal(first.column("source"), "manual")).to_pylist():
        counts[r["preparer"]] = counts.get(r["preparer"], 0) + 1
    small = min((u for u, c in counts.items() if 5 <= c < MIN_TEST), key=counts.get)
    text, *_ = env.step({"tool": "compute_stats", "args": {
        "filters": [{"column": "preparer", "op": "eq", "value": small}, {"column": "source", "op": "eq", "value": "manual"}],
        "digits": "last_two"}})
    obs = json.loads(text)
    assert "too small for a digit test" in obs["digit_test"]["message"] and "NaN" not in text
    text, *_ = env.step({"tool": "compute_stats", "args": {
        "filters": [{"column": "preparer", "op": "eq", "value": "NOBODY"}], "digits": "first"}})
    assert "too small" in json.loads(text)["message"] and "NaN" not in text


# ---------------------------------------------------------------------------- the planted world
def _manual_by_user(w) -> dict[str, list[dict]]:
    t = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1))
    out: dict[str, list[dict]] = {}
    for r in t.filter(pc.equal(t.column("source"), "manual")).to_pylist():
        out.setdefault(r["preparer"], []).append(r)
    return out


def _first(a: float) -> int:
    return int(f"{a:.2f}".lstrip("0.")[0])


def _ending(a: float) -> int:
    return int(round(a * 100)) // 100 % 100


def _spike(rows: list[dict]) -> tuple[str, set[int]]:
    """The over-represented leading digits (first-digit shapes) or endings (ending shape) of a population."""
    amounts = np.array([r["debit"] for r in rows])
    first = digit_test(amounts, "first")
    if first["conformity"] == "nonconformity":
        return "first", {int(k) for k, v in first["distribution"].items() if v["observed"] - v["expected"] >= 0.04}
    last = digit_test(amounts, "last_two")
    return "last_two", {int(k) for k, v in last["distribution"].items() if v["count"] >= 4}


@pytest.mark.parametrize("seed", SEEDS)
def test_selection_is_the_spike_of_one_testable_user(seed):
    w = generate_world("JE-13", seed)
    by_user = _manual_by_user(w)
    defects = {d.entry_id for d in w.defects}
    selected = defects | {d.entry_id for d in w.decoys}
    users = {r["preparer"] for rows in by_user.values() for r in rows if r["entry_id"] in selected}
    assert len(users) == 1
    user = users.pop()
    assert len(by_user[user]) >= MIN_TEST and len(selected) >= MIN_SELECTED
    kind, spikes = _spike(by_user[user])
    assert spikes
    key = _first if kind == "first" else _ending
    assert {r["entry_id"] for r in by_user[user] if key(r["debit"]) in spikes} == selected
    assert all(d.criteria == "DIGIT_ANOMALY" and "master:users" in d.required_evidence for d in w.defects)


@pytest.mark.parametrize("seed", SEEDS)
def test_vouching_decides_defects_and_decoys(seed):
    """A defect's supplier invoice is for less than the amount keyed; a decoy's agrees. The key's
    decisive facts are the figures and the invoice the agent must open."""
    w = generate_world("JE-13", seed)
    rows = {r["entry_id"]: r for rs in _manual_by_user(w).values() for r in rs}
    for rec in (*w.defects, *w.decoys):
        r = rows[rec.entry_id]
        ev = rec.required_evidence if hasattr(rec, "required_evidence") else rec.clearing_evidence
        doc = w.document(ev[0])
        assert doc.doc_type == "invoice" and doc.title == f"Supplier invoice {r['reference']} - {_vendor(w, r)}"
        billed = float(re.search(r"Amount due: USD ([\d,.]+\d)", doc.body).group(1).replace(",", ""))
        assert r["description"].startswith("Invoice ") and r["document_type"] == "KR"
        assert float(rec.facts[0]) == pytest.approx(r["debit"]) and ev[0] in rec.facts
        if hasattr(rec, "required_evidence"):
            assert billed < r["debit"] and float(rec.facts[1]) == pytest.approx(billed)
            assert r["preparer"] in rec.facts
        else:
            assert billed == pytest.approx(r["debit"])


def test_selected_defects_and_decoys_share_one_surface():
    """Amounts, vendors and accounts of the selection are drawn before each entry is made a defect or
    a decoy: over many seeds their amounts overlap (rank AUC near 0.5)."""
    dfx, dcx = [], []
    for s in range(300, 330):
        w = generate_world("JE-13", s)
        first = w.ledger.filter(pc.equal(w.ledger.column("line_no"), 1))
        amount = dict(zip(first.column("entry_id").to_pylist(), first.column("debit").to_pylist()))
        dfx += [amount[d.entry_id] for d in w.defects]
        dcx += [amount[d.entry_id] for d in w.decoys]
    auc = sum((a > b) + 0.5 * (a == b) for a in dfx for b in dcx) / (len(dfx) * len(dcx))
    assert 0.4 <= auc <= 0.6, auc


def _vendor(w, r) -> str:
    return next(v["name"] for v in w.master["vendors"].to_pylist() if v["vendor_id"] == r["vendor_id"])


@pytest.mark.parametrize("seed", SEEDS)
def test_population_outside_the_scheme_user_conforms(seed):
    w = generate_world("JE-13", seed)
    by_user = _manual_by_user(w)
    defects = {d.entry_id for d in w.defects}
    scheme = next(u for u, rows in by_user.items() if any(r["entry_id"] in defects for r in rows))
    rest = np.array([r["debit"] for u, rows in by_user.items() if u != scheme for r in rows])
    assert digit_test(rest, "first")["mad"] < 0.012
    for user, rows in by_user.items():
        if user != scheme and len(rows) >= MIN_TEST:
            amounts = np.array([r["debit"] for r in rows])
            assert digit_test(amounts, "first")["conformity"] == "close conformity"
            assert max(v["count"] for v in digit_test(amounts, "last_two")["distribution"].values()) <= 2


@pytest.mark.parametrize("seed", SEEDS)
def test_recurring_fees_are_unplanted_look_alikes_of_untestable_users(seed):
    w = generate_world("JE-13", seed)
    by_user = _manual_by_user(w)
    planted = w.defect_ids | {d.entry_id for d in w.decoys}
    contracts = [d for d in w.documents if d.doc_type == "contract"]
    # a preparer posts the same amount three or more times only under a contract series, too small to test
    for user, rs in by_user.items():
        amounts = [r["debit"] for r in rs]
        for r in rs:
            if amounts.count(r["debit"]) >= 3:
                assert len(rs) < MIN_TEST and r["entry_id"] not in planted
                assert any(f"fixed monthly fee of USD {r['debit']:,.2f}" in d.body for d in contracts)


def test_documents_say_nothing_about_the_answer_key():
    w = generate_world("JE-13", 1)
    text = " ".join(f"{d.title} {d.body}" for d in w.documents).lower()
    for word in ("decoy", "defect", "planted", "red flag", "exception", "anomal"):
        assert word not in text


# ---------------------------------------------------------------------------- the built-in agents
@pytest.fixture(scope="module")
def runs():
    from jeval_ray.episode import play

    return {a: [play("JE-13", a, s) for s in SEEDS] for a in ("random", "naive", "careful")}


def test_careful_vouches_the_selection_and_states_the_facts(runs):
    for o in runs["careful"]:
        assert o.score.outcome >= 0.95 and o.score.rationale >= 0.95 and o.score.process >= 0.95, (o.seed, o.score)
        assert o.score.verification.baseline_before_claim is True


def test_naive_flags_the_whole_selection_and_the_fee_series(runs):
    for o in runs["naive"]:
        v = o.score.verification
        w = generate_world("JE-13", o.seed)
        assert v.recall == 1.0 and v.fp >= len(w.decoys), (o.seed, v)
    mean = {a: sum(o.score.score for o in rs) / len(rs) for a, rs in runs.items()}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean


def test_careful_tests_digits_by_hand_when_compute_stats_is_withheld():
    from jeval_ray.episode import play

    o = play("JE-13", "careful", 1, tools_withheld=("compute_stats",))
    assert o.score.outcome >= 0.95 and o.score.rationale >= 0.95, o.score
