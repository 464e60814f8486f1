"""JE-10 (three-way match): the sample is the books' own invoices, the planted entries are perturbations
of them, and the naive rule selects exactly the key (what every task promises, the built-in agents
included, is tests/test_task_contract.py). The key's facts are audited in tests/test_key_audit_je10.py."""

from __future__ import annotations

import math

import pytest

from jeval_ray.world import generate_world
from conftest import check_naive_flags_only_the_key

TASK = "JE-10"
SEEDS = range(5)


def _heads(world) -> dict[str, dict]:
    """Entry id -> its first line, with the entry's accounts and total debits."""
    out: dict[str, dict] = {}
    for r in world.ledger.to_pylist():
        h = out.setdefault(r["entry_id"], {**r, "accounts": set(), "total": 0.0})
        h["accounts"].add(r["account"])
        h["total"] += r["debit"]
    return out


@pytest.mark.parametrize("seed", SEEDS)
def test_every_planted_entry_is_a_sampled_vendor_invoice_of_the_books(seed):
    """Defects and decoys are the books' vendor invoices (matched VI or two-way VN), each in the PBC sample with
    its invoice and purchase order in the pack; every defect and decoy type stays within its document kind."""
    w = generate_world("JE-10", seed)
    heads = _heads(w)
    pbc = next(d for d in w.documents if d.title.startswith("PBC list"))
    titles = " ".join(d.title for d in w.documents if d.doc_type in ("invoice", "purchase_order"))
    for rec in (*w.defects, *w.decoys):
        h = heads[rec.entry_id]
        kind = getattr(rec, "defect_type", None) or rec.decoy_type
        assert h["document_type"] in ("VI", "VN") and h["vendor_id"] and h["source"] == "manual"
        assert h["reference"] in pbc.body and f"Vendor invoice {h['reference']} " in titles
        if kind in ("price_over_po", "quantity_over_receipt", "price_variance_within_tolerance",
                    "short_delivery_invoiced_as_received"):
            assert h["document_type"] == "VI" and "2050" in h["accounts"], (seed, kind)
        if kind in ("misclassified_account", "bank_change_verified", "coded_per_po_assignment"):
            assert h["document_type"] == "VN", (seed, kind)
    assert len(w.defects) >= 3 and len(w.decoys) >= 3


def test_every_defect_and_decoy_type_occurs_and_the_bank_exposure_is_not_a_misstatement():
    seen = set()
    for seed in range(12):
        w = generate_world("JE-10", seed)
        seen |= {d.defect_type for d in w.defects} | {d.decoy_type for d in w.decoys}
        assert all(d.misstatement == 0 for d in w.defects if d.defect_type == "bank_account_mismatch")
        assert all(d.misstatement > 0 for d in w.defects if d.defect_type != "bank_account_mismatch")
    assert seen == {"price_over_po", "quantity_over_receipt", "bank_account_mismatch", "misclassified_account",
                    "price_variance_within_tolerance", "short_delivery_invoiced_as_received", "bank_change_verified",
                    "coded_per_po_assignment"}


def test_defects_and_decoys_share_one_listing_surface():
    """Defects and decoys are drawn from the same kinds of invoices and perturbed alike, so the listing's
    amount scale, document kinds, line counts and price-variance lines do not tell them apart
    (tests/test_adversarial.py trains a classifier on the whole listing)."""
    rows = []  # (is defect, log10 amount, matched invoice, lines, has a price-variance line)
    for seed in range(100, 130):
        w = generate_world("JE-10", seed)
        heads = _heads(w)
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            rows.append((rec.entry_id in w.defect_ids, math.log10(h["total"]), h["document_type"] == "VI",
                         len(h["accounts"]), "5100" in h["accounts"]))
    for k, tol in ((1, 0.25), (2, 0.15), (3, 0.2), (4, 0.15)):
        m = {bad: sum(r[k] for r in rows if r[0] == bad) / sum(r[0] == bad for r in rows) for bad in (True, False)}
        assert abs(m[True] - m[False]) < tol, (k, m)


def test_defects_and_decoys_of_one_face_share_their_amounts():
    """Every defect kind has a decoy kind of the same face on the listing (two-way, two-way posted outside the
    vendor's category, matched with and without a price-variance line), and a defect of a decoy's kind is
    drawn at the decoy's amounts: per face, defects and decoys are as frequent (within 0.08), and on the
    matched faces the mean log10 amount of the defects is within 0.1 of the decoys' in the same world
    (seeds 100-179; the quantity
    defects, who bill the whole order, were 0.175 above the short deliveries billed as received before
    they were drawn so, and only a third of the decoys were two-way against half of the defects)."""
    import statistics
    from collections import Counter, defaultdict

    diffs, count = defaultdict(list), {True: Counter(), False: Counter()}
    for seed in range(100, 180):
        w = generate_world("JE-10", seed)
        heads = _heads(w)
        cats = {v["vendor_id"]: v["category"] for v in w.master["vendors"].to_pylist()}
        by = defaultdict(lambda: ([], []))
        for rec in (*w.defects, *w.decoys):
            h = heads[rec.entry_id]
            own = cats[h["vendor_id"]] in ("freight", "maintenance", "marketing") and not (
                h["accounts"] - {"2000", {"freight": "5300", "maintenance": "6600", "marketing": "6700"}[cats[h["vendor_id"]]]})
            face = h["document_type"] + ("+5100" if "5100" in h["accounts"] else "") + (
                " own" if own else " other" if h["document_type"] == "VN" else "")
            bad = rec.entry_id in w.defect_ids
            by[face][not bad].append(math.log10(h["total"]))
            count[bad][face] += 1
        for face, (bad, good) in by.items():
            if bad and good:
                diffs[face].append(statistics.fmean(bad) - statistics.fmean(good))
    assert set(count[True]) == set(count[False]) == {"VN own", "VN other", "VI", "VI+5100"}, count
    for face in count[True]:
        share = {bad: count[bad][face] / sum(count[bad].values()) for bad in (True, False)}
        assert abs(share[True] - share[False]) < 0.08, (face, share)
    for face in ("VI", "VI+5100"):  # the two-way faces are drawn from one pool, unchanged in amount
        assert abs(statistics.fmean(diffs[face])) < 0.1, (face, statistics.fmean(diffs[face]))


def test_the_catalogue_renders_the_key_rationale_of_every_type():
    from jeval_ray.catalogue import key_rationale_markdown
    from jeval_ray.tasks.je10 import KEY_RATIONALE

    text = key_rationale_markdown("JE-10", KEY_RATIONALE, 7)
    assert text.count("\n| defect |") == 4 and text.count("\n| decoy |") == 4
    assert "payment-diversion" in text and "Worked example (seed 7" in text


def test_naive_flags_every_face_disagreement_and_nothing_else(worlds):
    """naive flags every invoice whose documents disagree on their face: every defect and every decoy
    (the contract checks the key is flagged), nothing more."""
    check_naive_flags_only_the_key(TASK, worlds)
