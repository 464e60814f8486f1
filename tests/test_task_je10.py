"""JE-10 (three-way match): the planted world obeys the rule, the base is clean, the built-in agents discriminate."""

from __future__ import annotations

import re

import pytest

from jeval_ray.world import generate_world

SEEDS = range(5)
#: the answer key is audited over more seeds than the agents play (a world takes ~20 ms)
KEY_SEEDS = range(16)


def _money(label: str, text: str) -> float:
    m = re.search(label + r"\s*USD ([\d,]+\.\d\d)", text)
    assert m, label
    return float(m.group(1).replace(",", ""))


def _tolerance(world) -> tuple[float, float]:
    pol = next(d for d in world.documents if d.doc_type == "policy" and "three-way" in d.title.lower())
    m = re.search(r"no more than ([\d.]+)% of the PO value or USD ([\d,]+\.\d\d)", pol.body)
    return float(m.group(1)), float(m.group(2).replace(",", ""))


def _pairs(world) -> dict[str, dict]:
    """Invoice reference -> invoice fields and the total of the PO it quotes."""
    pos, received = {}, {}
    for d in world.documents:
        if d.doc_type == "purchase_order":
            po = re.search(r"PO-\d+", d.title).group(0)
            pos[po] = _money("PO total:", d.body)
            received[po] = int(re.search(r"quantity (\d+) received", d.body).group(1))
    out = {}
    for d in world.documents:
        if d.doc_type == "invoice":
            body = d.body
            out[re.search(r"INV-\d+", d.title).group(0)] = {
                "doc_id": d.doc_id,
                "total": _money("Invoice total:", body),
                "po_total": pos[re.search(r"purchase order:\s*(PO-\d+)", body).group(1)],
                "qty": int(re.search(r"quantity (\d+) at", body).group(1)),
                "received": received[re.search(r"purchase order:\s*(PO-\d+)", body).group(1)],
                "vendor_id": re.search(r"vendor no\. (V\d+)", body).group(1),
                "bank": re.search(r"Remit payment to:.*account (\S+)", body).group(1),
            }
    return out


def _entries(world) -> dict[str, dict]:
    """Entry id -> line 1 (reference, amount, vendor)."""
    return {r["entry_id"]: r for r in world.ledger.to_pylist() if r["line_no"] == 1}


def _breaks_rule(inv: dict, banks: dict, pct: float, cap: float) -> bool:
    tol = min(inv["po_total"] * pct / 100, cap)
    return (inv["bank"] != banks[inv["vendor_id"]] or inv["total"] - inv["po_total"] > tol + 0.004
            or inv["qty"] > inv["received"])


@pytest.fixture(scope="module", params=list(KEY_SEEDS))
def world(request):
    return generate_world("JE-10", request.param)


def test_defects_satisfy_the_rule_and_decoys_are_cleared(world):
    pct, cap = _tolerance(world)
    banks = {v["vendor_id"]: v["bank_account"] for v in world.master["vendors"].to_pylist()}
    pairs, ents = _pairs(world), _entries(world)
    assert world.defects and world.decoys
    for d in world.defects:
        row = ents[d.entry_id]
        inv = pairs[row["reference"]]
        assert inv["total"] == pytest.approx(row["debit"])  # the posted amount is the invoice total
        assert _breaks_rule(inv, banks, pct, cap)
        assert inv["doc_id"] in d.required_evidence and d.criteria == "THREE_WAY_MISMATCH"
        if d.defect_type == "bank_account_mismatch":
            assert "master:vendors" in d.required_evidence and inv["bank"] != banks[inv["vendor_id"]]
        elif d.defect_type == "quantity_over_receipt":
            assert inv["qty"] > inv["received"] and inv["total"] == pytest.approx(inv["po_total"])
            assert d.misstatement == pytest.approx((inv["qty"] - inv["received"]) * inv["total"] / inv["qty"], abs=0.01)
        else:
            assert d.defect_type == "price_over_po"
            assert d.misstatement == pytest.approx(inv["total"] - inv["po_total"])
    for d in world.decoys:
        inv = pairs[ents[d.entry_id]["reference"]]
        assert inv["total"] > inv["po_total"]  # looks like a mismatch ...
        assert not _breaks_rule(inv, banks, pct, cap)  # ... but the policy tolerates it
        assert inv["doc_id"] in d.clearing_evidence and len(d.clearing_evidence) == 3


def test_base_population_does_not_trip_the_rule(world):
    pct, cap = _tolerance(world)
    banks = {v["vendor_id"]: v["bank_account"] for v in world.master["vendors"].to_pylist()}
    planted = world.defect_ids | {d.entry_id for d in world.decoys}
    by_ref = {r["reference"]: eid for eid, r in _entries(world).items()}
    for ref, inv in _pairs(world).items():
        eid = by_ref[ref]  # every invoice in the pack belongs to an entry of the slice
        if eid not in planted:
            assert not _breaks_rule(inv, banks, pct, cap), eid
            assert inv["total"] <= inv["po_total"]


def test_no_hidden_labels_in_visible_text(world):
    words = re.compile(r"decoy|defect|planted|red flag|exception", re.I)
    for d in world.documents:
        assert not words.search(d.title + d.body), d.doc_id


def test_decisive_facts_are_in_the_evidence(world):
    """Each planted entry's facts are what its documents and the vendor master show."""
    pct, cap = _tolerance(world)
    banks = {v["vendor_id"]: v["bank_account"] for v in world.master["vendors"].to_pylist()}
    pairs, ents = _pairs(world), _entries(world)
    for rec in (*world.defects, *world.decoys):
        inv = pairs[ents[rec.entry_id]["reference"]]
        if getattr(rec, "defect_type", "") == "bank_account_mismatch":
            assert set(rec.facts) == {inv["doc_id"], inv["bank"], banks[inv["vendor_id"]]}
            continue
        if getattr(rec, "defect_type", "") == "quantity_over_receipt":
            assert {f"{inv['qty']:.2f}", f"{inv['received']:.2f}"} <= set(rec.facts)
            continue
        po_doc = next(f for f in rec.facts if f.startswith("DOC-"))
        assert world.document(po_doc).doc_type == "purchase_order"
        assert f"{inv['total']:.2f}" in rec.facts and f"{inv['po_total']:.2f}" in rec.facts
        assert f"{round(min(inv['po_total'] * pct / 100, cap), 2):.2f}" in rec.facts  # the tolerance


def test_sampled_invoices_are_coded_to_what_the_vendor_sells_and_were_received(world):
    from jeval_ray.tasks.je10 import _ACCOUNT

    names = {v["vendor_id"]: v["name"] for v in world.master["vendors"].to_pylist()}
    ents = {r["reference"]: r for r in _entries(world).values()}
    for d in world.documents:
        if d.doc_type == "invoice":
            row = ents[re.search(r"INV-\d+", d.title).group(0)]
            assert row["account"] == _ACCOUNT[names[row["vendor_id"]]]
        if d.doc_type == "purchase_order":
            ordered = int(re.search(r"quantity (\d+) at", d.body).group(1))
            gr = re.search(r"goods receipt GR-\d+ posted (\S+), quantity (\d+) received", d.body)
            assert gr and int(gr.group(2)) <= ordered and gr.group(1) >= d.date


def test_defects_and_decoys_share_one_listing_surface():
    """Every candidate is a base vendor invoice re-priced the same way: defects and decoys share the
    listing's amount scale, source and timing (tests/test_leak_probe.py trains a classifier on it)."""
    import math

    rows = []  # (is defect, log10 amount, manual, document lag)
    for seed in range(100, 130):
        w = generate_world("JE-10", seed)
        heads = _entries(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            assert h["document_type"] == "KR" and h["vendor_id"]
            rows.append((rec.entry_id in w.defect_ids, math.log10(h["debit"]), h["source"] == "manual",
                         (h["posting_date"] - h["document_date"]).days))
    for k, tol in ((1, 0.25), (2, 0.15), (3, 1.0)):
        m = {bad: sum(r[k] for r in rows if r[0] == bad) / sum(r[0] == bad for r in rows) for bad in (True, False)}
        assert abs(m[True] - m[False]) < tol, (k, m)


def test_careful_vouches_and_naive_flags_every_variance():
    import statistics

    from jeval_ray.episode import play

    res = {(a, s): play("JE-10", a, s) for a in ("random", "naive", "careful") for s in SEEDS}
    for s in SEEDS:
        c = res[("careful", s)].score
        assert c.outcome >= 0.95 and c.rationale >= 0.95 and c.verification.fabrications == 0, s
        n = res[("naive", s)].score.verification
        w = generate_world("JE-10", s)
        # totals and banks only: it flags the tolerated variances too and misses what only the receipt shows
        assert n.tp == sum(d.defect_type != "quantity_over_receipt" for d in w.defects) and n.fp == len(w.decoys)
    mean = {a: statistics.fmean(res[(a, s)].score.score for s in SEEDS) for a in ("random", "naive", "careful")}
    assert mean["random"] < mean["naive"] < mean["careful"] - 0.15, mean
