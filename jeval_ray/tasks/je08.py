"""JE-8 (L2): unsupported round-amount entries.

The red-flag rule: a manual entry for a whole number of hundreds. Every entry the rule catches is
planted from one surface distribution: a manual GL journal (an accrual or reclass) for a whole
number of thousands, with a description that states a business purpose (a board-approved item or a
fixed-fee contract, with its accounts) and the number of the document that should fix it in the
reference field (``BR-<year>-<nn>`` for a board resolution, ``CTR-<year>-<nnn>`` for a contract,
numbered in one register for both kinds). Each is then made a defect or a decoy at random; only
the support pack differs. Minutes and agreements are titled by meeting date and vendor, never by
the reference.

Decoys (``round_amount_with_support``): the minutes or agreement carrying the reference exist,
are dated 3-40 days before the posting date and fix exactly the entry's amount for the stated
purpose. Decisive facts: the document, the reference and the amount.

Planted defects (criteria ``UNSUPPORTED_ROUND``), against the manual JE policy (section 2.1: the
supporting document's number in the reference; 2.3: a round sum needs the document that fixes it,
dated no later than the entry):
  * ``amount_not_supported``: the referenced document exists but fixes a smaller round sum (half
    the entry's amount or more), so the entry records more than was approved (decisive facts: the
    reference, the document, the figure it shows, the entry's amount);
  * ``approved_after_posting``: the referenced document fixes the amount but is dated 3-40 days
    after the entry was posted (facts: the reference, the document, its date, the posting date);
  * ``no_support``: no document in the pack carries the reference (facts: the reference and the
    amount); more often at a high ``near_miss``, the pack holds minutes approving the same figure
    under another number for another purpose, which do not support it.
Required evidence: the policy, and the referenced document where one exists; a decoy is cleared
by its document. The base population has no amounts in whole hundreds (the generator guarantees
it and ``plant`` re-checks), so nothing outside the planted entries trips the rule.
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
    objective='Find round-amount manual entries that no document supports.',
    defect='round-amount manual entry whose referenced document does not fix it',
    decoys='round amounts backed by a board resolution or contract',
    required_evidence='the support document (or its absence)',
    sources=('general_ledger', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNSUPPORTED_ROUND', 'round-amount manual entry that no supporting document fixes'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Manual journal entry policy - supporting documentation"
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


def _agreement(b, date: str, ref: str, vendor: str, purpose: str, cents: int, month: str) -> int:
    return b.add_document(
        "contract", f"Services agreement dated {date}",
        f"SERVICES AGREEMENT {ref}\nBetween Northwind Components Inc. (the Client) and {vendor} (the Provider), "
        f"dated {date}.\nScope: {purpose}.\nClause 3 Fees: a fixed fee of {_usd(cents)}, exclusive of any expenses, "
        f"earned in {month} 2025 and accrued by the Client on that basis; invoicing follows completion. The Client "
        f"records the fee under reference {ref}.\nSigned for the Client by Isabel Brown, Controller, and for the "
        "Provider by an authorised signatory.",
        date,
    )


MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
#: defect kinds with a referenced document, and their shares (the rest have none)
_KINDS = (("amount_not_supported", 0.4), ("approved_after_posting", 0.3), ("no_support", 0.3))


def plant(b) -> None:
    """Plant the policy and round-amount entries with a purpose and a reference, each a defect or a
    decoy at random; decoys get the document that fixes them, defects a document that does not (or none)."""
    rng = b.rng
    e = b.e
    _sanitise(b)
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "Section 2.1 Every manual journal entry must be supported by source documentation (invoice, contract, "
        "board resolution or a reviewed calculation) whose number is recorded in the entry's reference field. "
        "Section 2.2 The description must state the business purpose of the entry; terms such as 'adjustment' or "
        "'per management' alone are not sufficient. Section 2.3 Entries in round sums require the document that "
        "fixes the amount, dated no later than the entry; an approval given after the entry was recorded does not "
        "support it. Entries without support must not be approved and are reported to the Controller.",
        "2024-10-01",
    )
    n = b.n_defects + b.n_decoys
    idxs = _carriers(b, n, "round-amount manual entries")
    amounts = _round_amounts(b, n, idxs, set())
    is_defect = np.zeros(n, dtype=bool)
    is_defect[rng.permutation(n)[: b.n_defects]] = True
    names, shares = zip(*_KINDS)
    kind = [str(rng.choice(names, p=shares)) if is_defect[j] else "support" for j in range(n)]
    board = rng.random(n) < 0.5
    post = [b.date_str(e["post_date"][i]) for i in idxs]
    lag = rng.integers(3, 41, n)
    doc_dates = [str(np.datetime64(p) + (int(g) if k == "approved_after_posting" else -int(g)))
                 for p, g, k in zip(post, lag, kind)]
    # accounting references rise with the posting date in the books' year, whatever the document's
    # date (numbering by the document's date would put an approval given afterwards out of order)
    refs = [""] * n
    counters: dict[tuple[str, str], int] = {}
    for j in sorted(range(n), key=lambda j: (post[j], j)):
        key = ("BR" if board[j] else "CTR", post[j][:4])
        counters[key] = counters.get(key, int(rng.integers(1, 6) if board[j] else rng.integers(10, 40))) + int(rng.integers(1, 4))
        refs[j] = f"BR-{key[1]}-{counters[key]:02d}" if board[j] else f"CTR-{key[1]}-{counters[key]:03d}"
    used_refs = set(refs)
    board_order = rng.permutation(len(BOARD_ITEMS))
    ctr_order = rng.permutation(len(CONTRACT_ITEMS))
    n_board = n_ctr = 0
    taken = set(amounts)
    for j, (i, cents) in enumerate(zip(idxs.tolist(), amounts)):
        _set_amount(b, i, cents)
        ref, doc_date, month = refs[j], doc_dates[j], MONTHS[int(post[j][5:7]) - 1]
        if board[j]:
            purpose, short, dr, cr = BOARD_ITEMS[int(board_order[n_board % len(BOARD_ITEMS)])]
            n_board += 1
        else:
            vendor, purpose, short, dr, cr = CONTRACT_ITEMS[int(ctr_order[n_ctr % len(CONTRACT_ITEMS)])]
            n_ctr += 1
        e["reference"][i] = ref
        e["debit_account"][i] = dr
        e["credit_account"][i] = cr
        e["description"][i] = f"{short} per {ref}"
        # the figure the document fixes: the entry's, or for amount_not_supported a smaller round sum
        # (the entry records more than was approved)
        doc_cents = cents
        if kind[j] == "amount_not_supported":
            thousands = cents // 1_000_00
            choices = [c for c in range((thousands + 1) // 2, thousands) if c * 1_000_00 not in taken] or [thousands - 1]
            doc_cents = int(choices[int(rng.integers(0, len(choices)))]) * 1_000_00
        doc = None
        if kind[j] != "no_support":
            if board[j]:
                doc = _minutes(b, doc_date, f"Resolution {ref}: RESOLVED, that the Company approves {purpose} in the "
                                            f"amount of {_usd(doc_cents)}, to be recorded in {month} 2025 under "
                                            f"accounting reference {ref}. The resolution was carried unanimously.")
            else:
                doc = _agreement(b, doc_date, ref, vendor, purpose, doc_cents, month)
        amount = cents / 100
        if kind[j] == "support":
            b.add_decoy(i, "round_amount_with_support", [doc], facts=[f"{{D:{doc}}}", ref, amount])
            continue
        if kind[j] == "amount_not_supported":
            facts = [ref, f"{{D:{doc}}}", doc_cents / 100, amount]
        elif kind[j] == "approved_after_posting":
            facts = [ref, f"{{D:{doc}}}", doc_date, post[j]]
        else:
            facts = [ref, amount]
        trap = kind[j] == "no_support" and board[j] and rng.random() < b.knobs.near_miss
        if trap:
            # the same figure approved for something else: matching on the amount alone is not support
            d = str(np.datetime64(post[j]) - int(lag[j]))
            capex = f"CAPEX-2025-{int(rng.integers(100, 999))}"
            _minutes(b, d, f"Capital budget request {capex}: RESOLVED, that a capital budget of {_usd(cents)} is "
                           f"approved for {CAPEX_ITEMS[int(rng.integers(0, len(CAPEX_ITEMS)))]}; purchases are to "
                           "be capitalised as property, plant and equipment against supplier invoices. The "
                           "resolution was carried unanimously.")
        if kind[j] in ("no_support", "approved_after_posting") and not trap:
            # like every candidate, a document of its kind dated shortly before it, which carries another number
            d = str(np.datetime64(post[j]) - int(lag[j]))
            other = _free_ref(rng, "BR" if board[j] else "CTR", post[j][:4], used_refs)
            if board[j]:
                o_purpose = BOARD_ITEMS[int(rng.integers(0, len(BOARD_ITEMS)))][0]
                o_cents = int(rng.integers(2, 61)) * 1_000_00
                _minutes(b, d, f"Resolution {other}: RESOLVED, that the Company approves {o_purpose} in the amount of "
                               f"{_usd(o_cents)}, to be recorded under accounting reference {other}. The resolution "
                               "was carried unanimously.")
            else:
                o_vendor, o_purpose = CONTRACT_ITEMS[int(rng.integers(0, len(CONTRACT_ITEMS)))][:2]
                _agreement(b, d, other, o_vendor, o_purpose, int(rng.integers(2, 61)) * 1_000_00,
                           MONTHS[int(d[5:7]) - 1])
        b.add_defect(i, kind[j], "UNSUPPORTED_ROUND", [policy] + ([doc] if doc is not None else []), cents, facts=facts)


def _free_ref(rng, kind: str, year: str, used: set[str]) -> str:
    """A register number no entry carries."""
    while True:
        ref = f"BR-{year}-{int(rng.integers(1, 99)):02d}" if kind == "BR" else f"CTR-{year}-{int(rng.integers(10, 999)):03d}"
        if ref not in used:
            used.add(ref)
            return ref


# ------------------------------------------------------------------ strategies
_COLS = ["entry_id", "posting_date", "account", "debit", "preparer", "description", "reference"]
_USD = re.compile(r"USD ([\d,]+\.\d\d)")


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
    """Reads the policy, then the minutes and agreements that carry each entry's reference; clears an
    entry whose document fixes its amount and is dated no later than it, flags the rest.

    With ``search_documents`` it searches each reference and opens the minutes and agreements that
    mention it; without, it reads every minute and agreement (nearest to a candidate first). A
    document "carries" a reference when its text names it as a word (the same figure under another
    number, for another purpose, is not support).
    """
    cands = yield from _round_manual(kit)
    docs = (yield from kit.documents()) if cands else []
    policy = next((d["doc_id"] for d in docs if d["doc_type"] == "policy" and "manual journal" in d["title"].lower()), None)
    if policy and cands:
        yield from kit.open(policy)
    support = {d["doc_id"]: d["date"] for d in docs if d["doc_type"] in ("board_minutes", "contract")}
    bodies: dict[str, str] = {}
    look: dict[str, list[str]] = {e: list(support) for e in cands}
    if cands and kit.has("search_documents"):
        for eid, r in cands.items():
            if kit.calls_left <= 2 * len(cands) + 2:
                break
            hits = (yield from kit.call("search_documents", query=r["reference"])).get("documents", [])
            look[eid] = [h["doc_id"] for h in hits if h["doc_id"] in support]
    needed = sorted({d for ds in look.values() for d in ds},
                    key=lambda d: (min(abs((dt.date.fromisoformat(cands[e]["posting_date"]) - dt.date.fromisoformat(support[d])).days)
                                       for e in cands if d in look[e]), d))
    for d in needed:
        if kit.calls_left <= len(cands) + 2:
            break
        bodies[d] = (yield from kit.open(d)).get("body", "")
    n_flag = n_clear = 0
    for eid, r in cands.items():
        if kit.calls_left <= 1:
            break
        ref, amt, posted = r["reference"], float(r["debit"]), r["posting_date"]
        carrying = [d for d in look[eid] if d in bodies and ref and re.search(rf"\b{re.escape(ref)}\b", bodies[d])]
        if not all(d in bodies for d in look[eid]) and not carrying:
            continue  # not read within the budget: left undisposed rather than guessed
        figure = {d: float(m.group(1).replace(",", "")) if (m := _USD.search(bodies[d])) else None for d in carrying}
        ok = next((d for d in carrying if figure[d] is not None and abs(figure[d] - amt) < 0.005
                   and support[d] <= posted), None)
        if ok:
            yield from kit.clear(
                eid, [ok], f"Entry {eid}: round amount {amt:,.2f} under reference {ref} is fixed by {ok} (dated "
                           f"{support[ok]}, before the posting date {posted}), which names reference {ref} and "
                           f"USD {amt:,.2f}.")
            n_clear += 1
            continue
        ev = [x for x in (policy,) if x]
        if carrying:
            d = carrying[0]
            if figure[d] is not None and abs(figure[d] - amt) >= 0.005:
                why = f"{d}, the document carrying reference {ref}, fixes USD {figure[d]:,.2f}, not the {amt:,.2f} recorded"
            else:
                why = (f"{d}, the document carrying reference {ref}, is dated {support[d]}, after the entry was posted "
                       f"on {posted}; an approval given afterwards does not support it")
            ev.append(d)
        else:
            why = f"no board minute or agreement in the pack carries reference {ref}"
        yield from kit.flag(
            eid, "UNSUPPORTED_ROUND", ev,
            f"Entry {eid}: manual round amount {amt:,.2f} ('{r['description']}', reference {ref}); {why}, so it "
            f"lacks the support section 2.3 of {policy or 'the manual JE policy'} requires.")
        n_flag += 1
    left = len(cands) - n_flag - n_clear
    yield from kit.submit(f"{len(cands)} round-amount manual entries: {n_flag} unsupported and flagged, "
                          f"{n_clear} cleared against board resolutions or agreements"
                          + (f"; {left} left unresolved for lack of budget." if left else "."))
