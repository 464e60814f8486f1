"""JE-11 (L3): related-party transactions and unusual account pairings without approval.

Every candidate is drawn the same way: its kind first (a vendor invoice from a related vendor,
about 60%, or a manual entry with a non-standard account combination), then, independently,
whether it is an exception. Only the board minutes tell them apart.

Planted defects:

* ``related_party_unapproved`` (criteria ``RELATED_PARTY``): a vendor invoice from a vendor on
  the related-party register (an entity owned or managed by a director, an officer or a close
  family member) that the board never approved. With probability ``near_miss`` the board minutes
  even discuss the invoice, but defer or decline it, so "the minutes mention it" is not enough.
  Decisive facts: the vendor, the interested person on the register, the amount (and the minutes
  that discuss it without approving it, where they exist).
* ``unusual_pairing_unapproved`` (criteria ``UNUSUAL_PAIRING``): a manual entry with an account
  combination the journal-entry policy lists as non-standard (revenue debited against cash, PP&E
  or payables credited to other income, retained earnings debited against cash) without board
  approval. Decisive facts: the debit and credit accounts and the amount (and the minutes that
  ask for more analysis, where they exist).

Decoys: the same two kinds, approved by the board before posting: the minutes of a meeting held
after the invoice date and before the posting date name the counterparty, the amount and the
entry's reference and record "RESOLVED that ... be approved"; an interested director abstains,
an interested officer (who has no vote) leaves the room. Decisive facts: the minutes, the meeting
date, the counterparty (or the account pair) and the amount.

Required evidence: the entry (``get_entry``), plus for related-party defects the related-party
register (``master:related_parties``) and the related-party policy, and for pairings the
non-standard combinations policy (plus the minutes where they discuss the entry). A decoy is
cleared by its board minutes (plus the register or the pairing policy). A master services
agreement exists for every related vendor used, signed by management: it supports the price but
is not an approval, so it never clears anything.

Red-flag rule: vendor_id of a related vendor, or a (debit account, credit account) pair listed
in the policy. The base population never trips it: related vendors are new vendor ids that only
planted entries use, and no base template produces a listed pairing.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import APPROVERS, HOLIDAYS_2025
VENDOR_NAMES: tuple = ()  # MIGRATION: partners now come from the books (b.vendors, b.customers)
CUSTOMER_NAMES: tuple = ()

SPEC = spec(
    "JE-11",
    "L3",
    'Related-party and unusual pairings',
    objective='Find related-party transactions or unusual account pairings that were not approved.',
    defect='related-party or unusual account pairing without approval',
    decoys='related-party transaction approved in board minutes',
    required_evidence='related-party list, board minutes, contract',
    sources=('general_ledger', 'related_party_list', 'board_minutes', 'contracts'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('RELATED_PARTY', 'transaction with a party on the related-party register without prior board approval'),
        ('UNUSUAL_PAIRING', 'non-standard account combination posted without prior board approval'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

CODE = "RELATED_PARTY"
PAIR_CODE = "UNUSUAL_PAIRING"
RP_POLICY_TITLE = "Related party transactions policy"
PAIR_POLICY_TITLE = "Journal entry policy - non-standard account combinations"
BOARD = ("Margaret Osei (Chair)", "Robert Hale", "Priya Raman", "Thomas Becker")

# name, relationship, interested person, debit account, service
RP_VENDORS = (
    ("Hale Advisory Partners LLC", "Owned by Robert Hale, non-executive director", "Robert Hale", "6400",
     "strategy advisory services"),
    ("Osei Property Holdings", "Controlled by Margaret Osei, chair of the board", "Margaret Osei", "6100",
     "rent of the Reno overflow warehouse"),
    ("Raman Analytics Ltd", "Majority-owned by Priya Raman, director", "Priya Raman", "7100",
     "demand-forecasting software subscription"),
    ("Wright & Sons Logistics", "Managed by the brother of James Wright, CFO", "James Wright", "1200",
     "inbound freight for raw materials"),
    ("Becker Engineering Services", "Thomas Becker, director, holds 35% of the shares", "Thomas Becker", "6600",
     "press-line maintenance"),
    ("Brown Street Catering", "Owned by the spouse of Isabel Brown, Controller", "Isabel Brown", "6300",
     "catering for the sales conference"),
)
# related parties that do not trade with the company in the period (they make the register realistic)
RP_OTHERS = (
    ("Northwind Holdings Ltd", "Parent company, holds 62% of the shares", "parent"),
    ("Wright Family Trust", "Shareholder (8%); trustee is James Wright, CFO", "shareholder"),
)

# kind, debit accounts, credit accounts, reference prefix, description, board-minutes wording
PAIR_KINDS = (
    ("customer_refund", ("4000", "4100"), ("1000",), "SET-", "Settlement refund {cust}",
     "Customer settlement - {cust}. Management reported the settlement of the delivery dispute with {cust}; "
     "a refund of USD {amt} is paid to the customer and recorded against revenue under reference {ref}."),
    ("asset_contribution", ("1500",), ("4900",), "GRT-", "Equipment contributed under regional grant",
     "Contributed equipment. Management reported that the Regional Manufacturing Fund will contribute {asset} "
     "under the 2025 grant programme, to be recorded at a fair value of USD {amt} as other income under "
     "reference {ref}."),
    ("payables_writeback", ("2000",), ("4900",), "WB-", "Write-back aged payables {vend}",
     "Aged payables. Management proposed to write back to other income time-barred payables to {vend} of "
     "USD {amt} (reference {ref}), following legal advice that the balances are no longer enforceable."),
    ("shareholder_distribution", ("3100",), ("1000",), "DIV-", "Distribution to shareholders",
     "Distribution. Management proposed a cash distribution to shareholders of record of USD {amt} out of "
     "retained earnings, to be paid under reference {ref}."),
)


ASSETS = ("a CNC machining centre", "a laser cutting cell", "two collaborative robot arms", "an automated test bench",
          "a powder-coating line")


def _money(cents: int) -> str:
    return f"{cents / 100:,.2f}"


def _odd_cents(c: int) -> int:
    """Avoid whole-hundred amounts, which are another task's red flag."""
    return c + 1_737 if c % 10_000 == 0 else c


def _fix_approver(b, idx: int, rng) -> None:
    """A manual entry's approver must be someone else whose approval limit covers the amount."""
    if not b.e["manual"][idx]:
        return
    amt = int(b.e["debit_cents"][idx])
    prep = str(b.e["preparer"][idx])
    ok = [a for a in APPROVERS if a != prep and b.user(a)["approval_limit"] * 100 >= amt]
    if str(b.e["approver"][idx]) not in ok:
        b.e["approver"][idx] = ok[int(rng.integers(0, len(ok)))]


def _policies(b) -> tuple[int, int]:
    rp = b.add_document(
        "policy", RP_POLICY_TITLE,
        "Section 1. Scope. This policy applies to every transaction between Northwind Components Inc. and a "
        "related party.\n"
        "Section 2. Related parties. A related party is any person or entity on the related-party register "
        "maintained by the company secretary: directors, officers, their close family members, entities they "
        "own, control or manage, and shareholders holding more than 5% of the shares.\n"
        "Section 3. Approval. Every transaction with a related party, whatever its amount, requires the prior "
        "approval of the board of directors. The interested director or officer declares the interest and does "
        "not vote. The approval is recorded in the board minutes, naming the counterparty, the amount and the "
        "invoice or entry reference. A signed contract or purchase order does not replace board approval.\n"
        "Section 4. Reporting. Transactions posted without board approval are reported to the audit committee "
        "and disclosed to the external auditor.",
        "2024-11-20",
    )
    lines = []
    for _kind, dr, cr, _p, _d, _m in PAIR_KINDS:
        lines.append(f"  - Debit {' or '.join(dr)} ({_label(dr)}) / Credit {' or '.join(cr)} ({_label(cr)})")
    pair = b.add_document(
        "policy", PAIR_POLICY_TITLE,
        "Section 6.1. The account combinations below are non-standard. A journal entry that debits the first "
        "and credits the second account of one of these combinations may only be posted after the board of "
        "directors has approved the underlying transaction; the approval must be recorded in the board minutes "
        "with the amount and the entry reference.\n" + "\n".join(lines) + "\n"
        "Section 6.2. Entries with these combinations posted without the required approval are reported to the "
        "audit committee. Other combinations follow the standard approval matrix.",
        "2024-11-20",
    )
    return rp, pair


_NAMES = {"4000": "revenue", "4100": "revenue", "1000": "cash", "1500": "property, plant and equipment",
          "4900": "other income", "2000": "accounts payable", "3100": "retained earnings"}


def _label(accts: tuple[str, ...]) -> str:
    return ", ".join(dict.fromkeys(_NAMES[a] for a in accts))


def plant(b) -> None:
    rng = b.rng
    near = b.knobs.near_miss
    e = b.e
    rp_policy, pair_policy = _policies(b)

    # the related-party register and the related vendors (new vendor ids: no base entry uses them)
    k_rp = int(rng.integers(3, 5))
    chosen = sorted(int(i) for i in rng.choice(len(RP_VENDORS), size=k_rp, replace=False))
    register = []
    rp_vendors = []
    next_id = 1001 + len(b.vendors)
    for i in chosen:
        name, rel, person, acct, service = RP_VENDORS[i]
        vid = f"V{next_id}"
        next_id += 1
        b.vendors.append({"vendor_id": vid, "name": name, "bank_account": b.bank_account(),
                          "created_on": str(np.datetime64("2018-01-01") + int(rng.integers(0, 2400))),
                          "created_by": "GSILVA", "status": "active"})
        register.append({"party": name, "relationship": rel, "party_type": "entity",
                         "identified_on": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800)))})
        rp_vendors.append((vid, name, person, acct, service))
    for name, rel, kind in RP_OTHERS:
        register.append({"party": name, "relationship": rel, "party_type": kind,
                         "identified_on": str(np.datetime64("2015-01-01") + int(rng.integers(0, 1800)))})
    b.related_parties.extend(sorted(register, key=lambda r: r["party"]))

    # One surface for every candidate: its kind (related-party invoice or non-standard pairing) is
    # drawn first, then whether it is an exception, independently (a listing shows kinds, not answers).
    n_all = b.n_defects + b.n_decoys
    labels = rng.permutation(np.array([True] * b.n_defects + [False] * b.n_decoys, dtype=bool))
    is_rp = rng.random(n_all) < 0.6
    rp_labels, pair_labels = labels[is_rp], labels[~is_rp]
    # minutes items: (meeting no later than, text, (role, idx, type, evidence, facts) or None, the
    # invoice date the meeting must follow or None)
    items: list[tuple] = []

    # related-party invoices: base vendor invoices re-pointed to a related vendor
    rp_idx = b.pick(len(rp_labels), e["template"] == "vendor_invoice", what="vendor invoices")
    rp_idx = rp_idx[rng.permutation(len(rp_idx))]
    used_vendors = set()
    vorder = rng.permutation(len(rp_vendors))
    for k, idx in enumerate(rp_idx):
        # every related vendor trades at least once (when there are enough entries), the rest at random
        j = int(vorder[k]) if k < len(vorder) else int(rng.integers(0, len(rp_vendors)))
        vid, name, person, acct, service = rp_vendors[j]
        used_vendors.add(vid)
        ref = str(e["reference"][idx])
        e["vendor_id"][idx] = vid
        e["debit_account"][idx] = acct
        e["description"][idx] = f"Invoice {ref} {name}"
        cents = int(e["debit_cents"][idx])
        amt = _money(cents)
        # the board meets after the invoice arrived and before it is posted (every candidate alike)
        latest = e["post_date"][idx] - np.timedelta64(int(rng.integers(2, 26)), "D")
        e["doc_date"][idx] = latest - np.timedelta64(int(rng.integers(4, 15)), "D")
        head = (f"Related-party transaction - {name}. {person} declared an interest in {name}. Management "
                f"presented invoice {ref} from {name} dated {b.date_str(e['doc_date'][idx])} for USD {amt} "
                f"for {service}.")
        if rp_labels[k]:
            facts = [name, person, cents / 100]
            if rng.random() < near:
                verdict = ("The board asked for two competing quotes and deferred the decision to a later "
                           "meeting; no approval was given." if rng.random() < 0.5 else
                           "The board considered the price above market and declined to approve the transaction.")
                items.append((latest, f"{head} {verdict}", ("defect", idx, "related_party_unapproved",
                                                             ["entry", "master:related_parties", rp_policy], facts),
                              e["doc_date"][idx]))
            else:
                b.add_defect(idx, "related_party_unapproved", CODE, ["entry", "master:related_parties", rp_policy],
                             facts=facts)
        else:
            # an interested director abstains; an interested officer has no vote and leaves the room
            recusal = (f"with {person} abstaining" if any(person in m for m in BOARD) else
                       f"{person}, who attends as an officer and has no vote, having left the meeting for this item")
            items.append((latest, f"{head} After discussion, {recusal}, it was RESOLVED that the transaction be "
                                  f"approved.",
                          ("decoy", idx, "related_party_approved", ["master:related_parties"], [name, cents / 100]),
                          e["doc_date"][idx]))

    # contracts exist for every related vendor used: they support prices, they do not approve anything
    for vid, name, person, acct, service in rp_vendors:
        if vid not in used_vendors:
            continue
        d = str(np.datetime64("2023-01-01") + int(rng.integers(0, 600)))
        b.add_document("contract", f"Master services agreement - {name}",
                       f"Agreement dated {d} between Northwind Components Inc. and {name} ({vid}) for "
                       f"{service}. Fees are invoiced as services are delivered, at the rates in Schedule A. "
                       f"Payment terms 30 days. Signed for Northwind Components Inc. by James Wright, CFO, and "
                       f"for {name} by its managing partner.", d)

    # non-standard account pairings: manual entries re-keyed to a listed combination
    pair_idx = b.pick(len(pair_labels), e["manual"] & np.isin(e["template"], ["accrual", "reclass", "vendor_invoice"]),
                      what="manual entries")
    pair_idx = pair_idx[rng.permutation(len(pair_idx))]
    for k, idx in enumerate(pair_idx):
        kind, dr, cr, prefix, desc, words = PAIR_KINDS[int(rng.integers(0, len(PAIR_KINDS)))]
        serial = re.sub(r"\D", "", str(e["reference"][idx]))
        ref = f"{prefix}{serial}"
        cust = CUSTOMER_NAMES[int(rng.integers(0, len(CUSTOMER_NAMES)))]
        vi = int(rng.integers(0, len(VENDOR_NAMES)))
        cents = _odd_cents(int(np.clip(np.rint(rng.lognormal(np.log(18_000), 0.6)) * 100 + rng.integers(1, 99),
                                       2_500_00, 85_000_00)))
        d_acct, c_acct = dr[int(rng.integers(0, len(dr)))], cr[int(rng.integers(0, len(cr)))]
        e["debit_account"][idx] = d_acct
        e["credit_account"][idx] = c_acct
        e["debit_cents"][idx] = cents
        e["credit_cents"][idx] = cents
        e["reference"][idx] = ref
        e["doc_type"][idx] = "SA"
        e["vendor_id"][idx] = f"V{1001 + vi}" if kind == "payables_writeback" else ""
        text = desc.format(cust=cust, vend=VENDOR_NAMES[vi])
        e["description"][idx] = text if rng.random() < b.knobs.description_quality else "Adj per management"
        _fix_approver(b, idx, rng)
        latest = e["post_date"][idx] - np.timedelta64(int(rng.integers(2, 26)), "D")
        asset = ASSETS[int(rng.integers(0, len(ASSETS)))]
        head = words.format(cust=cust, vend=VENDOR_NAMES[vi], amt=_money(cents), ref=ref, asset=asset)
        if pair_labels[k]:
            facts = [d_acct, c_acct, cents / 100]
            if rng.random() < near * 0.5:
                items.append((latest, f"{head} The board requested further analysis before deciding; no "
                                      f"resolution was passed.",
                              ("defect", idx, f"unusual_pairing_unapproved:{kind}", ["entry", pair_policy], facts), None))
            else:
                b.add_defect(idx, f"unusual_pairing_unapproved:{kind}", PAIR_CODE, ["entry", pair_policy], facts=facts)
        else:
            noun = "settlement" if kind == "customer_refund" else "transaction"
            items.append((latest, f"{head} After discussion it was RESOLVED that the {noun} be approved.",
                          ("decoy", idx, f"unusual_pairing_approved:{kind}", [pair_policy], [d_acct, c_acct, cents / 100]),
                          None))

    _minutes(b, items, rng)


def _minutes(b, items: list[tuple], rng) -> None:
    """Group the items into board meetings held on or before each item's latest date, then record
    each decoy with the minutes that approve it as its clearing evidence."""
    hol = np.array([h for h, _ in HOLIDAYS_2025], dtype="datetime64[D]")

    def meeting_day(d) -> np.datetime64:
        # boards meet on business days: the previous one (still before every member's posting)
        return np.busday_offset(np.datetime64(d, "D"), 0, roll="backward", holidays=hol)

    order = sorted(range(len(items)), key=lambda i: (items[i][0], i))
    meetings: list[tuple[np.datetime64, list[int]]] = []
    for i in order:
        d, after = items[i][0], items[i][3]
        # items sorted by latest date: a meeting on the group's first date precedes every member's
        # posting; an invoice joins only a meeting held after the invoice date
        if meetings and (d - meetings[-1][0]) <= np.timedelta64(40, "D") and (after is None or after < meetings[-1][0]):
            meetings[-1][1].append(i)
        else:
            meetings.append((meeting_day(d), [i]))
    for d, members in meetings:
        day = str(d)
        body = [f"Minutes of the meeting of the board of directors of Northwind Components Inc. held on {day}.",
                f"Present: {', '.join(BOARD)}. In attendance: James Wright (CFO), Isabel Brown (Controller), "
                "the company secretary.",
                "Item 1. The minutes of the previous meeting were read and signed."]
        members = [members[int(j)] for j in rng.permutation(len(members))]
        for k, i in enumerate(members):
            body.append(f"Item {k + 2}. {items[i][1]}")
        body.append(f"Item {len(members) + 2}. Management presented the trading update; no further business.")
        h = b.add_document("board_minutes", f"Minutes of the board of directors meeting - {day}", "\n\n".join(body), day)
        for i in members:
            if items[i][2] is None:
                continue
            role, idx, kind, ev, facts = items[i][2]
            if role == "decoy":
                b.add_decoy(idx, kind, [h, *ev], facts=[f"{{D:{h}}}", day, *facts])
            else:
                # discussed but deferred or declined: these minutes are part of the proof that nothing approved it
                code = PAIR_CODE if kind.startswith("unusual_pairing") else CODE
                b.add_defect(idx, kind, code, [*ev, h], facts=[*facts, f"{{D:{h}}}"])


# ------------------------------------------------------------------ strategies
def parse_pairs(body: str) -> set[tuple[str, str]]:
    """(debit, credit) account pairs from the policy's 'Debit … / Credit …' lines."""
    out = set()
    for dr, cr in re.findall(r"Debit ([^()]+?) \([^)]*\) / Credit ([^()]+?) \(", body):
        for a in re.findall(r"\d{4}", dr):
            for c in re.findall(r"\d{4}", cr):
                out.add((a, c))
    return out


def _approvals(body: str) -> dict[str, bool]:
    """Reference -> approved? for each minutes item that names an entry reference."""
    out = {}
    for item in re.split(r"\n\s*\n", body):
        approved = bool(re.search(r"RESOLVED that the \w+ be approved", item))
        for ref in re.findall(r"\b[A-Z]{2,4}-\d{4,}\b", item):
            out[ref] = out.get(ref, False) or approved
    return out


def _survey(kit: Kit, read_policies: bool):
    """Shared first steps: register, vendor master, policies, ledger; returns the candidates."""
    register = yield from kit.master("related_parties")
    vendors = yield from kit.master("vendors")
    rel = {r["party"]: r["relationship"] for r in register}
    rp_ids = {v["vendor_id"]: v["name"] for v in vendors if v["name"] in rel}
    docs = yield from kit.documents()
    pol = {"rp": None, "pair": None}
    pairs: set[tuple[str, str]] = set()
    for d in docs:
        if d["doc_type"] == "policy" and d["title"] == RP_POLICY_TITLE and read_policies:
            pol["rp"] = d["doc_id"]
        if d["doc_type"] == "policy" and "non-standard account" in d["title"].lower():
            pol["pair"] = d["doc_id"]
    if pol["rp"]:
        yield from kit.open(pol["rp"])
    if pol["pair"]:
        # the pairing rule itself is in this policy, so even the naive screen reads it
        pairs = parse_pairs((yield from kit.open(pol["pair"])).get("body", ""))
    rows = yield from kit.ledger(columns=["entry_id", "line_no", "account", "debit", "vendor_id", "reference",
                                          "posting_date"])
    # line 1 is the debit line: sorting makes ``accounts`` read (debit, credit)
    ents = entries_of(sorted(rows, key=lambda r: (r["entry_id"], r["line_no"])))
    cands = {}
    for eid, ent in ents.items():
        accts = ent["accounts"]
        dr_cr = (accts[0], accts[1]) if len(accts) == 2 else None
        if ent.get("vendor_id") in rp_ids:
            name = rp_ids[ent["vendor_id"]]
            cands[eid] = ("rp", name, rel[name], ent)
        elif dr_cr in pairs:
            cands[eid] = ("pair", f"Dr {dr_cr[0]} / Cr {dr_cr[1]}", "", ent)
    return cands, docs, pol


def naive(kit: Kit):
    """Flags every related-vendor entry and every listed pairing, without reading the board minutes."""
    cands, _docs, pol = yield from _survey(kit, read_policies=False)
    for eid, (kind, what, _rel, ent) in sorted(cands.items()):
        if kit.calls_left <= 1:
            break
        ev = ["master:related_parties"] if kind == "rp" else ([pol["pair"]] if pol["pair"] else [])
        text = (f"Entry {eid} is a transaction with related party {what}." if kind == "rp" else
                f"Entry {eid} uses the non-standard pairing {what}.")
        yield from kit.flag(eid, CODE if kind == "rp" else PAIR_CODE, ev, text)
    yield from kit.submit(f"Flagged {len(cands)} related-party or non-standard entries.")


def careful(kit: Kit):
    """Finds candidates, reads every set of board minutes, clears what the board approved before
    posting, flags the rest."""
    cands, docs, pol = yield from _survey(kit, read_policies=True)
    approvals: dict[str, tuple[str, bool, str]] = {}
    for d in sorted((d for d in docs if d["doc_type"] == "board_minutes"), key=lambda d: d["doc_id"]):
        if kit.calls_left <= len(cands) + 2:  # keep at least one call per candidate
            break
        body = (yield from kit.open(d["doc_id"])).get("body", "")
        m = re.search(r"held on (\d{4}-\d\d-\d\d)", body)
        day = m.group(1) if m else d.get("date", "")
        for ref, ok in _approvals(body).items():
            if ok or ref not in approvals:
                approvals[ref] = (d["doc_id"], ok, day)
    flags, clears = [], []
    for eid, (kind, what, rel, ent) in sorted(cands.items()):
        doc, ok, day = approvals.get(ent.get("reference", ""), (None, False, ""))
        prior = ok and day < str(ent.get("posting_date", ""))[:10]
        (clears if prior else flags).append((eid, kind, what, rel, ent, doc, day, ok))
    for eid, kind, what, rel, ent, doc, day, ok in flags:
        if kit.calls_left <= 2:
            break
        entry = yield from kit.call("get_entry", entry_id=eid)
        ref = entry.get("reference", ent.get("reference"))
        amt = entry.get("total_debit", ent.get("total_debit", 0.0))
        if doc and ok:
            seen = f" Minutes {doc} approve {ref} only on {day}, after it was posted."
        elif doc:
            seen = f" Minutes {doc} discuss {ref} but record no approval."
        else:
            seen = " No board minutes approve it."
        if kind == "rp":
            ev = [eid, "master:related_parties"] + ([pol["rp"]] if pol["rp"] else [])
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) is an invoice from {what}, on the related-party register "
                    f"({rel}); policy {pol['rp']} requires prior board approval.{seen}")
        else:
            ev = [eid] + ([pol["pair"]] if pol["pair"] else [])
            text = (f"Entry {eid} ({ref}, USD {amt:,.2f}) posts {what}, a non-standard combination under policy "
                    f"{pol['pair']} that needs board approval.{seen}")
        if doc:
            ev.append(doc)
        yield from kit.flag(eid, CODE if kind == "rp" else PAIR_CODE, ev, text)
    for eid, kind, what, rel, ent, doc, day, _ok in clears:
        if kit.calls_left <= 1:
            break
        ref, amt = ent.get("reference"), ent.get("total_debit", 0.0)
        ev = [doc, "master:related_parties"] if kind == "rp" else [doc] + ([pol["pair"]] if pol["pair"] else [])
        party = f"related party {what}" if kind == "rp" else f"the pairing {what}"
        yield from kit.clear(eid, ev, f"Entry {eid} ({ref}, USD {amt:,.2f}) with {party} was approved by the board "
                                      f"before posting: minutes {doc} of the meeting on {day} resolve to approve {ref} "
                                      f"for USD {amt:,.2f}.")
    yield from kit.submit(f"{len(cands)} related-party or non-standard entries examined: {len(flags)} without prior "
                          f"board approval flagged, {len(clears)} approved in the minutes cleared.")
