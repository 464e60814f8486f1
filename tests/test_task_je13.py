"""JE-13 (digit-pattern anomalies): the digit test itself, the planted world, and the careful solver's
order of work (what every task promises, the built-in agents included, is tests/test_task_contract.py).
What vouching the selection shows is audited in tests/test_key_audit_je13.py."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.env import JEEnv
from jeval_ray.tools._tools import digit_test
from jeval_ray.tasks.je13 import MIN_SELECTED, MIN_TEST, SCHEME_USERS, Z_SELECT, digit_z
from jeval_ray.world import generate_world
from support.worlds import played, world as cached_world

SEEDS = range(5)


def _amounts_with_first_digits(counts: list[int]) -> np.ndarray:
    """Amounts whose leading digits occur ``counts[d - 1]`` times (the rest of each amount is arbitrary)."""
    return np.array([d * 100 + 23.45 for d, c in zip(range(1, 10), counts) for _ in range(c)])


# ---------------------------------------------------------------------------- the digit test

def test_no_planted_invoice_is_of_a_vendor_billing_a_fixed_sum():
    """Rent, subscriptions and premiums bill one sum every period: an invoice of another sum, even one
    that bills what was keyed, would stand out against the vendor's other months (an auditor's read
    found a decoy at 4,621.07 among a subscription's 3,208.07 months), so none is planted on them."""
    from jeval_ray.world import generate_world

    for seed in range(40):
        w = generate_world("JE-13", seed)
        category = {v["vendor_id"]: v["category"] for v in w.master["vendors"].to_pylist()}
        led = w.ledger
        vendor = dict(zip(led.column("entry_id").to_pylist(), led.column("vendor_id").to_pylist()))
        for rec in [*w.defects, *w.decoys]:
            assert category.get(vendor[rec.entry_id]) not in ("rent", "software", "insurance"), (seed, rec.entry_id)

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


@pytest.mark.parametrize("seed", SEEDS)
def test_the_planted_entries_are_one_clerks_spike_below_the_threshold(seed):
    w = cached_world("JE-13", seed)
    by_user = _manual_by_user(w)
    planted = w.defect_ids | {d.entry_id for d in w.decoys}
    users = {r["preparer"] for rows in by_user.values() for r in rows if r["entry_id"] in planted}
    assert len(users) == 1 and len(planted) >= MIN_SELECTED
    user = users.pop()
    assert user in SCHEME_USERS
    rows = [r for r in by_user[user] if r["debit"] >= 10]
    test = digit_test(np.array([r["debit"] for r in rows]), "first")
    counts = np.array([test["distribution"][str(d)]["count"] for d in range(1, 10)])
    z = digit_z(counts, test["n"])
    assert z[3] > Z_SELECT + 0.5, z  # the clerk's leading 4 is selected with room to spare
    for r in rows:
        if r["entry_id"] in planted:
            assert 4_500 <= r["debit"] < 5_000 and r["document_type"] == "VN", r
    assert all(d.criteria == "DIGIT_ANOMALY" and "master:users" in d.required_evidence for d in w.defects)


# ---------------------------------------------------------------------------- the built-in agents
@pytest.mark.parametrize("seed", SEEDS)
def test_careful_runs_the_digit_test_before_any_claim(seed):
    """The rest of what the agents promise is tests/test_task_contract.py."""
    o = played("JE-13", "careful", seed)
    assert o.score.verification.baseline_before_claim is True
