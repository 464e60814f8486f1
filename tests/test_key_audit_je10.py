"""JE-10 key audit: over many seeds, the facts the key rationale relies on hold in the world as the
agent sees it (the listing, the master tables, the support pack), and nothing outside the key breaks
a rule the policy states.

Each check re-reads the documents with its own patterns (not the built-in agents' parsers) and ties
them to the ledger: the invoice total to the payable posted, the order value to the GR/IR line, the
price adjustment to the purchase price variance line, the PO history to the goods-receipt entries.
"""

from __future__ import annotations

import re
import pytest

from jeval_ray.books import chart
from jeval_ray.books.master import ALLOWED_ACCOUNTS, CATEGORIES
from jeval_ray.world import generate_world

SEEDS = range(20)
_USD = r"USD (-?[\d,]+\.\d\d)"


def _cents(text: str) -> int:
    return round(float(text.replace(",", "")) * 100)


def _policy(w) -> tuple[float, int, dict[str, set[str]], dict[str, str], dict[str, str]]:
    """(tolerance %, cap in cents, category -> accounts the coding guide allows, category -> its cost account,
    category -> its line of business as the guide words it)."""
    body = next(d.body for d in w.documents if d.doc_type == "policy" and d.title.startswith("Procurement"))
    m = re.search(r"by no more than ([\d.]+)% of that order value or " + _USD + ", whichever is lower", body)
    guide, main, line = {}, {}, {}
    for cat, what, rest in re.findall(r"^\s+- ([a-z_]+) \(([^)]*)\): (.*)$", body, flags=re.M):
        codes = re.findall(r"\b\d{4}\b", rest)
        guide[cat], main[cat], line[cat] = set(codes), codes[0], what
    assert "work outside the vendor's line of business assigns nothing" in " ".join(body.split())
    return float(m.group(1)), _cents(m.group(2)), guide, main, line


def _tolerance(order_value: int, pct: float, cap: int) -> int:
    return int(min(order_value * pct // 100, cap))


def _invoices(w) -> dict[str, dict]:
    out = {}
    for d in w.documents:
        if d.doc_type != "invoice":
            continue
        b = d.body
        line = re.search(r"Line 1: (.*) - quantity (\d+) at " + _USD + " each = " + _USD, b)
        adj = re.search(r"Line 2: price adjustment = " + _USD, b)
        stamp = re.search(r"AP stamp: posted as (V[IN]-\d+) on (\S+) by .* \((\w+)\); approved by .* \((\w+)\) on (\S+)\.", b)
        po = re.search(r"Your purchase order: (PO-\d+)", b)
        out[stamp.group(1)] = {
            "doc_id": d.doc_id, "date": re.search(r"Invoice date: (\S+)", b).group(1),
            "vendor_id": re.search(r"vendor no\. (V\d+)", b).group(1), "po": po.group(1) if po else None,
            "what": line.group(1), "qty": int(line.group(2)), "price": _cents(line.group(3)), "line": _cents(line.group(4)),
            "adjustment": _cents(adj.group(1)) if adj else 0, "total": _cents(re.search(r"Invoice total: " + _USD, b).group(1)),
            "bank": re.search(r"Remit payment to: .*, account (\S+)", b).group(1),
            "posted": stamp.group(2), "preparer": stamp.group(3), "approver": stamp.group(4), "approved": stamp.group(5),
        }
        assert d.title.startswith(f"Vendor invoice {stamp.group(1)} ")
    return out


def _orders(w) -> dict[str, dict]:
    out = {}
    for d in w.documents:
        if d.doc_type != "purchase_order":
            continue
        b = d.body
        line = re.search(r"quantity (\d+) at " + _USD + " each = " + _USD, b)
        grs = [(g, day, int(q), _cents(c)) for g, day, q, c in
               re.findall(r"goods receipt (GR-\d+) posted (\S+), quantity (\d+) received \(" + _USD + r"\)", b)]
        out[re.search(r"PURCHASE ORDER (PO-\d+)", b).group(1)] = {
            "doc_id": d.doc_id, "date": re.search(r"Order date: (\S+)", b).group(1), "qty": int(line.group(1)),
            "price": _cents(line.group(2)), "total": _cents(re.search(r"PO total: " + _USD, b).group(1)),
            "approved": re.search(r"approved in ERP by .* on (\S+)\.", b).group(1), "receipts": grs,
            "two_way": "no goods receipt" in b, "what": re.search(r"Line 1: (.*) - quantity", b).group(1),
            "assign": (re.search(r"Account assignment: (\d{4}) ", b) or [None, None])[1],
        }
    return out


def _entries(w) -> dict[str, dict]:
    """Reference -> the listed entry: id, lines (account, signed cents), header fields."""
    out: dict[str, dict] = {}
    for r in w.ledger.to_pylist():
        e = out.setdefault(r["reference"], {"entry_id": r["entry_id"], "lines": [], "posting_date": str(r["posting_date"]),
                                            "vendor_id": r["vendor_id"], "document_type": r["document_type"],
                                            "description": r["description"], "preparer": r["preparer"],
                                            "approver": r["approver"]})
        e["lines"].append((r["account"], round(r["debit"] * 100) - round(r["credit"] * 100)))
    return out


def _line(e: dict, account: str) -> int:
    return sum(v for a, v in e["lines"] if a == account)


class Pack:
    """A world read as the auditor reads it."""

    def __init__(self, seed: int):
        w = self.w = generate_world("JE-10", seed)
        self.pct, self.cap, self.guide, self.main, self.line = _policy(w)
        self.inv, self.po, self.ent = _invoices(w), _orders(w), _entries(w)
        self.vendors = {v["vendor_id"]: v for v in w.master["vendors"].to_pylist()}
        self.changes = [r for r in w.master["vendor_changes"].to_pylist() if r["field"] == "bank_account"]
        self.by_id = {e["entry_id"]: ref for ref, e in self.ent.items()}
        self.key = {d.entry_id: d for d in w.defects} | {d.entry_id: d for d in w.decoys}

    def of(self, rec) -> tuple[dict, dict | None, dict]:
        ref = self.by_id[rec.entry_id]
        inv = self.inv[ref]
        return inv, self.po.get(inv["po"]), self.ent[ref]

    def received(self, po: dict) -> int:
        return sum(q for _, _, q, _ in po["receipts"])

    def excess(self, inv: dict, po: dict) -> tuple[int, int, int]:
        """(order value of the quantity invoiced, excess of the total over it, tolerance) in cents."""
        ov = inv["qty"] * po["price"]
        return ov, inv["total"] - ov, _tolerance(ov, self.pct, self.cap)

    def of_the_line(self, po: dict, vendor_id: str) -> bool:
        """Whether the PO orders a job of the vendor's line of business (the guide's words for its category)."""
        return po["what"].startswith(self.line[self.vendors[vendor_id]["category"]] + ": ")

    def verified_change(self, inv: dict) -> dict | None:
        master = self.vendors[inv["vendor_id"]]["bank_account"]
        return next((r for r in self.changes if r["vendor_id"] == inv["vendor_id"] and r["old_value"] == inv["bank"]
                     and r["new_value"] == master and r["changed_on"] >= inv["date"]
                     and "call-back" in (r.get("verification") or "")), None)

    def breaks(self, ref: str) -> set[str]:
        """The policy rules the sampled invoice ``ref`` breaks, read from its documents and the master."""
        inv, e = self.inv[ref], self.ent[ref]
        out = set()
        v = self.vendors[inv["vendor_id"]]
        if inv["bank"] != v["bank_account"] and self.verified_change(inv) is None:
            out.add("payee")
        po = self.po.get(inv["po"])
        off = {a for a, _ in e["lines"]} - self.guide[v["category"]]
        # section 6: an ordered service posts to the account its approved PO assigns, for work of the vendor's line
        if off and not (po is not None and po["two_way"] and off == {po["assign"]}
                        and self.of_the_line(po, inv["vendor_id"])):
            out.add("coding")
        if po is not None:
            if not po["two_way"] and inv["qty"] > self.received(po):
                out.add("quantity")
            _, excess, tol = self.excess(inv, po)
            if excess > tol:
                out.add("price")
        return out


@pytest.fixture(scope="module")
def packs() -> list[Pack]:
    return [Pack(s) for s in SEEDS]


def test_key_audit_documents_tie_to_the_entries_they_support(packs):
    """Every sampled invoice is its entry's: same reference, posting date, preparer and approver; its total is
    the payable posted, its lines the GR/IR (or cost) and price-variance lines; approvals fall between the
    document and its posting; the PO history ties to the goods-receipt entries of the listing."""
    for p in packs:
        assert p.inv, p.w.seed
        for ref, inv in p.inv.items():
            e = p.ent[ref]
            assert e["vendor_id"] == inv["vendor_id"] and e["posting_date"] == inv["posted"]
            assert (e["preparer"], e["approver"]) == (inv["preparer"], inv["approver"])
            assert inv["date"] <= inv["approved"] <= inv["posted"], (p.w.seed, ref)
            assert -_line(e, "2000") == inv["total"] == inv["line"] + inv["adjustment"]
            assert inv["line"] == inv["qty"] * inv["price"]
            if e["document_type"] == "VI":
                po = p.po[inv["po"]]
                assert _line(e, "2050") == inv["line"] and _line(e, "5100") == inv["adjustment"]
                assert inv["price"] == po["price"] and po["total"] == po["qty"] * po["price"]
                for gr, day, q, cents in po["receipts"]:
                    g = p.ent.get(gr)
                    if g is not None:  # a receipt of the prior year is in the opening balances
                        assert g["posting_date"] == day and _line(g, "2050") == -cents == -q * po["price"]
                    assert day >= po["date"]
            elif inv["po"]:
                po = p.po[inv["po"]]
                assert po["two_way"] and inv["qty"] == 1 and po["assign"] is not None
                assert inv["what"] == po["what"]  # the invoice bills the work the PO ordered
                # the job in a line of business's words, then the job itself
                assert any(po["what"].startswith(w + ": ") for w in p.line.values()), (p.w.seed, po["what"])
            if inv["po"]:
                assert p.po[inv["po"]]["date"] <= p.po[inv["po"]]["approved"] <= inv["date"]


def test_key_audit_defects_break_exactly_the_rule_their_rationale_states(packs):
    for p in packs:
        for d in p.w.defects:
            inv, po, e = p.of(d)
            assert d.criteria == "THREE_WAY_MISMATCH" and inv["doc_id"] in d.required_evidence
            ref = p.by_id[d.entry_id]
            if d.defect_type == "price_over_po":
                ov, excess, tol = p.excess(inv, po)
                assert p.breaks(ref) == {"price"}, (p.w.seed, ref)
                assert _line(e, "5100") == excess and _line(e, "2050") == ov  # the excess sits in purchase price variance
                assert round(d.misstatement * 100) == excess and po["doc_id"] in d.required_evidence
                assert {f"{x / 100:.2f}" for x in (inv["total"], ov, excess, tol)} <= set(d.facts)
            elif d.defect_type == "quantity_over_receipt":
                got = p.received(po)
                assert p.breaks(ref) == {"quantity"} and inv["qty"] == po["qty"] > got
                # the invoice cleared GR/IR for more than the goods receipts put in: the difference stays in GR/IR
                assert _line(e, "2050") - sum(c for _, _, _, c in po["receipts"]) == (inv["qty"] - got) * po["price"]
                assert round(d.misstatement * 100) == (inv["qty"] - got) * po["price"]
                assert {f"{inv['qty']:.2f}", f"{got:.2f}"} <= set(d.facts) and po["doc_id"] in d.required_evidence
            elif d.defect_type == "bank_account_mismatch":
                master = p.vendors[inv["vendor_id"]]["bank_account"]
                assert p.breaks(ref) == {"payee"} and inv["bank"] != master
                assert not any(r["vendor_id"] == inv["vendor_id"] and inv["bank"] in (r["old_value"], r["new_value"])
                               for r in p.changes)
                assert d.misstatement == 0  # a payment-fraud exposure: the expense is not misstated
                assert {inv["bank"], master} <= set(d.facts)
                assert {"master:vendors", "master:vendor_changes"} <= set(d.required_evidence)
            else:
                assert d.defect_type == "misclassified_account"
                cat = p.vendors[inv["vendor_id"]]["category"]
                posted = {a for a, v in e["lines"] if v > 0}
                assert p.breaks(ref) == {"coding"} and len(posted) == 1
                (acct,) = posted
                assert acct not in p.guide[cat] and acct != p.main[cat]
                # the PO does not assign the account posted, or assigns it for a job outside the vendor's line
                foreign = po["assign"] == acct and not p.of_the_line(po, inv["vendor_id"])
                assert (po["assign"] == p.main[cat]) != foreign, (p.w.seed, ref)
                assert po["doc_id"] in d.required_evidence and po["doc_id"] in d.facts
                assert chart.ACCOUNTS[chart.CODE[acct]].name.lower() in e["description"]  # the ERP names what it posted
                assert round(d.misstatement * 100) == inv["total"] == _line(e, acct)
                assert {acct, cat, p.main[cat]} <= set(d.facts) and "master:vendors" in d.required_evidence


def test_key_audit_decoys_are_cleared_by_their_evidence_and_break_no_rule(packs):
    for p in packs:
        for d in p.w.decoys:
            inv, po, e = p.of(d)
            ref = p.by_id[d.entry_id]
            assert not p.breaks(ref), (p.w.seed, ref, d.decoy_type)
            assert inv["doc_id"] in d.clearing_evidence
            if d.decoy_type == "price_variance_within_tolerance":
                ov, excess, tol = p.excess(inv, po)
                assert 0 < excess <= tol and _line(e, "5100") == excess  # looks like a price mismatch, within tolerance
                assert po["doc_id"] in d.clearing_evidence
                assert {f"{x / 100:.2f}" for x in (inv["total"], ov, tol)} <= set(d.facts)
            elif d.decoy_type == "short_delivery_invoiced_as_received":
                got = p.received(po)
                assert got < po["qty"] and inv["qty"] == got and inv["adjustment"] == 0  # short order, billed as received
                assert _line(e, "2050") == sum(c for _, _, _, c in po["receipts"])  # GR/IR clears exactly
                assert {f"{po['qty']:.2f}", f"{got:.2f}"} <= set(d.facts) and po["doc_id"] in d.clearing_evidence
            elif d.decoy_type == "coded_per_po_assignment":
                cat = p.vendors[inv["vendor_id"]]["category"]
                posted = {a for a, v in e["lines"] if v > 0}
                assert len(posted) == 1 and po["two_way"], (p.w.seed, ref)
                (acct,) = posted
                # outside the vendor's category, as a misclassified invoice is, but the PO assigns it there
                assert acct not in p.guide[cat] and po["assign"] == acct and po["date"] <= inv["date"]
                assert p.of_the_line(po, inv["vendor_id"]), (p.w.seed, ref, po["what"])  # work the vendor does
                assert chart.ACCOUNTS[chart.CODE[acct]].name.lower() in e["description"]
                assert {po["doc_id"], "master:vendors"} <= set(d.clearing_evidence) and {acct, cat} <= set(d.facts)
            else:
                assert d.decoy_type == "bank_change_verified"
                r = p.verified_change(inv)
                master = p.vendors[inv["vendor_id"]]["bank_account"]
                assert inv["bank"] != master and r is not None and r["changed_on"] > inv["date"]
                assert {"master:vendors", "master:vendor_changes"} <= set(d.clearing_evidence)
                assert {inv["bank"], master, r["changed_on"]} <= set(d.facts)


def test_key_audit_nothing_outside_the_key_breaks_a_stated_rule(packs):
    """Sampled invoices outside the key pass every rule; in the whole listing, every matched invoice's price
    variance is within the tolerance and every vendor posts only to the accounts the coding guide gives its
    category (the guide is the books' own)."""
    assert all(p.guide == {c.name: {chart.ACCOUNTS[i].code for i in ALLOWED_ACCOUNTS[c.name]} for c in CATEGORIES}
               for p in packs)
    lookalikes = 0
    for p in packs:
        for ref, inv in p.inv.items():
            if p.ent[ref]["entry_id"] not in p.key:
                assert not p.breaks(ref), (p.w.seed, ref)
                po = p.po.get(inv["po"])
                if po is not None and po["two_way"]:  # an ordinary order: the vendor's own work, its category's account
                    assert po["assign"] == p.main[p.vendors[inv["vendor_id"]]["category"]], (p.w.seed, ref)
                    assert p.of_the_line(po, inv["vendor_id"]), (p.w.seed, ref)
        for ref, e in p.ent.items():
            if e["entry_id"] in p.key or not e["vendor_id"]:
                continue
            cat = p.vendors[e["vendor_id"]]["category"]
            assert not {a for a, _ in e["lines"]} - p.guide[cat], (p.w.seed, ref)
            if e["document_type"] == "VI" and _line(e, "5100") > 0:
                lookalikes += 1
                assert _line(e, "5100") <= _tolerance(_line(e, "2050"), p.pct, p.cap), (p.w.seed, ref)
    assert lookalikes >= len(packs)  # the filter's honest hits: price differences the policy tolerates


def test_key_audit_the_brief_and_criteria_do_not_name_the_decisive_test():
    from jeval_ray.env import JEEnv
    from jeval_ray.tasks.je10 import SPEC

    brief, _ = JEEnv("JE-10").reset(seed=7)
    words = re.compile(r"bank|toleran|quantit|received|categor|misclass|\baccount\b|coded|payee", re.I)
    assert not words.search(SPEC.criteria[0].description + SPEC.objective)
    assert "THREE_WAY_MISMATCH" in brief


def test_key_audit_a_po_assigning_the_account_posted_is_not_the_answer(packs):
    """Misclassified invoices come both ways: a PO that assigns the vendor's own account, and a PO that, like a
    coded decoy's, assigns the account posted but orders work outside the vendor's line of business (a marketing
    agency ordered repairs). A decoy's PO orders work of the vendor's line: the scope decides, not the
    assignment."""
    own = foreign = coded = 0
    for p in packs:
        for rec in [*p.w.defects, *p.w.decoys]:
            kind = getattr(rec, "defect_type", None) or rec.decoy_type
            if kind not in ("misclassified_account", "coded_per_po_assignment"):
                continue
            inv, po, e = p.of(rec)
            (acct,) = {a for a, v in e["lines"] if v > 0}
            fits = p.of_the_line(po, inv["vendor_id"])
            if kind == "coded_per_po_assignment":
                coded += po["assign"] == acct and fits
            elif po["assign"] == acct:
                foreign += not fits
            else:
                own += fits
    assert own and foreign and coded, (own, foreign, coded)
