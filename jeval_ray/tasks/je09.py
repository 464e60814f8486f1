"""JE-9 (L3): year-end cut-off.

An annual audit tests cut-off at the year end (AS 2401.62, entries at the end of a reporting
period and post-closing entries): misstatements between two months of the same year do not
change the year's figures, so everything planted here sits at the FY2025 year end. Every
candidate's kind is drawn first and its label (defect or decoy) independently, so defects and
decoys of a kind share one listing surface; only the documents tell them apart.

Planted defects (criteria ``CUTOFF``, misstatement = the entry amount):

* ``revenue_before_shipment``: a customer invoice (DR 1100 / CR 4000) billed in the last week of
  the year (2025-12-24 to 2025-12-31) whose delivery note shows the goods left the warehouse in
  January 2026. Required evidence: the delivery note, the billing entry (``get_entry``) and the
  revenue and cut-off policy. Decisive facts: the delivery note, its ship date, the billing date
  and the amount.
* ``post_closing_entry_unauthorised``: a manual accrual or vendor invoice posted into December
  2025 but recorded after the year-end close date of ``master:calendar`` (2026-01-09) without a
  post-closing adjustment request that authorises it: none exists, or (with probability
  ``near_miss``) the request was rejected, approved only after the entry was recorded, or
  approved for a smaller amount. Required evidence: the entry, ``master:calendar``, the policy
  (and the request, where one exists). Decisive facts: the recording date, the close date, the
  amount (and the request with its approval date, "rejected" or the amount approved).

Decoys of the same two kinds:

* ``year_end_revenue_shipped``: billed in the same window, shipped on or before 2025-12-31
  (sometimes after the billing date, still within the year). Cleared by the delivery note and the
  policy. Decisive facts: the delivery note, its ship date and the billing date.
* ``post_closing_entry_approved``: recorded after the close like the defects, under a request
  approved by the Controller and the CFO after the close and before the entry was recorded, for
  the amount posted (the policy allows exactly this). Cleared by the request, ``master:calendar``
  and the policy. Decisive facts: the request, its approval date and the recording date.

``near_miss`` moves decoy ship dates towards the year end and defect ship dates towards
2026-01-01. A few ordinary manual entries posted on 2025-12-31 and recorded between the year end
and the close date (normal close work) are caught by the naive rule as well; they are not
planted. Delivery notes of a few ordinary sales earlier in the year complete the shipping file.

The base population is made clean for the rule: base customer invoices are moved out of the
year-end window and base entries are always recorded on their posting date.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import HOLIDAY_DATES, month_end

SPEC = spec(
    "JE-9",
    "L3",
    'Cut-off',
    objective='Find revenue recorded before the goods shipped and entries recorded after the period was closed; state the misstatement amount.',
    defect='cut-off: revenue recorded before shipment / entry after close',
    decoys='year-end sales shipped in time; post-closing entries approved before they were recorded',
    required_evidence='close calendar, shipping documents, invoice',
    sources=('general_ledger', 'close_calendar', 'shipping_documents', 'invoices'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('CUTOFF', 'revenue recorded before shipment, or an entry recorded after the period close'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
)

POLICY_TITLE = "Revenue recognition and period-end cut-off policy"
REQUEST_TITLE = "Post-closing adjustment request"
REVENUE_ACCOUNTS = ("4000", "4100")
#: the year-end cut-off window: sales billed in these days are vouched to their delivery notes
WINDOW_START, YEAR_END = "2025-12-24", "2025-12-31"
_CARRIERS = ("UPS Freight", "FedEx Freight", "XPO Logistics", "Bluegate Logistics", "Yellowstone Freight")
_SHIP_DATE = re.compile(r"Ship date[^:]*:\s*(\d{4}-\d{2}-\d{2})")
_SO_REF = re.compile(r"\bSO-\d+\b")
#: the warehouse ships on business days (New Year's Day 2026 included)
_SHIP_HOLIDAYS = np.append(HOLIDAY_DATES, np.datetime64("2026-01-01"))
_REASONS = {
    "accrual": ("true-up of the December accrual to the final supplier statement",
                "audit adjustment to the December accrual proposed by the external auditors and agreed by management"),
    "vendor_invoice": ("vendor invoice for December services received after the close",
                       "audit adjustment proposed by the external auditors: unrecorded December liability"),
}


def _policy_body(year_end_close: str) -> str:
    return (
        "1. Scope. This policy applies to all revenue and to every journal entry posted to a period of FY2025, "
        "and in particular to the fiscal year end (2025-12-31).\n"
        "2. Product revenue (account 4000) is recognised when control of the goods passes to the customer. Under "
        "the company's standard terms of sale (FCA our warehouse) control passes on the ship date recorded on the "
        "delivery note, when the goods are handed to the carrier. Goods that leave the warehouse after the last day "
        "of a period may not be billed into that period; the billing belongs to the period of shipment.\n"
        f"3. Year-end cut-off. Delivery notes for all sales billed in the last week of the fiscal year ({WINDOW_START} "
        f"to {YEAR_END}) are retained in the audit support pack under the sales order reference (SO-...).\n"
        "4. Period close. Each period is closed on the close date set in the financial close calendar (master data "
        "calendar, kind period_close). Entries recorded up to and including the close date may still be posted "
        "into the period being closed; this is normal close work. After the close date the period is locked: "
        "entries recorded later are posted to the current open period. An entry may be posted into a closed "
        "period only under a post-closing adjustment request approved by the Controller and the CFO before the "
        "entry is recorded, for the reference and the amount approved. The FY2025 year-end close date is "
        f"{year_end_close}.\n"
        "5. Cut-off errors are corrected in the period to which the transaction belongs; the amount of the "
        "misstatement is the amount recorded in the wrong period."
    )


def plant(b) -> None:
    """Plant year-end revenue billed before shipment and unauthorised post-closing entries, with
    decoys of the same surface: year-end sales shipped in time and approved post-closing entries."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    close = np.datetime64(b.facts["year_end_close"])
    year_end, window_start = np.datetime64(YEAR_END), np.datetime64(WINDOW_START)
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(b.facts["year_end_close"]), "2024-11-29")
    b.facts["brief_notes"] = {"year end close": f"the FY2025 books were closed on {b.facts['year_end_close']}"}

    post = e["post_date"]
    is_rev = e["template"] == "customer_invoice"
    # sanitise the base: only planted revenue sits in the year-end window, every base entry is
    # recorded on its posting date (so nothing else is entered after its period end)
    move = is_rev & (post >= window_start)
    e["post_date"][move] = window_start - 1 - rng.integers(0, 20, int(move.sum()))
    e["entry_date"][:] = e["post_date"]
    e["doc_date"][:] = np.minimum(e["doc_date"], e["post_date"])

    # one surface per kind: each candidate's kind is drawn first, its label independently
    n_all = b.n_defects + b.n_decoys
    labels = rng.permutation(np.array([True] * b.n_defects + [False] * b.n_decoys, dtype=bool))
    is_rev_kind = rng.random(n_all) < 0.5
    rev_labels, late_labels = labels[is_rev_kind], labels[~is_rev_kind]
    rev_idx = b.pick(len(rev_labels), is_rev, what="customer invoices")
    late_pool = e["manual"] & np.isin(e["template"], ["accrual", "vendor_invoice"])
    late_idx = b.pick(len(late_labels), late_pool, what="manual accruals and vendor invoices")

    for idx, bad in zip(rev_idx, rev_labels):
        day = window_start + int(rng.integers(0, 8))
        _to_year_end(b, idx, day)
        if bad:
            # shipped in January: revenue of FY2026 billed into FY2025
            ship = np.busday_offset(year_end + 1 + int(rng.integers(0, 1 + int(round((1 - near) * 10)))), 0,
                                    roll="forward", holidays=_SHIP_HOLIDAYS)
        else:
            # shipped on or before the year end (sometimes after the billing date, still in December)
            lo = max(0, int(round((1 - near) * 6)))
            ship = np.busday_offset(min(year_end, day + int(rng.integers(-lo - 1, 3))), 0, roll="backward",
                                    holidays=_SHIP_HOLIDAYS)
        doc = _delivery_note(b, idx, ship)
        facts = [f"{{D:{doc}}}", b.date_str(ship), b.date_str(day)]
        cents = int(e["credit_cents"][idx])
        if bad:
            b.add_defect(idx, "revenue_before_shipment", "CUTOFF", [doc, "entry", policy], cents,
                         facts=[*facts, cents / 100])
        else:
            b.add_decoy(idx, "year_end_revenue_shipped", [doc, policy], facts=facts)

    for idx, bad in zip(late_idx, late_labels):
        k = int(rng.integers(2, 12))
        recorded = np.busday_offset(close, k, roll="forward", holidays=HOLIDAY_DATES)
        # a decision in time falls after the close and before the entry is recorded
        in_time = np.busday_offset(close, int(rng.integers(1, k)), roll="forward", holidays=HOLIDAY_DATES)
        b.post_late(idx, 12, recorded)
        cents = int(e["debit_cents"][idx])
        base = ["entry", "master:calendar", policy]
        facts = [b.date_str(recorded), b.facts["year_end_close"], cents / 100]
        if not bad:
            approved = in_time
            h = _request(b, idx, approved, "approved", cents)
            b.add_decoy(idx, "post_closing_entry_approved", [h, "master:calendar", policy],
                        facts=[f"{{D:{h}}}", b.date_str(approved), b.date_str(recorded)])
        elif rng.random() < near:
            # a request exists, but it does not authorise what was posted
            how = ("late", "rejected", "amount")[int(rng.integers(0, 3))]
            if how == "late":
                # asked in time like the others, approved only after the entry had been recorded
                approved = np.busday_offset(recorded, int(rng.integers(2, 8)), roll="forward", holidays=HOLIDAY_DATES)
                h = _request(b, idx, approved, "approved", cents, asked=in_time)
                extra = [f"{{D:{h}}}", b.date_str(approved)]
            elif how == "rejected":
                h = _request(b, idx, in_time, "rejected", cents)
                extra = [f"{{D:{h}}}", "rejected"]
            else:
                allowed = int(cents * rng.uniform(0.3, 0.8))
                h = _request(b, idx, in_time, "approved", allowed)
                extra = [f"{{D:{h}}}", allowed / 100]
            b.add_defect(idx, "post_closing_entry_unauthorised", "CUTOFF", [*base, h], cents, facts=[*facts, *extra])
        else:
            b.add_defect(idx, "post_closing_entry_unauthorised", "CUTOFF", base, cents, facts=facts)

    # ordinary close work the naive rule also catches: recorded after the year end, on or before the close
    look = b.pick(int(rng.integers(2, 4)), late_pool, what="manual accruals and vendor invoices")
    window = np.arange(year_end + 1, close + 1, dtype="datetime64[D]")
    window = window[np.is_busday(window, holidays=HOLIDAY_DATES)]
    for idx in look:
        b.post_late(idx, 12, window[int(rng.integers(0, len(window)))])

    # delivery notes for a few ordinary sales earlier in the year, so the shipping file is not only year-end items
    others = np.flatnonzero(is_rev & ~b.used)
    if len(others):
        for idx in np.sort(rng.choice(others, size=min(len(others), int(rng.integers(3, 7))), replace=False)):
            _delivery_note(b, idx, e["post_date"][idx] - int(rng.integers(0, 4)))


def _to_year_end(b, idx: int, day: np.datetime64) -> None:
    """Move a customer invoice into the year-end window, as product revenue."""
    e = b.e
    e["post_date"][idx] = day
    e["entry_date"][idx] = day
    e["doc_date"][idx] = day - int(b.rng.integers(0, 2))
    e["credit_account"][idx] = "4000"


def _request(b, idx: int, decided: np.datetime64, status: str, cents: int, asked: np.datetime64 | None = None) -> int:
    """A post-closing adjustment request for entry ``idx`` (its reference), asked shortly before
    ``asked`` (default: the decision) and decided on ``decided``."""
    rng = b.rng
    e = b.e
    no = int(rng.integers(100, 999))
    asked = max(np.busday_offset(decided if asked is None else asked, -int(rng.integers(0, 3)), roll="backward",
                                 holidays=HOLIDAY_DATES), np.datetime64(b.facts["year_end_close"]) + 1)
    decision = (f"Approved by Isabel Brown, Controller, and James Wright, CFO, on {b.date_str(decided)}, for "
                f"USD {cents / 100:,.2f}." if status == "approved" else
                f"Rejected by Isabel Brown, Controller, on {b.date_str(decided)}: post in the open period 2026-01.")
    body = (
        f"Post-closing adjustment request PCA-26-{no}\n"
        f"Closed period: 2025-12 (FY2025 year-end close {b.facts['year_end_close']})\n"
        f"Entry reference: {e['reference'][idx]}\n"
        f"Account: {e['debit_account'][idx]}    Amount requested: USD {int(e['debit_cents'][idx]) / 100:,.2f}\n"
        f"Reason: {_REASONS[str(e['template'][idx])][int(rng.integers(0, 2))]}\n"
        f"Requested by {e['preparer'][idx]} on {b.date_str(asked)}.\n"
        f"Decision: {decision}"
    )
    return b.add_document("memo", f"{REQUEST_TITLE} PCA-26-{no}", body, b.date_str(asked))


def _delivery_note(b, idx: int, ship: np.datetime64) -> int:
    """A delivery note for the sales order of entry ``idx`` with the given ship date."""
    rng = b.rng
    ref = str(b.e["reference"][idx])
    desc = str(b.e["description"][idx])
    m = re.match(r"Billing \S+ (.+)$", desc)
    customer = m.group(1) if m else b.customers[int(rng.integers(0, len(b.customers)))]["name"]
    dn = int(rng.integers(80_000, 99_999))
    units = int(rng.integers(4, 400))
    ship_s = b.date_str(ship)
    body = (
        f"Delivery note DN-{dn}\n"
        f"Shipper: {b.facts['company_name']}, finished goods warehouse, Columbus OH\n"
        f"Customer: {customer}\n"
        f"Sales order / billing reference: {ref}\n"
        f"Ship date (goods handed to carrier): {ship_s}\n"
        f"Carrier: {_CARRIERS[int(rng.integers(0, len(_CARRIERS)))]}, pro number {int(rng.integers(10**8, 10**9))}\n"
        f"Terms: FCA Columbus warehouse\n"
        f"Contents: {units} units, {int(rng.integers(1, 12))} pallets\n"
        "Goods received in good order by the carrier; signed by the dispatch supervisor."
    )
    # a delivery note is dated when it is raised (the order's release, on or before billing): the
    # listing shows that date, the ship date is read in the note
    raised = b.date_str(min(ship, b.e["doc_date"][idx]))
    return b.add_document("shipping_document", f"Delivery note DN-{dn} - {ref} {customer}", body, raised)


# ----------------------------------------------------------------------------- strategies
_REQ = {"ref": re.compile(r"Entry reference: (\S+)"),
        "decision": re.compile(r"Decision: (Approved|Rejected) .*? on (\d{4}-\d{2}-\d{2})"),
        "amount": re.compile(r"on \d{4}-\d{2}-\d{2}, for USD ([\d,]+\.\d\d)")}


def _period_end(day: str) -> str:
    return str(month_end(np.datetime64(day[:10])))


def _scan(kit: Kit, start: str, end: str):
    """Entry headers (line 1) of the slice and the revenue lines billed in the cut-off window."""
    heads = yield from kit.ledger(filters=[{"column": "line_no", "op": "eq", "value": 1}],
                                  columns=["entry_id", "posting_date", "entry_timestamp", "debit", "source", "reference"])
    rev = yield from kit.ledger(filters=[{"column": "account", "op": "in", "value": list(REVENUE_ACCOUNTS)}],
                                columns=["entry_id", "account", "posting_date", "credit", "reference"])
    return entries_of(heads), [r for r in rev if start <= r["posting_date"][:10] <= end]


def naive(kit: Kit):
    """Flags all revenue billed in the last week of the year and every entry recorded after its
    period end, reading neither the calendar, the delivery notes nor the post-closing requests."""
    heads, rev = yield from _scan(kit, WINDOW_START, YEAR_END)
    flags = []
    for r in rev:
        flags.append((r["entry_id"], r["credit"], f"Revenue {r['reference']} of {r['credit']:.2f} booked at the year end on {r['posting_date']}."))
    for eid, h in sorted(heads.items()):
        if h["entry_timestamp"][:10] > _period_end(h["posting_date"]):
            flags.append((eid, h["total_debit"], f"Entry recorded {h['entry_timestamp'][:10]} after its period end ({h['posting_date']})."))
    for eid, amount, why in flags:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "CUTOFF", [], f"Entry {eid}: {why}", amount=amount)
    yield from kit.submit(f"Flagged {len(flags)} year-end and late-recorded entries.")


def careful(kit: Kit):
    """Reads the policy (its cut-off window) and the close calendar, vouches year-end revenue to
    delivery notes, and checks every entry recorded after its period's close against the
    post-closing adjustment requests (approved before recording, for the amount posted)."""
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "cut-off" in d["title"].lower()), None)
    pol = [policy] if policy else []
    start, end = WINDOW_START, YEAR_END
    if policy:
        body = (yield from kit.open(policy)).get("body", "")
        m = re.search(r"last week of the fiscal year \((\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d)\)", body)
        if m:
            start, end = m.group(1), m.group(2)
    cal = yield from kit.master("calendar")
    closes = {}
    for r in cal:
        m = re.search(r"(\d{4}-\d{2})", r.get("description", ""))
        if r.get("kind") == "period_close" and m:
            closes[m.group(1)] = r["date"][:10]
    heads, rev = yield from _scan(kit, start, end)

    late, close_work = [], []
    for eid, h in sorted(heads.items()):
        rec, posted = h["entry_timestamp"][:10], h["posting_date"]
        close = closes.get(posted[:7])
        if close and rec > close:
            late.append((eid, h, close))
        elif rec > _period_end(posted):
            close_work.append((eid, h, close))

    notes = {}
    for d in docs:
        m = _SO_REF.search(d["title"]) if d["doc_type"] == "shipping_document" else None
        if m:
            notes.setdefault(m.group(0), d["doc_id"])
    requests = {}
    if late:
        for d in docs:
            if kit.calls_left <= len(late) + 2 * len(rev) + 2:
                break
            if d["title"].startswith(REQUEST_TITLE):
                body = (yield from kit.open(d["doc_id"])).get("body", "")
                ref, dec, amt = (_REQ[k].search(body) for k in ("ref", "decision", "amount"))
                if ref and dec:
                    requests[ref.group(1)] = (d["doc_id"], dec.group(1), dec.group(2),
                                              float(amt.group(1).replace(",", "")) if amt else None)

    n_flag = n_clear = 0
    for eid, h, close in late:
        if kit.calls_left <= 3:
            break
        rec, amount = h["entry_timestamp"][:10], h["total_debit"]
        req = requests.get(h.get("reference", ""))
        if req and req[1] == "Approved" and req[2] < rec and req[3] is not None and abs(req[3] - amount) < 0.005:
            yield from kit.clear(
                eid, [req[0], "master:calendar", *pol],
                f"Entry {eid} was posted into the closed period {h['posting_date'][:7]} and recorded on {rec}, after the "
                f"close date {close}, under post-closing adjustment request {req[0]}, approved by the Controller and "
                f"the CFO on {req[2]} (before it was recorded) for the amount posted, {amount:,.2f}.")
            n_clear += 1
            continue
        entry = yield from kit.call("get_entry", entry_id=eid)
        amount = entry.get("total_debit", amount)
        if req is None:
            why = "No post-closing adjustment request authorises it."
        elif req[1] == "Rejected":
            why = f"Post-closing request {req[0]} for it was rejected on {req[2]}."
        elif req[2] >= rec:
            why = f"Post-closing request {req[0]} was approved only on {req[2]}, after the entry was recorded."
        else:
            why = f"Post-closing request {req[0]} approved {req[3]:,.2f} only, not the {amount:,.2f} posted."
        yield from kit.flag(
            eid, "CUTOFF", [eid, "master:calendar", *pol, *([req[0]] if req else [])],
            f"Entry {eid} is posted into the closed period {h['posting_date'][:7]} but was recorded on {rec}, after that "
            f"period's close date {close}; the policy locks closed periods, so {amount:.2f} is recorded in the wrong "
            f"period. {why}", amount=amount)
        n_flag += 1

    rev_flags = rev_clears = 0
    for r in rev:
        if kit.calls_left <= 3:
            break
        doc_id = notes.get(r["reference"])
        if doc_id is None and kit.has("search_documents"):
            hits = (yield from kit.call("search_documents", query=f"delivery note {r['reference']}")).get("documents", [])
            doc_id = hits[0]["doc_id"] if hits else None
        if doc_id is None:
            continue
        body = (yield from kit.open(doc_id)).get("body", "")
        m = _SHIP_DATE.search(body)
        if not m:
            continue
        ship, eid = m.group(1), r["entry_id"]
        if ship > _period_end(r["posting_date"]):
            yield from kit.call("get_entry", entry_id=eid)
            yield from kit.flag(
                eid, "CUTOFF", [doc_id, eid, *pol],
                f"Entry {eid} books revenue {r['reference']} of {r['credit']:.2f} on {r['posting_date']}, but delivery "
                f"note {doc_id} shows the goods shipped on {ship}, after the year end; under the policy revenue is "
                f"recognised at shipment, so {r['credit']:.2f} of revenue is recorded in the wrong year.",
                amount=r["credit"])
            rev_flags += 1
        else:
            yield from kit.clear(eid, [doc_id, *pol],
                                 f"Entry {eid}: revenue {r['reference']} billed on {r['posting_date']}; delivery note "
                                 f"{doc_id} shows shipment on {ship}, within the year, so cut-off is correct.")
            rev_clears += 1
    for eid, h, close in close_work:
        if kit.calls_left <= 2:
            break
        yield from kit.clear(eid, ["master:calendar", *pol],
                             f"Entry {eid} posted {h['posting_date']} was recorded on {h['entry_timestamp'][:10]}, after the "
                             f"period end but on or before the close date {close}: normal close work per the calendar.")
    yield from kit.submit(
        f"Cut-off review: {n_flag} entries recorded after close without authorisation and {rev_flags} year-end sales "
        f"billed before shipment flagged; {n_clear + rev_clears} items cleared, {len(close_work)} close-work entries noted.")
