"""JE-9 (L3): cut-off.

Planted, two kinds of cut-off error (misstatement = the entry amount):

* **revenue before shipment**: a customer invoice (DR 1100 / CR 4000) posted on a period-end
  date whose delivery note shows the goods left the warehouse in the *next* period. Required
  evidence: the delivery note, the billing entry (``get_entry``) and the revenue and cut-off policy.
* **entry after close**: a manual entry posted into a period but recorded (entry timestamp) after
  that period's close date in the close calendar. Required evidence: the entry, ``master:calendar``
  and the policy.

Decoys: revenue posted on a period end whose delivery note shows shipment on or before that date
(cleared by the delivery note and the policy), and manual entries recorded after the period end
but on or before the close date, i.e. normal close work (cleared by ``master:calendar``).
``near_miss`` moves decoy ship dates towards the period end and decoy entry dates towards the
close date.

The base population is made clean for the rule: base customer invoices never post on a period
end (they are moved to the day before) and base entries are always recorded on their posting date.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import HOLIDAY_DATES, month_close_dates, month_end

SPEC = spec(
    "JE-9",
    "L3",
    'Cut-off',
    objective='Find revenue recorded before the goods shipped and entries recorded after the period was closed; state the misstatement amount.',
    defect='cut-off: revenue recorded before shipment / entry after close',
    decoys='entries legitimately dated at period end',
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
REVENUE_ACCOUNTS = ("4000", "4100")
_CARRIERS = ("UPS Freight", "FedEx Freight", "XPO Logistics", "Bluegate Logistics", "Yellowstone Freight")
_SHIP_DATE = re.compile(r"Ship date[^:]*:\s*(\d{4}-\d{2}-\d{2})")
_SO_REF = re.compile(r"\bSO-\d+\b")


def _policy_body(year_end_close: str) -> str:
    return (
        "1. Scope. This policy applies to all revenue and to every journal entry posted to a monthly period of "
        "FY2025.\n"
        "2. Product revenue (account 4000) is recognised when control of the goods passes to the customer. Under "
        "the company's standard terms of sale (FCA our warehouse) control passes on the ship date recorded on the "
        "delivery note, when the goods are handed to the carrier. Goods that leave the warehouse after the last day "
        "of a period may not be billed into that period; the billing belongs to the period of shipment.\n"
        "3. Delivery notes for all sales orders billed on the last day of a month are retained in the audit "
        "support pack under the sales order reference (SO-…).\n"
        "4. Period close. Each monthly period is closed on the close date set in the financial close calendar "
        "(master data calendar, kind period_close). Entries recorded up to and including the close date may still "
        "be posted into the period being closed; this is normal close work. After the close date the period is "
        "locked: entries recorded later must be posted to the current open period and may not be back-dated into "
        f"a closed period. The FY2025 year-end close date is {year_end_close}.\n"
        "5. Cut-off errors are corrected in the period to which the transaction belongs; the amount of the "
        "misstatement is the amount recorded in the wrong period."
    )


def plant(b) -> None:
    """Plant revenue-before-shipment and entry-after-close errors, period-end and close-window decoys."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    closes = dict(month_close_dates())
    policy = b.add_document("policy", POLICY_TITLE, _policy_body(b.facts["year_end_close"]), "2024-11-29")
    b.facts["brief_notes"] = {"year end close": f"the FY2025 books were closed on {b.facts['year_end_close']}"}

    post = e["post_date"]
    last_day = (post.astype("datetime64[M]") + 1).astype("datetime64[D]") - 1
    is_rev = e["template"] == "customer_invoice"
    # sanitise the base: only planted revenue sits on a period end, every base entry is recorded
    # on its posting date (so nothing else is entered after period end, let alone after close)
    move = is_rev & (post == last_day)
    e["post_date"][move] = post[move] - 1
    e["entry_date"][:] = e["post_date"]
    e["doc_date"][:] = np.minimum(e["doc_date"], e["post_date"])

    n_rev_def = (b.n_defects + int(rng.integers(0, 2))) // 2
    n_rev_dec = (b.n_decoys + int(rng.integers(0, 2))) // 2
    n_late_def, n_late_dec = b.n_defects - n_rev_def, b.n_decoys - n_rev_dec

    rev_def = b.pick(n_rev_def, is_rev, what="customer invoices")
    rev_dec = b.pick(n_rev_dec, is_rev, what="customer invoices")
    late_pool = e["manual"] & ~np.isin(e["template"], ["customer_invoice", "customer_receipt"])
    late_def = b.pick(n_late_def, late_pool, what="manual entries")
    late_dec = b.pick(n_late_dec, late_pool, what="manual entries")

    for idx in rev_def:
        pe = _to_period_end(b, idx)
        ship = pe + int(rng.integers(1, 12))
        doc = _delivery_note(b, idx, ship)
        b.add_defect(idx, "revenue_before_shipment", "CUTOFF", [doc, "entry", policy], int(e["credit_cents"][idx]))
    for idx in rev_dec:
        pe = _to_period_end(b, idx)
        max_gap = int(round((1 - near) * 8))
        ship = pe - int(rng.integers(0, max_gap + 1))
        doc = _delivery_note(b, idx, ship)
        b.add_decoy(idx, "period_end_revenue_shipped", [doc, policy])
    for idx in late_def:
        m = int(rng.integers(1, 13))
        close = np.datetime64(closes[f"2025-{m:02d}"])
        b.post_late(idx, m, np.busday_offset(close, int(rng.integers(1, 9)), roll="forward", holidays=HOLIDAY_DATES))
        b.add_defect(idx, "entry_after_close", "CUTOFF", ["entry", "master:calendar", policy], int(e["debit_cents"][idx]))
    for idx in late_dec:
        m = int(rng.integers(1, 13))
        close = np.datetime64(closes[f"2025-{m:02d}"])
        me = np.datetime64(f"2025-{m:02d}", "M").astype("datetime64[D]")
        window = np.arange(month_end(me) + 1, close + 1, dtype="datetime64[D]")
        window = window[np.is_busday(window, holidays=HOLIDAY_DATES)]
        lo = int(near * (len(window) - 1))
        b.post_late(idx, m, window[int(rng.integers(lo, len(window)))])
        b.add_decoy(idx, "recorded_before_close", ["master:calendar", policy])

    # delivery notes for a few ordinary (mid-month) sales, so the shipping file is not only period-end items
    others = np.flatnonzero(is_rev & ~b.used)
    if len(others):
        for idx in np.sort(rng.choice(others, size=min(len(others), int(rng.integers(3, 7))), replace=False)):
            _delivery_note(b, idx, e["post_date"][idx] - int(rng.integers(0, 4)))


def _to_period_end(b, idx: int) -> np.datetime64:
    """Move a customer invoice to the last day of its month, as product revenue."""
    e = b.e
    pe = month_end(e["post_date"][idx])
    e["post_date"][idx] = pe
    e["entry_date"][idx] = pe
    e["doc_date"][idx] = pe - int(b.rng.integers(0, 2))
    e["credit_account"][idx] = "4000"
    return pe


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
    return b.add_document("shipping_document", f"Delivery note DN-{dn} - {ref} {customer}", body, ship_s)


# ----------------------------------------------------------------------------- strategies
def _period_end(day: str) -> str:
    return str(month_end(np.datetime64(day[:10])))


def _scan(kit: Kit):
    """Entry headers (line 1) and revenue lines of the slice: the cut-off population."""
    heads = yield from kit.ledger(filters=[{"column": "line_no", "op": "eq", "value": 1}],
                                  columns=["entry_id", "posting_date", "entry_timestamp", "debit", "source"])
    rev = yield from kit.ledger(filters=[{"column": "account", "op": "in", "value": list(REVENUE_ACCOUNTS)}],
                                columns=["entry_id", "account", "posting_date", "credit", "reference"])
    return entries_of(heads), rev


def naive(kit: Kit):
    """Flags all revenue on a period end and every entry recorded after its period end, without the calendar or delivery notes."""
    heads, rev = yield from _scan(kit)
    flags = []
    for r in rev:
        if r["posting_date"] == _period_end(r["posting_date"]):
            flags.append((r["entry_id"], r["credit"], f"Revenue {r['reference']} of {r['credit']:.2f} booked on the period end {r['posting_date']}."))
    for eid, h in sorted(heads.items()):
        if h["entry_timestamp"][:10] > _period_end(h["posting_date"]):
            flags.append((eid, h["total_debit"], f"Entry recorded {h['entry_timestamp'][:10]} after its period end ({h['posting_date']})."))
    for eid, amount, why in flags:
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "CUTOFF", [], f"Entry {eid}: {why}", amount=amount)
    yield from kit.submit(f"Flagged {len(flags)} period-end and late-recorded entries.")


def careful(kit: Kit):
    """Reads the policy and close calendar, then vouches period-end revenue to delivery notes and
    compares every entry's recording date with its period's close date."""
    policy = yield from kit.find_document("cut-off close", "cut-off")
    pol = [policy] if policy else []
    if policy:
        yield from kit.open(policy)
    cal = yield from kit.master("calendar")
    closes = {}
    for r in cal:
        m = re.search(r"(\d{4}-\d{2})", r.get("description", ""))
        if r.get("kind") == "period_close" and m:
            closes[m.group(1)] = r["date"][:10]
    heads, rev = yield from _scan(kit)

    late_flags, late_clears = [], []
    for eid, h in sorted(heads.items()):
        rec, posted = h["entry_timestamp"][:10], h["posting_date"]
        close = closes.get(posted[:7])
        if close and rec > close:
            late_flags.append((eid, h, close))
        elif rec > _period_end(posted):
            late_clears.append((eid, h, close))

    period_end_rev = [r for r in rev if r["posting_date"] == _period_end(r["posting_date"])]
    notes = {}
    if period_end_rev:
        for d in (yield from kit.documents("shipping_document")):
            m = _SO_REF.search(d["title"])
            if m:
                notes.setdefault(m.group(0), d["doc_id"])

    # entries after close need no document beyond the calendar: dispose of them first
    for eid, h, close in late_flags:
        if kit.calls_left <= 3:
            break
        entry = yield from kit.call("get_entry", entry_id=eid)
        amount = entry.get("total_debit", h["total_debit"])
        yield from kit.flag(
            eid, "CUTOFF", [eid, "master:calendar", *pol],
            f"Entry {eid} is posted on {h['posting_date']} (period {h['posting_date'][:7]}) but was recorded on "
            f"{h['entry_timestamp'][:10]}, after that period's close date {close} in the close calendar; the policy "
            f"locks closed periods, so {amount:.2f} is recorded in the wrong period.", amount=amount)

    rev_flags, rev_clears = [], []
    for r in period_end_rev:
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
        (rev_flags if m.group(1) > r["posting_date"] else rev_clears).append((r, doc_id, m.group(1)))

    for r, doc_id, ship in rev_flags:
        if kit.calls_left <= 3:
            break
        eid = r["entry_id"]
        yield from kit.call("get_entry", entry_id=eid)
        yield from kit.flag(
            eid, "CUTOFF", [doc_id, eid, *pol],
            f"Entry {eid} books revenue {r['reference']} of {r['credit']:.2f} on {r['posting_date']}, but delivery "
            f"note {doc_id} shows the goods shipped on {ship}, in the next period; under the policy revenue is "
            f"recognised at shipment, so {r['credit']:.2f} of revenue is recorded too early.", amount=r["credit"])
    for r, doc_id, ship in rev_clears:
        if kit.calls_left <= 2:
            break
        eid = r["entry_id"]
        yield from kit.clear(eid, [doc_id, *pol],
                             f"Entry {eid}: revenue {r['reference']} of {r['credit']:.2f} booked on {r['posting_date']}; "
                             f"delivery note {doc_id} shows shipment on {ship}, on or before the period end, so cut-off is correct.")
    for eid, h, close in late_clears:
        if kit.calls_left <= 2:
            break
        yield from kit.clear(eid, ["master:calendar", *pol],
                             f"Entry {eid} posted {h['posting_date']} was recorded on {h['entry_timestamp'][:10]}, after the "
                             f"period end but on or before the close date {close}: normal close work per the calendar.")
    yield from kit.submit(
        f"Cut-off review: {len(late_flags)} entries recorded after close and {len(rev_flags)} sales billed before "
        f"shipment flagged; {len(rev_clears) + len(late_clears)} period-end items cleared.")
