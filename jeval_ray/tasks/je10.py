"""JE-10 (L3): three-way match.

The support pack holds the vendor invoices and purchase orders of the AP items selected for
vouching (each PO print shows its history: the goods receipt and the quantity received), plus the
procurement policy that states the tolerated price variance (a percentage of the PO value or a
fixed USD cap, whichever is lower; both vary by seed). Every sampled entry is coded to the account
of what its vendor sells (inventory for production goods and freight, the matching expense
otherwise), so the invoice, the PO, the goods receipt and the ledger agree on everything but the
planted differences.

Planted defects (criteria ``THREE_WAY_MISMATCH``):

* **price over PO**: the invoice's unit price, and so its total (the amount posted), exceeds the
  purchase order by more than the tolerance. Required evidence: invoice, purchase order, policy.
  Misstatement: the amount billed above the PO. Decisive facts: the PO (document), the invoice
  total, the PO total, the excess and the tolerance.
* **quantity over receipt**: the invoice bills the whole order, but the goods receipt in the PO
  history shows fewer units received. Required evidence: invoice, purchase order, policy.
  Misstatement: the units billed but not received at the invoice price. Decisive facts: the PO
  (document), the quantity billed and the quantity received.
* **bank mismatch**: the invoice asks for payment to a bank account that is not the vendor's
  account in the vendor master (and no vendor change is on file). Required evidence: invoice,
  ``master:vendors``, policy. The amount recorded is the invoice total as the payment at risk
  (a payment-fraud exposure; the expense itself is not misstated). Decisive facts: the invoice
  (document), the remittance account on it and the account in the vendor master.

Decoys: invoices above their PO by less than the tolerance (``near_miss`` moves the variance
towards the limit), cleared by the invoice, the PO and the policy. Decisive facts: the PO
(document), the invoice total, the PO total and the tolerance. A few clean invoice/PO pairs
(exact matches, invoices below the PO, partial deliveries invoiced for what was received)
complete the sample. Every invoice and PO pair is linked
by the PO number printed on the invoice, so one pair suffices per entry. Every candidate is a
vendor invoice of the base population with a random vendor, re-priced as quantity x unit price in
the same way, so the listing does not tell a defect from a decoy.

Base population: the rule needs an invoice and a PO, and the base has none, so nothing outside the
planted sample can trip it.
"""

from __future__ import annotations

import math
import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-10",
    "L3",
    'Three-way match',
    objective='Vouch vendor invoices: find entries whose invoice, purchase order and vendor master disagree beyond the tolerance in the procurement policy.',
    defect='invoice, PO and vendor master disagree (three-way match)',
    decoys='small price variances tolerated by policy',
    required_evidence='invoice, purchase order, vendor master',
    sources=('general_ledger', 'invoices', 'purchase_orders', 'vendor_master', 'procurement_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('THREE_WAY_MISMATCH', 'invoice, purchase order and vendor master disagree beyond the tolerated variance'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Procurement and accounts payable policy - three-way match"
# what each vendor of the base vendor list sells, so an invoice line reads like that vendor's business
_ITEMS = {
    "Acme Industrial Supply": "industrial fasteners (box of 1,000)", "Bluegate Logistics": "LTL freight shipment",
    "Cedar Office Products": "copy paper (case)", "Delta Power & Light": "electricity supply block (MWh)",
    "Evergreen Facilities": "janitorial service visit", "Falcon IT Services": "managed IT support hour",
    "Granite Legal LLP": "legal advisory hour", "Harbor Freight Partners": "ocean container freight (TEU)",
    "Ironclad Insurance Co.": "insurance premium instalment", "Juniper Marketing Group": "campaign design hour",
    "Keystone Properties LLC": "warehouse overflow storage (pallet-month)", "Lumen Software Inc.": "software licence seat (year)",
    "Maple Travel Agency": "corporate travel booking", "Northstar Consulting": "consulting hour",
    "Orion Packaging": "corrugated shipping cartons (bundle)", "Pioneer Steel Works": "steel coil (t)",
    "Quantum Components": "printed circuit board assembly", "Redwood Maintenance": "maintenance technician hour",
    "Summit Staffing": "temporary staff hour", "Titan Equipment Rental": "forklift rental (day)",
    "Unity Telecom": "telephony and data line (month)", "Vista Print Solutions": "printed catalogue (carton)",
    "Westbrook Chemicals": "industrial solvent (drum)", "Yellowstone Freight": "truckload freight shipment",
}
# the expense or inventory account each vendor's invoices are coded to (inventory for goods bought
# for production, the matching expense otherwise), so a vouched invoice agrees with its account
_ACCOUNT = {
    "Acme Industrial Supply": "1200", "Bluegate Logistics": "1200", "Cedar Office Products": "6900",
    "Delta Power & Light": "6200", "Evergreen Facilities": "6600", "Falcon IT Services": "7100",
    "Granite Legal LLP": "6400", "Harbor Freight Partners": "1200", "Ironclad Insurance Co.": "7000",
    "Juniper Marketing Group": "6700", "Keystone Properties LLC": "6100", "Lumen Software Inc.": "7100",
    "Maple Travel Agency": "6300", "Northstar Consulting": "6400", "Orion Packaging": "1200",
    "Pioneer Steel Works": "1200", "Quantum Components": "1200", "Redwood Maintenance": "6600",
    "Summit Staffing": "6400", "Titan Equipment Rental": "6100", "Unity Telecom": "6200",
    "Vista Print Solutions": "6700", "Westbrook Chemicals": "1200", "Yellowstone Freight": "1200",
}
_BANKS = ("First Coastal Bank", "Lakeshore National Bank", "Summit Trust", "Pacific Commerce Bank")
_MONEY = r"USD ([\d,]+\.\d\d)"


def _usd(cents: int) -> str:
    return f"USD {cents / 100:,.2f}"


def _tolerance_cents(po_total: int, pct: float, cap_cents: int) -> float:
    """The tolerated excess over a PO: pct of the PO value or the cap, whichever is lower."""
    return min(po_total * pct / 100.0, cap_cents)


def _tolerance_fact(po_total: int, pct: float, cap_cents: int) -> float:
    """The tolerance in USD as the policy's reader computes it from the PO total it reads."""
    return round(min(po_total / 100 * pct / 100.0, cap_cents / 100), 2)


def plant(b) -> None:
    """Plant over-PO invoices and bank-account mismatches, within-tolerance decoys and clean pairs."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    pct = float(rng.choice([2.0, 3.0, 5.0]))
    cap = int(rng.choice([250, 500, 1000])) * 100
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 3 Purchase orders. Every purchase of goods and services above USD 100.00 requires an approved "
        "purchase order (PO) raised in the ERP before the order is placed.\n"
        "Section 5 Three-way match. Accounts payable may post and pay a vendor invoice only when it agrees with the "
        "approved purchase order, the goods receipt recorded against it (shown in the PO history) and the vendor "
        "master:\n"
        "  5.0 Quantity: the quantity invoiced may not exceed the quantity received.\n"
        "  5.1 Price: the invoice total may exceed the PO value by no more than "
        f"{pct:g}% of the PO value or USD {cap / 100:,.2f}, whichever is lower. Such small variances "
        "(freight surcharges, currency and rounding) are posted without further approval. Any larger excess "
        "requires an approved PO change before the invoice is posted.\n"
        "  5.2 Vendor: the invoice must come from the vendor on the PO, and payment is made only to the bank "
        "account held in the vendor master. Remittance details on an invoice that differ from the vendor master "
        "must not be used; bank changes go through the vendor change procedure with call-back verification.\n"
        "Section 6 Invoices below the PO value (partial deliveries, discounts) are posted at the invoiced amount.",
        "2024-10-01",
    )
    vendors = {v["vendor_id"]: v for v in b.vendors}
    n_bank = (b.n_defects + int(rng.integers(0, 2))) // 3
    n_qty = (b.n_defects - n_bank) // 3
    n_price = b.n_defects - n_bank - n_qty
    # clean pairs make the sample realistic; keep the careful solver's worst case inside the budget
    spare = (SPEC.step_budget - 10 - 3 * (b.n_defects + b.n_decoys)) // 2
    n_clean = max(0, min(int(rng.integers(2, 5)), spare))
    pool = (e["template"] == "vendor_invoice") & (e["vendor_id"] != "")
    price_def = b.pick(n_price, pool, what="vendor invoices")
    bank_def = b.pick(n_bank, pool, what="vendor invoices")
    qty_def = b.pick(n_qty, pool, what="vendor invoices")
    decoys = b.pick(b.n_decoys, pool, what="vendor invoices")
    clean = b.pick(n_clean, pool, what="vendor invoices")
    po_numbers = iter(rng.permutation(np.arange(4_500_100, 4_509_900))[: len(price_def) + len(bank_def) + len(qty_def) + len(decoys) + len(clean)])

    def units(idx: int) -> tuple[int, int]:
        """(quantity, invoice unit price in cents) for the entry, re-setting its amount to qty x price."""
        q = int(rng.integers(2, 41))
        price = max(1, int(round(int(e["debit_cents"][idx]) / q)))
        if (q * price) % 10_000 == 0:  # keep amounts non-round, as in the base population
            price += 1
        e["debit_cents"][idx] = e["credit_cents"][idx] = q * price
        return q, price

    for idx in price_def:
        q, p_inv = units(idx)
        total = q * p_inv
        factor = float(rng.uniform(1.6, 6.0))
        d = max(1, math.ceil(factor * _tolerance_cents(total, pct, cap) / q))
        d = min(d, p_inv - 1)
        while q * d <= _tolerance_cents(q * (p_inv - d), pct, cap) and d < p_inv - 1:
            d += 1
        pair = _pair(b, idx, vendors, q, p_inv, p_inv - d, int(next(po_numbers)), bank=None)
        b.add_defect(idx, "price_over_po", "THREE_WAY_MISMATCH", [pair[0], pair[1], policy], q * d,
                     facts=[f"{{D:{pair[1]}}}", total / 100, q * (p_inv - d) / 100, q * d / 100,
                            _tolerance_fact(q * (p_inv - d), pct, cap)])
    for idx in bank_def:
        q, p_inv = units(idx)
        remit = b.bank_account()
        inv, _po = _pair(b, idx, vendors, q, p_inv, p_inv, int(next(po_numbers)), bank=remit)
        # the amount recorded is the payment at risk: the expense itself is not misstated
        b.add_defect(idx, "bank_account_mismatch", "THREE_WAY_MISMATCH", [inv, "master:vendors", policy],
                     facts=[f"{{D:{inv}}}", remit, vendors[str(e["vendor_id"][idx])]["bank_account"]])
    for idx in qty_def:
        q, p_inv = units(idx)
        # billed for the whole order, but the goods receipt shows part of it never arrived
        short = int(rng.integers(1, max(1, q // 3) + 1))
        pair = _pair(b, idx, vendors, q, p_inv, p_inv, int(next(po_numbers)), bank=None, received=q - short)
        b.add_defect(idx, "quantity_over_receipt", "THREE_WAY_MISMATCH", [pair[0], pair[1], policy], short * p_inv,
                     facts=[f"{{D:{pair[1]}}}", q, q - short])
    for idx in decoys:
        q, p_inv = units(idx)
        frac = float(rng.uniform(0.15 + 0.6 * near, 0.45 + 0.5 * near))
        d = max(1, int(frac * _tolerance_cents(q * p_inv, pct, cap) / q))
        while d > 1 and q * d > _tolerance_cents(q * (p_inv - d), pct, cap):
            d -= 1
        pair = _pair(b, idx, vendors, q, p_inv, p_inv - d, int(next(po_numbers)), bank=None)
        b.add_decoy(idx, "price_variance_within_tolerance", [pair[0], pair[1], policy],
                    facts=[f"{{D:{pair[1]}}}", q * p_inv / 100, q * (p_inv - d) / 100,
                           _tolerance_fact(q * (p_inv - d), pct, cap)])
    for idx in clean:
        q, p_inv = units(idx)
        # an exact match, or an invoice under the PO (a negotiated discount), both fine under the policy
        p_po = p_inv if rng.random() < 0.6 else p_inv + int(rng.integers(1, max(2, p_inv // 20)))
        # sometimes a partial delivery, invoiced for what was received (fine under section 6)
        ordered = q + (int(rng.integers(1, 6)) if rng.random() < 0.3 else 0)
        _pair(b, idx, vendors, q, p_inv, p_po, int(next(po_numbers)), bank=None, ordered=ordered, received=q)
    # the client's PBC note says which items the pack covers, so invoices without documents are not "unsupported"
    sample = np.sort(np.concatenate([price_def, bank_def, qty_def, decoys, clean]).astype(np.int64))
    refs = ", ".join(sorted(str(e["reference"][i]) for i in sample))
    b.add_document(
        "memo", "PBC list - accounts payable vouching sample",
        "Provided by client (PBC) for the FY2025 audit. As requested in the audit request list, "
        f"Accounts Payable has provided the vendor invoice and the approved purchase order for each of the {len(sample)} "
        f"AP invoices the auditors selected for three-way match testing: {refs}. Vendor bank details are maintained "
        "in the vendor master only. Invoices outside the selection were not requested.",
        "2026-01-20",
    )


def _pair(b, idx: int, vendors: dict, q: int, p_inv: int, p_po: int, po_no: int, bank: str | None,
          ordered: int | None = None, received: int | None = None) -> tuple[int, int]:
    """Add the vendor invoice (``q`` units at ``p_inv``) and its purchase order (``ordered`` units at
    ``p_po``, of which ``received`` arrived; both default to ``q``) for entry ``idx``; returns their handles."""
    ordered = q if ordered is None else ordered
    received = ordered if received is None else received
    rng = b.rng
    e = b.e
    v = vendors[str(e["vendor_id"][idx])]
    # the entry is coded to the account of what the vendor sells
    e["debit_account"][idx] = _ACCOUNT.get(v["name"], str(e["debit_account"][idx]))
    ref = str(e["reference"][idx])
    po = f"PO-{po_no}"
    item = _ITEMS.get(v["name"], "goods and services per quotation")
    inv_date = b.date_str(e["doc_date"][idx])
    lead = int(rng.integers(10, 45))
    po_date = b.date_str(e["doc_date"][idx] - lead)
    gr_date = b.date_str(e["doc_date"][idx] - int(rng.integers(0, min(lead, 8))))
    remit = bank or v["bank_account"]
    bank_name = _BANKS[int(rng.integers(0, len(_BANKS)))]
    inv_body = (
        f"INVOICE {ref}\n"
        f"From: {v['name']} (our vendor no. {v['vendor_id']})\n"
        f"Bill to: {b.facts['company_name']}, Accounts Payable, 400 Harbor Way, Columbus OH\n"
        f"Invoice date: {inv_date}    Terms: net 30\n"
        f"Your purchase order: {po}\n"
        f"Line 1: {item} - quantity {q} at {_usd(p_inv)} each = {_usd(q * p_inv)}\n"
        f"Invoice total: {_usd(q * p_inv)}\n"
        f"Remit payment to: {bank_name}, account {remit}\n"
        "Thank you for your business."
    )
    approver = ("GSILVA", "HJOHANSSON", "FNGUYEN")[int(rng.integers(0, 3))]
    po_body = (
        f"PURCHASE ORDER {po}\n"
        f"Buyer: {b.facts['company_name']}, Procurement\n"
        f"Vendor: {v['name']} (vendor no. {v['vendor_id']})\n"
        f"Order date: {po_date}\n"
        f"Line 1: {item} - quantity {ordered} at {_usd(p_po)} each = {_usd(ordered * p_po)}\n"
        f"PO total: {_usd(ordered * p_po)}\n"
        f"Approved in ERP by {approver}. Prices are firm for the term of this order; deliver to Columbus OH.\n"
        f"PO history: goods receipt GR-{int(rng.integers(5_000_000, 5_099_999))} posted {gr_date}, quantity {received} "
        "received in good order."
    )
    inv = b.add_document("invoice", f"Vendor invoice {ref} - {v['name']}", inv_body, inv_date)
    pod = b.add_document("purchase_order", f"Purchase order {po} - {v['name']}", po_body, po_date)
    return inv, pod


# ----------------------------------------------------------------------------- strategies
def _money(pattern: str, text: str) -> float | None:
    m = re.search(pattern + r"\s*" + _MONEY, text)
    return float(m.group(1).replace(",", "")) if m else None


def _parse_invoice(body: str) -> dict:
    po = re.search(r"purchase order:\s*(PO-\d+)", body)
    vid = re.search(r"vendor no\. (V\d+)", body)
    bank = re.search(r"Remit payment to:.*account (\S+)", body)
    qty = re.search(r"quantity (\d+) at", body)
    return {"qty": int(qty.group(1)) if qty else None,
            "po": po.group(1) if po else None, "vendor_id": vid.group(1) if vid else None,
            "total": _money("Invoice total:", body), "bank": bank.group(1) if bank else None}


def _sample(kit: Kit):
    """The vouching sample: invoice and PO listings (PO number -> doc id) and the matching entries."""
    docs = yield from kit.documents()
    invoices = [d for d in docs if d["doc_type"] == "invoice"]
    pos = {}
    for d in docs:
        m = re.search(r"\bPO-\d+", d["title"]) if d["doc_type"] == "purchase_order" else None
        if m:
            pos[m.group(0)] = d["doc_id"]
    refs = {}
    for d in invoices:
        m = re.search(r"\bINV-\d+", d["title"])
        if m:
            refs[m.group(0)] = d["doc_id"]
    entries = {}
    if refs:
        rows = yield from kit.ledger(filters=[{"column": "reference", "op": "in", "value": sorted(refs)},
                                              {"column": "line_no", "op": "eq", "value": 1}],
                                     columns=["entry_id", "reference", "debit", "vendor_id"])
        entries = {e["reference"]: e for e in entries_of(rows).values()}
    return docs, refs, pos, entries


def _vouch(kit: Kit, inv_doc: str, pos: dict):
    """Open an invoice and its PO; returns (invoice fields, PO doc id, PO total)."""
    inv = _parse_invoice((yield from kit.open(inv_doc)).get("body", ""))
    po_doc = pos.get(inv["po"]) if inv["po"] else None
    if po_doc is None and inv["po"] and kit.has("search_documents"):
        hits = (yield from kit.call("search_documents", query=f"purchase order {inv['po']}")).get("documents", [])
        po_doc = hits[0]["doc_id"] if hits else None
    po_total = None
    inv["received"] = None
    if po_doc:
        body = (yield from kit.open(po_doc)).get("body", "")
        po_total = _money("PO total:", body)
        got = re.search(r"quantity (\d+) received", body)
        inv["received"] = int(got.group(1)) if got else None
    return inv, po_doc, po_total


def naive(kit: Kit):
    """Flags every invoice above its PO or paid to another bank account, without reading the policy's tolerance."""
    _docs, refs, pos, entries = yield from _sample(kit)
    banks = {v["vendor_id"]: v["bank_account"] for v in (yield from kit.master("vendors"))}
    n = 0
    for ref, inv_doc in sorted(refs.items()):
        if kit.calls_left <= 4 or ref not in entries:
            break
        inv, po_doc, po_total = yield from _vouch(kit, inv_doc, pos)
        eid = entries[ref]["entry_id"]
        ev = [inv_doc] + ([po_doc] if po_doc else [])
        if inv["bank"] and inv["bank"] != banks.get(inv["vendor_id"]):
            yield from kit.flag(eid, "THREE_WAY_MISMATCH", ev + ["master:vendors"], f"Entry {eid}: invoice {ref} bank account differs from the vendor master.")
            n += 1
        elif po_total is not None and inv["total"] is not None and inv["total"] > po_total + 0.004:
            yield from kit.flag(eid, "THREE_WAY_MISMATCH", ev, f"Entry {eid}: invoice {ref} total {inv['total']:.2f} exceeds PO total {po_total:.2f}.")
            n += 1
    yield from kit.submit(f"Flagged {n} invoices that do not match their PO or vendor master.")


def careful(kit: Kit):
    """Reads the tolerance from the policy, vouches each invoice to its PO and the vendor master, flags beyond tolerance."""
    docs, refs, pos, entries = yield from _sample(kit)
    pol = sorted((d for d in docs if d["doc_type"] == "policy"),
                 key=lambda d: ("three-way" not in d["title"].lower(), d["doc_id"]))
    policy = pol[0]["doc_id"] if pol else None
    pct, cap = 0.0, 0.0
    if policy:
        body = (yield from kit.open(policy)).get("body", "")
        m = re.search(r"no more than ([\d.]+)% of the PO value or USD ([\d,]+\.\d\d)", body)
        if m:
            pct, cap = float(m.group(1)), float(m.group(2).replace(",", ""))
    ev_pol = [policy] if policy else []
    banks = {v["vendor_id"]: v["bank_account"] for v in (yield from kit.master("vendors"))}
    flags = clears = 0
    deferred = []
    for ref, inv_doc in sorted(refs.items()):
        if kit.calls_left <= 4 or ref not in entries:
            continue
        eid = entries[ref]["entry_id"]
        posted = entries[ref]["total_debit"]
        inv, po_doc, po_total = yield from _vouch(kit, inv_doc, pos)
        ev = [inv_doc] + ([po_doc] if po_doc else [])
        master_bank = banks.get(inv["vendor_id"])
        if inv["bank"] and master_bank and inv["bank"] != master_bank:
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + ["master:vendors", *ev_pol],
                f"Entry {eid}: invoice {ref} ({inv_doc}) asks for payment of {posted:.2f} to bank account {inv['bank']}, "
                f"but the vendor master holds {master_bank} for {inv['vendor_id']}; section 5.2 of the policy forbids "
                f"paying to remittance details that differ from the master.")
            flags += 1
            continue
        if inv["qty"] is not None and inv["received"] is not None and inv["qty"] > inv["received"]:
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + [*ev_pol],
                f"Entry {eid}: invoice {ref} bills {inv['qty']} units but the goods receipt on PO {inv['po']} "
                f"({po_doc}) shows {inv['received']} received; section 5.0 of the policy forbids paying for more.")
            flags += 1
            continue
        if po_total is None or inv["total"] is None:
            continue
        excess = round(inv["total"] - po_total, 2)
        tol = round(min(po_total * pct / 100.0, cap), 2)
        if excess > tol + 0.004:
            yield from kit.flag(
                eid, "THREE_WAY_MISMATCH", ev + ["master:vendors", *ev_pol],
                f"Entry {eid}: invoice {ref} total {inv['total']:.2f} exceeds PO {inv['po']} ({po_doc}) total "
                f"{po_total:.2f} by {excess:.2f}, above the tolerance of {tol:.2f} ({pct:g}% or USD {cap:.2f}, "
                f"whichever is lower); the excess was posted without a PO change.")
            flags += 1
        elif excess > 0.004:
            yield from kit.clear(
                eid, ev + ["master:vendors", *ev_pol],
                f"Entry {eid}: invoice {ref} total {inv['total']:.2f} exceeds PO {inv['po']} ({po_doc}) total "
                f"{po_total:.2f} by {excess:.2f}, within the tolerance of {tol:.2f} ({pct:g}% or USD {cap:.2f}, "
                f"whichever is lower); quantity agrees with the goods receipt, vendor and bank with the master.")
            clears += 1
        else:
            deferred.append((eid, ref, inv, po_doc, po_total, ev))
    # exact matches are clean either way: clear them only with the calls that are left
    for eid, ref, inv, po_doc, po_total, ev in deferred:
        if kit.calls_left <= 2:
            break
        yield from kit.clear(eid, ev + ["master:vendors"],
                             f"Entry {eid}: invoice {ref} total {inv['total']:.2f} does not exceed PO {inv['po']} "
                             f"({po_doc}) total {po_total:.2f}; vendor and bank agree with the master.")
        clears += 1
    yield from kit.submit(f"Vouched {len(refs)} invoices to PO and vendor master: {flags} flagged, {clears} cleared.")
