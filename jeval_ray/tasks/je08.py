"""JE-8 (L2): unsupported round-amount entries.

Planted: manual entries for whole thousands of dollars with vague descriptions ("Adj", "Misc
adjustment", "Per CFO" …) that no document in the support pack supports; some carry a reference
that looks like a board resolution number but no such resolution exists, and (more often at a
high ``near_miss``) the pack holds an unrelated document naming the same amount for another
purpose. Required evidence: the entry itself (``get_entry``) and the manual journal entry policy
that demands support. Decoys: round-amount manual entries backed by a board resolution
(``board_minutes``) or a contract that names the amount and the entry's reference; at a high
``near_miss`` their descriptions are as vague as the defects', so only the document separates
them. The base population has no amounts in whole hundreds (the generator guarantees it and
``plant`` re-checks), so nothing outside the planted entries trips the rule.
"""

from __future__ import annotations

import datetime as dt
import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import APPROVERS

SPEC = spec(
    "JE-8",
    "L2",
    'Unsupported round-amount entries',
    objective='Find round-amount manual entries with vague descriptions that no document supports.',
    defect='round-amount manual entry with a vague description and no support',
    decoys='round amounts backed by a board resolution or contract',
    required_evidence='the support document (or its absence)',
    sources=('general_ledger', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNSUPPORTED_ROUND', 'round-amount manual entry with a vague description and no supporting document'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Manual journal entry policy - supporting documentation"
VAGUE = ("Adj", "Misc adjustment", "Per CFO", "Adjustment", "Misc", "Correction per mgmt", "Per discussion", "Year-end adj")
#: (purpose, short description, debit account, credit account)
BOARD_ITEMS = (
    ("a special bonus for the ERP implementation team", "ERP team special bonus", "6000", "2200"),
    ("a charitable donation to the Denver Community Foundation", "Donation Denver Community Foundation", "6700", "2100"),
    ("the settlement of the warranty claim brought by Allied Motors", "Allied Motors warranty settlement", "5000", "2100"),
    ("a contribution to the employee wellness programme", "Employee wellness programme contribution", "6000", "2100"),
    ("the sponsorship of the Colorado Manufacturing Expo", "Colorado Manufacturing Expo sponsorship", "6700", "2100"),
    ("a retention award for the plant leadership team", "Plant leadership retention award", "6000", "2200"),
)
CONTRACT_ITEMS = (
    ("Northstar Consulting", "a fixed-fee operational efficiency review", "Northstar fixed-fee review", "6400", "2100"),
    ("Granite Legal LLP", "the annual legal retainer", "Granite Legal annual retainer", "6400", "2100"),
    ("Lumen Software Inc.", "the enterprise licence true-up", "Lumen licence true-up", "7100", "2100"),
    ("Juniper Marketing Group", "the spring campaign fixed fee", "Juniper spring campaign fee", "6700", "2100"),
    ("Falcon IT Services", "the managed-service onboarding fee", "Falcon IT onboarding fee", "7100", "2100"),
    ("Redwood Maintenance", "the annual preventive maintenance contract", "Redwood annual maintenance", "6600", "2100"),
)
CAPEX_ITEMS = ("a replacement CNC milling machine for the Denver plant", "a forklift fleet upgrade for the warehouse",
               "a new packaging line", "roof replacement at the Commerce City site")


def _usd(cents: int) -> str:
    """An amount as documents print it: ``USD 25,000.00``."""
    return f"USD {cents / 100:,.2f}"


# ------------------------------------------------------------------ world
def _sanitise(b) -> None:
    """The rule is "whole hundreds": move any such base amount off the round figure."""
    e = b.e
    for _ in range(10):
        bad = np.flatnonzero(~b.used & (e["debit_cents"] % 10_000 == 0))
        if not len(bad):
            return
        e["debit_cents"][bad] += 1_737
        e["credit_cents"][bad] += 1_737
    raise RuntimeError("JE-8: could not remove round amounts from the base")  # pragma: no cover


def _carriers(b, k: int, what: str) -> np.ndarray:
    """Manual entries to turn into round-amount entries, preferring GL journals (accruals, reclasses)."""
    gl = b.e["manual"] & np.isin(b.e["template"], ["accrual", "reclass"])
    if int((gl & ~b.used).sum()) >= k:
        return b.pick(k, gl, what=what)
    return b.pick(k, b.e["manual"], what=what)


def _set_amount(b, i: int, cents: int) -> None:
    """Set a round amount and an approver whose limit covers it (never the preparer)."""
    e = b.e
    e["debit_cents"][i] = cents
    e["credit_cents"][i] = cents
    prep = str(e["preparer"][i])
    ok = [a for a in APPROVERS if a != prep and b.user(a)["approval_limit"] * 100 >= cents]
    e["approver"][i] = ok[int(b.rng.integers(0, len(ok)))]


def _round_amounts(b, k: int, idxs: np.ndarray, taken: set) -> list[int]:
    """Whole-thousand amounts, distinct, and outside 80-100% of each preparer's approval limit."""
    out = []
    # USD 2,000-60,000 normally; the range widens only when a huge knob setting needs more values
    top = max(60, 2 * (len(taken) + k) + 10)
    for i in idxs:
        lim = b.user(str(b.e["preparer"][i]))["approval_limit"] * 100
        ok = [c for c in range(2 * 1_000_00, (top + 1) * 1_000_00, 1_000_00)
              if c not in taken and not (0.8 * lim <= c < lim)]
        c = ok[int(b.rng.integers(0, len(ok)))]
        taken.add(c)
        out.append(c)
    return out


def _minutes(b, date: str, item: str) -> int:
    """Board minutes in the company's usual form, with one substantive item."""
    return b.add_document(
        "board_minutes", f"Minutes of the Board of Directors meeting of {date}",
        f"Northwind Components Inc. - minutes of the meeting of the Board of Directors held on {date}.\n"
        "Present: the Chair, four directors, the CEO, the CFO (James Wright); the Controller attended.\n"
        "1. The minutes of the previous meeting were approved.\n"
        "2. The CFO presented the monthly results; the board noted them.\n"
        f"3. {item}\n4. There being no other business, the meeting closed.",
        date,
    )


def plant(b) -> None:
    """Plant the policy, supported round amounts (decoys) and unsupported ones (defects) with near-miss traps."""
    rng = b.rng
    e = b.e
    _sanitise(b)
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 2.1 Every manual journal entry must be supported by source documentation (invoice, contract, "
        "board resolution or a reviewed calculation) whose number is recorded in the entry's reference field. "
        "Section 2.2 The description must state the business purpose of the entry; terms such as 'adjustment' or "
        "'per management' alone are not sufficient. Section 2.3 Entries in round sums require the document that "
        "fixes the amount. Entries without support must not be approved and are reported to the Controller.",
        "2024-10-01",
    )
    taken: set[int] = set()  # only for membership tests
    months = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")

    # ---- decoys: round amounts fixed by a board resolution or a contract named in the reference
    decoys = _carriers(b, b.n_decoys, "round-amount entries with support")
    amounts = _round_amounts(b, b.n_decoys, decoys, taken)
    kinds = rng.random(b.n_decoys) < 0.5
    post_dates = [b.date_str(e["post_date"][i]) for i in decoys]
    doc_dates = [str(np.datetime64(p) - np.timedelta64(int(rng.integers(3, 40)), "D")) for p in post_dates]
    # resolution and contract numbers rise with their dates, as a real register's would
    refs = [""] * b.n_decoys
    counters: dict[tuple[str, str], int] = {}
    for j in sorted(range(b.n_decoys), key=lambda j: (doc_dates[j], j)):
        key = ("BR" if kinds[j] else "CTR", doc_dates[j][:4])
        counters[key] = counters.get(key, int(rng.integers(1, 6) if kinds[j] else rng.integers(10, 40))) + int(rng.integers(1, 4))
        refs[j] = f"BR-{key[1]}-{counters[key]:02d}" if kinds[j] else f"CTR-{key[1]}-{counters[key]:03d}"
    n_board = n_ctr = 0
    board_order = rng.permutation(len(BOARD_ITEMS))
    ctr_order = rng.permutation(len(CONTRACT_ITEMS))
    for j, (i, cents) in enumerate(zip(decoys, amounts)):
        _set_amount(b, int(i), cents)
        post, doc_date, ref = post_dates[j], doc_dates[j], refs[j]
        month = months[int(post[5:7]) - 1]
        if kinds[j]:
            purpose, short, dr, cr = BOARD_ITEMS[int(board_order[n_board % len(BOARD_ITEMS)])]
            n_board += 1
            doc = _minutes(b, doc_date, f"Resolution {ref}: RESOLVED, that the Company approves {purpose} in the "
                                        f"amount of {_usd(cents)}, to be recorded in {month} 2025 under accounting "
                                        f"reference {ref}. The resolution was carried unanimously.")
        else:
            vendor, purpose, short, dr, cr = CONTRACT_ITEMS[int(ctr_order[n_ctr % len(CONTRACT_ITEMS)])]
            n_ctr += 1
            doc = b.add_document(
                "contract", f"Agreement {ref} - {vendor}",
                f"SERVICES AGREEMENT {ref}\nBetween Northwind Components Inc. (the Client) and {vendor} (the Provider), "
                f"dated {doc_date}.\nScope: {purpose}.\nClause 3 Fees: a fixed fee of {_usd(cents)}, exclusive of "
                f"any expenses, earned in {month} 2025 and accrued by the Client on that basis; invoicing follows "
                f"completion. The Client records the fee under reference {ref}.\nSigned for the Client by Isabel "
                f"Brown, Controller, and for the Provider by an authorised signatory.",
                doc_date,
            )
        e["reference"][i] = ref
        e["debit_account"][i] = dr
        e["credit_account"][i] = cr
        vague = rng.random() < b.knobs.near_miss
        e["description"][i] = VAGUE[int(rng.integers(0, len(VAGUE)))] if vague else f"{short} per {ref}"
        b.add_decoy(int(i), "round_amount_with_support", [doc])

    # ---- defects: round amounts, vague descriptions, nothing in the pack supports them
    defects = _carriers(b, b.n_defects, "round-amount entries without support")
    amounts = _round_amounts(b, b.n_defects, defects, taken)
    for j, (i, cents) in enumerate(zip(defects, amounts)):
        _set_amount(b, int(i), cents)
        e["description"][i] = VAGUE[int(rng.integers(0, len(VAGUE)))]
        if rng.random() < 0.3 * b.knobs.near_miss:
            # a resolution number that looks like support, but no such resolution exists
            free = [n for n in range(1, 300) if f"BR-2025-{n:02d}" not in refs]
            refs.append(f"BR-2025-{free[int(rng.integers(0, len(free)))]:02d}")
            e["reference"][i] = refs[-1]
        if rng.random() < 0.4 * b.knobs.near_miss:
            # the same figure approved for something else: matching on the amount alone is not support
            d = str(np.datetime64(b.date_str(e["post_date"][i])) - np.timedelta64(int(rng.integers(5, 60)), "D"))
            capex = f"CAPEX-2025-{int(rng.integers(100, 999))}"
            _minutes(b, d, f"Capital budget request {capex}: RESOLVED, that a capital budget of {_usd(cents)} is "
                           f"approved for {CAPEX_ITEMS[int(rng.integers(0, len(CAPEX_ITEMS)))]}; purchases are to be "
                           "capitalised as property, plant and equipment against supplier invoices. The resolution "
                           "was carried unanimously.")
        b.add_defect(int(i), "unsupported_round_amount", "UNSUPPORTED_ROUND", ["entry", policy], cents)


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "account", "debit", "preparer", "description", "reference"]


def _round_manual(kit: Kit):
    """Manual entries whose amount is a whole number of hundreds (debit lines carry the amount)."""
    rows = yield from kit.ledger(filters=[{"column": "source", "op": "eq", "value": "manual"},
                                          {"column": "line_no", "op": "eq", "value": 1}], columns=_COLS)
    return {r["entry_id"]: r for r in sorted(rows, key=lambda r: r["entry_id"])
            if round(float(r["debit"]) * 100) % 10_000 == 0 and float(r["debit"]) > 0}


def naive(kit: Kit):
    """Flags every round-amount manual entry, without looking for the documents that support some."""
    cands = yield from _round_manual(kit)
    for eid, r in cands.items():
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "UNSUPPORTED_ROUND", [], f"Entry {eid}: manual entry for a round "
                                                          f"{float(r['debit']):,.2f} ('{r['description']}').")
    yield from kit.submit(f"Flagged {len(cands)} round-amount manual entries.")


def careful(kit: Kit):
    """Reads the policy and the board minutes and contracts; clears what a document fixes, flags the rest.

    A round-amount manual entry is supported only by a document dated no later than the entry that
    names both its reference and its amount (a document with the same figure for another purpose
    does not count). Unsupported entries are opened with ``get_entry`` and flagged citing the entry
    and the policy. When the pack holds more minutes and contracts than the budget can read, it
    searches for each entry's reference instead and opens only the documents that mention it;
    entries it cannot resolve within the budget are left undisposed rather than guessed.
    """
    cands = yield from _round_manual(kit)
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "manual journal" in d["title"].lower()), None)
    if policy and cands:
        yield from kit.open(policy)
    support = {d["doc_id"]: d["date"] for d in docs if d["doc_type"] in ("board_minutes", "contract")}
    # a document can only authorise an entry it precedes
    look = {e: [d for d in support if support[d] <= r["posting_date"]] for e, r in cands.items()}
    bodies: dict[str, str] = {}
    flagged: list[str] = []
    cleared: list[str] = []

    def backing(eid):
        r = cands[eid]
        amt = f"USD {float(r['debit']):,.2f}"
        ref = r["reference"]
        return next((d for d in look[eid] if d in bodies and amt in bodies[d]
                     and ref and re.search(rf"\b{re.escape(ref)}\b", bodies[d])), None)

    def flag(eid):
        ent = yield from kit.call("get_entry", entry_id=eid)
        ev = [eid] + ([policy] if policy else [])
        yield from kit.flag(
            eid, "UNSUPPORTED_ROUND", ev,
            f"Entry {eid}: manual round amount {float(ent.get('total_debit', 0)):,.2f}, description "
            f"'{ent.get('description')}', reference {ent.get('reference')}; no board minute or contract in the pack "
            f"names this reference and amount, so it lacks the support required by {policy or 'the JE policy'}.")
        flagged.append(eid)

    def clear(eid):
        r, doc = cands[eid], backing(eid)
        yield from kit.clear(
            eid, [doc], f"Entry {eid}: round amount {float(r['debit']):,.2f} under reference {r['reference']} is "
                        f"fixed by {doc} (dated {support[doc]}), which names the same reference and amount.")
        cleared.append(eid)

    needed = set().union(*look.values()) if look else set()
    if cands and kit.has("search_documents") and len(needed) + 2 * len(cands) + 2 > kit.calls_left:
        # too many documents to read them all: search each reference; no hit means no support
        deferred = []
        for eid, r in cands.items():
            if kit.calls_left <= 3:
                break
            hits = (yield from kit.call("search_documents", query=r["reference"])).get("documents", [])
            look[eid] = [h["doc_id"] for h in hits if h["doc_id"] in look[eid]]
            if look[eid]:
                deferred.append(eid)
            else:
                yield from flag(eid)
        for eid in deferred:
            for d in look[eid]:
                if d not in bodies and kit.calls_left > 3:
                    bodies[d] = (yield from kit.open(d)).get("body", "")
            if backing(eid) and kit.calls_left > 1:
                yield from clear(eid)
            elif all(d in bodies for d in look[eid]) and kit.calls_left > 3:
                yield from flag(eid)
    elif cands:
        # read every earlier minute and contract, nearest to an entry first, keeping calls to dispose of all
        def gap(d):
            # days from the document to the nearest later candidate entry
            dd = dt.date.fromisoformat(support[d])
            return min((dt.date.fromisoformat(r["posting_date"]) - dd).days for e, r in cands.items() if d in look[e])

        for d in sorted(needed, key=lambda d: (gap(d), d)):
            if kit.calls_left <= 2 * len(cands) + 2:
                break
            bodies[d] = (yield from kit.open(d)).get("body", "")
        resolved = [e for e in cands if all(d in bodies for d in look[e]) or backing(e)]
        for eid in [e for e in resolved if not backing(e)]:
            if kit.calls_left > 3:
                yield from flag(eid)
        for eid in [e for e in resolved if backing(e)]:
            if kit.calls_left > 1:
                yield from clear(eid)
    left = len(cands) - len(flagged) - len(cleared)
    yield from kit.submit(f"{len(cands)} round-amount manual entries: {len(flagged)} unsupported and flagged, "
                          f"{len(cleared)} cleared against board resolutions or contracts"
                          + (f"; {left} left unresolved for lack of budget." if left else "."))
