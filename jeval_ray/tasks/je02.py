"""JE-2 (L1): self-approved manual entries.

Every manual entry must be approved in the ERP workflow by a user other than its preparer whose
approval limit covers the amount. When the workflow cannot route an entry (the approver away
without ERP access, a workflow outage), the approval policy (FIN-POL-012 §3) lets the preparer
release it under his or her own id, so the ERP records the preparer as approver, *provided* an
independent approver has signed the entry's journal voucher no later than the release. The
signed voucher is then the approval of record; without it the release is a self-approval.

So every candidate (a manual entry whose approver is its preparer) looks the same in the
ledger: all are drawn from one pool of manual entries and made a defect or a decoy at random,
and each has a journal voucher in the support pack (titled with the entry's reference, dated the
day it was keyed). Only the voucher and the user master tell them apart:

* Decoys (``voucher_signed_by_independent_approver``): the voucher is signed, on or before the
  entry date, by another user whose approval limit (``master:users``) covers the amount. Decisive
  facts: the voucher, the approver, the approval date and the approver's limit.
* Defects ``no_independent_approval``: the voucher carries the preparer's signature only.
  Decisive facts: the voucher and the preparer.
* Defects ``approved_after_posting``: the approver signed after the entry was keyed and released
  (an approval is dated after what it approves). Decisive facts: the voucher, the approver, the
  approval date and the entry date.
* Defects ``approver_limit_below_amount``: the signer's approval limit is below the amount.
  Decisive facts: the voucher, the signer, the signer's limit and the amount.

Automated postings keep a blank approver, so nothing else trips the red-flag rule (approver ==
preparer). Required evidence: the voucher and the approval policy, plus the user master where a
limit decides (decoys and the limit defects). ``near_miss`` raises the share of decoy vouchers
signed on the day of the release itself and brings late signatures closer to it.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-2",
    "L1",
    'Self-approved manual entries',
    objective='Find manual journal entries approved by their own preparer, in breach of segregation of duties.',
    defect='manual entry released by its preparer without a valid independent approval',
    decoys="entries released by the preparer under the policy's voucher procedure, signed beforehand by an authorised approver",
    required_evidence='journal voucher, approval policy and user master',
    sources=('general_ledger', 'user_master', 'approval_policy', 'journal_vouchers'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('SELF_APPROVAL', 'a manual entry approved by the user who prepared it'),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

POLICY_TITLE = "Journal entry approval policy (FIN-POL-012)"
VOUCHER_TITLE = "Journal voucher"
#: why the workflow could not route the entry (the same reasons for decoys and defects)
REASONS = (
    "approver travelling without ERP access",
    "workflow outage (IT ticket ITSR-{n})",
    "approver on leave; deputy approval obtained on paper",
    "month-end close deadline; approver in the close meeting",
)
#: valid and late signers come from the approvers (Senior Accountant and above)
SENIOR_CENTS = 25_000_00
DEFECT_KINDS = ("no_independent_approval", "approved_after_posting", "approver_limit_below_amount")


def plant(b) -> None:
    """Add the approval policy; make a pool of manual entries released by their preparers, each
    with a journal voucher that does (decoy) or does not (defect) carry a valid approval."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "1. Purpose. This policy sets the approval requirements for journal entries posted to the general "
        "ledger of Northwind Components Inc.\n"
        "2. Manual journal entries. Every manual journal entry must be approved by a user other than its preparer "
        "whose approval limit in the user master covers the amount of the entry, before the entry is posted. A "
        "preparer may never approve his or her own entry, whatever the amount or urgency.\n"
        "3. Voucher procedure. Where the ERP workflow cannot route an entry to its approver (approver absent "
        "without ERP access, workflow outage), the preparer may release the entry under his or her own user id, and "
        "the ERP then records the preparer as approver, only after an approver meeting section 2 has signed the "
        "journal voucher. The signed voucher, dated no later than the release, is the approval of record and is "
        "filed in the support pack under the entry's reference. A release without such a voucher is a "
        "self-approval.\n"
        "4. Automated postings by the system users are covered by the interface controls and carry no approver.\n"
        "5. Monitoring. The Controller reviews the approval report monthly.",
        "2024-11-20",
    )
    humans = [u for u in b.users if u["role"] != "System"]
    limit = {u["user_id"]: int(round(u["approval_limit"] * 100)) for u in humans}
    role = {u["user_id"]: u["role"] for u in humans}

    # the base is clean by construction (manual entries have another approver, automated a blank
    # one); keep it so if the generator ever changes
    manual = e["manual"]
    e["approver"] = np.where(manual & (e["approver"] == e["preparer"]), "JWRIGHT", e["approver"])
    e["approver"] = np.where(~manual, "", e["approver"])

    k = b.n_defects + b.n_decoys
    chosen = b.pick(k, where=manual, what="manual entries")
    roles = np.array([1] * b.n_defects + [0] * b.n_decoys)[rng.permutation(k)]
    order = rng.permutation(len(DEFECT_KINDS))
    n_def = 0
    for idx, is_defect in zip(chosen, roles):
        idx = int(idx)
        prep = str(e["preparer"][idx])
        e["approver"][idx] = prep
        cents = int(e["debit_cents"][idx])
        keyed = e["entry_date"][idx]
        prepared = keyed - int(rng.integers(0, 4))
        reason = REASONS[int(rng.integers(0, len(REASONS)))].format(n=int(rng.integers(1000, 9999)))
        ref = str(e["reference"][idx])
        head = (f"Journal voucher for journal {ref} (entry {{E:{idx}}}), USD {cents / 100:,.2f}, debit "
                f"{e['debit_account'][idx]} / credit {e['credit_account'][idx]}.\n"
                f"Prepared by: {prep} ({role[prep]}) on {b.date_str(prepared)}.\n"
                f"Released in the ERP by the preparer on {b.date_str(keyed)}; workflow not used: {reason}.\n")
        if not is_defect:
            signer = _signer(rng, limit, prep, lambda lim: lim >= max(cents, SENIOR_CENTS))
            if rng.random() < near:  # signed on the day of the release itself
                signed = keyed
            else:
                signed = prepared + int(rng.integers(0, int((keyed - prepared).astype(int)) + 1))
            doc = _voucher(b, idx, head, signer, role, signed, prepared)
            b.add_decoy(idx, "voucher_signed_by_independent_approver", [doc, policy, "master:users"],
                        facts=[f"{{D:{doc}}}", signer, b.date_str(signed), limit[signer] / 100])
            continue
        kind = DEFECT_KINDS[order[n_def % len(DEFECT_KINDS)]]
        n_def += 1
        if kind == "no_independent_approval":
            doc = _voucher(b, idx, head, None, role, None, prepared)
            b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy], facts=[f"{{D:{doc}}}", prep])
        elif kind == "approved_after_posting":
            signer = _signer(rng, limit, prep, lambda lim: lim >= max(cents, SENIOR_CENTS))
            signed = keyed + 1 + int(rng.integers(0, 1 + round((1 - near) * 24)))
            doc = _voucher(b, idx, head, signer, role, signed, prepared)
            b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy],
                         facts=[f"{{D:{doc}}}", signer, b.date_str(signed), b.date_str(keyed)])
        else:
            signer = _signer(rng, limit, prep, lambda lim: lim < cents)
            signed = prepared + int(rng.integers(0, int((keyed - prepared).astype(int)) + 1))
            doc = _voucher(b, idx, head, signer, role, signed, prepared)
            b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy, "master:users"],
                         facts=[f"{{D:{doc}}}", signer, limit[signer] / 100, cents / 100])


def _signer(rng, limit: dict[str, int], preparer: str, fits) -> str:
    """A user other than the preparer whose limit ``fits``."""
    ok = sorted(u for u, lim in limit.items() if u != preparer and fits(lim))
    return str(rng.choice(ok))


def _voucher(b, idx: int, head: str, signer: str | None, role: dict[str, str], signed, prepared) -> int:
    if signer is None:
        sign = "Approved by: (no approver signature; signed by the preparer only)."
    else:
        sign = f"Approved by: {signer} ({role[signer]}), signed {b.date_str(signed)}."
    ref = str(b.e["reference"][idx])
    return b.add_document("journal_voucher", f"{VOUCHER_TITLE} {ref}", head + sign, b.date_str(prepared))


# ----------------------------------------------------------------- strategies
def _self_approved(kit: Kit):
    """Entries whose approver equals their preparer (header fields come from the debit line)."""
    rows = yield from kit.ledger(
        filters=[{"column": "line_no", "op": "eq", "value": 1}],
        columns=["entry_id", "posting_date", "entry_timestamp", "preparer", "approver", "debit", "reference"],
    )
    ents = entries_of(rows)
    return {k: v for k, v in ents.items() if v.get("approver") and v["approver"] == v["preparer"]}


def naive(kit: Kit):
    """Flags every entry whose approver equals its preparer, without reading the vouchers or the policy."""
    hits = yield from _self_approved(kit)
    for eid in sorted(hits):
        if kit.calls_left <= 1:
            break
        h = hits[eid]
        yield from kit.flag(eid, "SELF_APPROVAL", [], f"Entry {eid} ({h['total_debit']:.2f}) was approved by its "
                                                      f"own preparer {h['preparer']}.")
    yield from kit.submit(f"Flagged {len(hits)} entries approved by their preparer.")


_SIGNED = re.compile(r"Approved by: ([A-Z_]+) \(.*?\), signed (\d{4}-\d\d-\d\d)")


def careful(kit: Kit):
    """Reads the policy and the user master, then each self-released entry's journal voucher:
    clears a voucher signed beforehand by another user whose limit covers the amount, flags the rest."""
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "approval policy" in d["title"].lower()), None)
    if policy:
        yield from kit.open(policy)
    vouchers = {d["title"][len(VOUCHER_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(VOUCHER_TITLE)}
    hits = yield from _self_approved(kit)
    pol = [policy] if policy else []
    flags = clears = 0
    for eid in sorted(hits):
        if kit.calls_left <= 2:
            break
        h = hits[eid]
        amount, keyed = h["total_debit"], str(h["entry_timestamp"])[:10]
        doc = vouchers.get(h.get("reference") or "")
        body = (yield from kit.open(doc)).get("body", "") if doc else ""
        m = _SIGNED.search(body)
        ev = ([doc] if doc else []) + pol
        if m is None:
            flags += 1
            yield from kit.flag(eid, "SELF_APPROVAL", ev,
                                f"Entry {eid} (USD {amount:,.2f}) was released by its preparer {h['preparer']}; the "
                                f"journal voucher {doc or '(none found)'} carries no signature of another approver, so "
                                f"under {policy} it is self-approved.")
            continue
        signer, signed = m.group(1), m.group(2)
        lim = float(users.get(signer, {}).get("approval_limit") or 0.0)
        if signer == h["preparer"]:
            why = f"the voucher {doc} is signed by the preparer {signer} himself or herself"
        elif signed > keyed:
            why = (f"the voucher {doc} was signed by {signer} only on {signed}, after the entry was keyed and released "
                   f"on {keyed}")
        elif lim < amount:
            why = f"the voucher {doc} is signed by {signer}, whose approval limit of {lim:,.2f} is below the {amount:,.2f}"
        else:
            clears += 1
            yield from kit.clear(eid, [doc, *pol, "master:users"],
                                 f"Entry {eid} (USD {amount:,.2f}) was released by {h['preparer']} under the voucher "
                                 f"procedure of {policy}: voucher {doc} was signed on {signed}, before the release on "
                                 f"{keyed}, by {signer}, whose approval limit of {lim:,.2f} in master:users covers it.")
            continue
        flags += 1
        yield from kit.flag(eid, "SELF_APPROVAL", [doc, *pol, "master:users"],
                            f"Entry {eid} (USD {amount:,.2f}) was released by its preparer {h['preparer']} without a "
                            f"valid independent approval: {why} ({policy}).")
    yield from kit.submit(f"Reviewed {len(hits)} entries released by their preparer: flagged {flags} self-approvals, "
                          f"cleared {clears} supported by a signed voucher.")
