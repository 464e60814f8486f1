"""JE-2 (L1): self-approved manual entries.

Every manual entry must be approved in the ERP workflow by a user other than its preparer whose
approval limit covers the amount. When the workflow cannot route an entry (the approver away
without ERP access, a workflow outage), the approval policy (FIN-POL-012 §3) lets the preparer
release it under his or her own id, so the ERP records the preparer as approver, *provided* an
independent approver has signed the entry's journal voucher no later than the release. The
signed voucher is then the approval of record; without it the release is a self-approval.

So every candidate (a manual entry whose approver is its preparer) looks the same in the
ledger: all are drawn from one pool (the year's manual entries: vendor invoices keyed in accounts
payable, accruals, bank charges and interest, sales tax returns, allowance reviews, write-offs,
top-side adjustments) and made a defect or a decoy at random. Planting changes what a release
under the preparer's id changes: the ERP's approver becomes the preparer, and the books' own
approval of the document (its approver, dated between the document and the entry) becomes the
signature on a journal voucher, or is missing, late or replaced. Each candidate has its voucher
in the support pack, titled with the entry's reference, stating the amount, accounts and
description of the entry, the preparer, the release date and why the workflow was not used (a
reason the books bear out on the release day: the approver away only on a day he or she approved
nothing in the ERP, and when on leave a deputy signs; an outage only on a day nobody approved in
the ERP; the close meeting only from a month's last day to its close; else the workflow routed the
entry back to its preparer), and dated the day it was prepared (on or after the document's date, no later than the approval or
the release). Only the voucher and the user master tell them apart:

* Decoys (``voucher_signed_by_independent_approver``): the voucher is signed by the books'
  approver of the document (another user whose limit in ``master:users`` covers the amount;
  one tier up where the entry's total exceeds the approved document's), on the approval date or
  the day of the release. Decisive facts: the voucher, the approver, the signing date and the
  approver's limit.
* Defects ``no_independent_approval``: the voucher carries the preparer's signature only.
  Decisive facts: the voucher and the preparer.
* Defects ``approved_after_posting``: the approver signed after the entry was keyed and released
  (an approval dated after what it approves). Decisive facts: the voucher, the approver, the
  approval date and the entry date.
* Defects ``approver_limit_below_amount``: the voucher is signed by a colleague (of the
  preparer's department where one fits) whose approval limit is below the amount. It needs an
  entry above the smallest limit (USD 5,000), so it is about one defect in nine. Decisive facts:
  the voucher, the signer, the signer's limit and the amount.

Red-flag rule (approver == preparer): the books have every manual document approved by another
person within his or her limit, and automated postings carry no approver (payroll journals carry
the Finance approver of their register), so the rule catches no unplanted entry (0 of the 25,426
unplanted listed entries, 7,396 of them manual, of seeds 0-49 at default knobs;
``tests/test_key_audit_je02.py`` checks it). Required evidence: the voucher and the approval
policy, plus the user master where a limit decides (decoys and the limit defects). ``near_miss``
raises the share of decoy vouchers signed on the day of the release itself and brings late
signatures closer to it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, LINE, MONEY, NAME, REF, TOKEN, Disposition, Form, SurfaceRule, Task, clear,
                                     entry_ref, flag, parse_any, review, roles, surface_naive, tally)

SPEC = spec(
    "JE-2",
    "L1",
    'Self-approved manual entries',
    step_budget=60,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
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

_STD = "AS 2401.58-.61; ISA 240.32(a)"
KEY_RATIONALE = (
    key("defect", "no_independent_approval",
        evidence="the entry's journal voucher, read against the approval policy (sections 2 and 3)",
        facts="the ERP records the preparer as approver; the voucher's signature block holds the preparer only",
        conclusion="Released under the preparer's own id without the signed voucher the policy requires: a "
                   "self-approved manual entry. Exception (segregation of duties).",
        standard=_STD),
    key("defect", "approved_after_posting",
        evidence="the entry's journal voucher, read against the approval policy (section 3)",
        facts="the voucher is signed by an independent approver, but on a date after the entry was keyed and released",
        conclusion="The entry was posted before anyone else approved it; a later signature does not make the release "
                   "an approved one. Exception.",
        standard=_STD),
    key("defect", "approver_limit_below_amount",
        evidence="the entry's journal voucher and the signer's approval limit in master:users",
        facts="the voucher's signer is another user, but his or her approval limit is below the entry's amount",
        conclusion="The signature is not an approval under section 2 (the limit does not cover the amount), so the "
                   "release is self-approved. Exception.",
        standard=_STD),
    key("decoy", "voucher_signed_by_independent_approver",
        evidence="the entry's journal voucher, the approval policy (section 3) and master:users",
        facts="the voucher is signed by a user other than the preparer, on or before the release date, whose approval "
              "limit covers the amount; the voucher states the entry's reference, amount and accounts",
        conclusion="The release followed the voucher procedure; the signed voucher is the approval of record. No "
                   "exception.",
        standard=_STD),
)

POLICY_TITLE = "Journal entry approval policy (FIN-POL-012)"
VOUCHER_TITLE = "Journal voucher"
#: why the workflow could not route the entry (the same reasons for decoys and defects), each given
#: only where the books bear it out on the day of the release (``_reasons``)
TRAVEL = "approver travelling without ERP access"
LEAVE = "approver on leave; deputy approval obtained on paper"
OUTAGE = "workflow outage (IT ticket ITSR-{n})"
CLOSE = "month-end close deadline; approver in the close meeting"
MISROUTED = "workflow routed the entry back to its preparer (IT ticket ITSR-{n})"
REASONS = (TRAVEL, LEAVE, OUTAGE, CLOSE, MISROUTED)
#: signers come from the books' approvers (Senior Accountant and above)
APPROVERS = md.APPROVERS
DEFECT_KINDS = ("no_independent_approval", "approved_after_posting", "approver_limit_below_amount")




@dataclass(frozen=True)
class Policy:
    """The approval policy FIN-POL-012 (fixed text: sections 2 and 3 are the rule)."""


@dataclass(frozen=True)
class Voucher:
    """A journal voucher: the journal, who prepared it when, and why the preparer released it."""
    ref: str
    entry: str
    amount: int
    debit_account: str
    credit_account: str
    description: str
    preparer: str
    preparer_role: str
    prepared: str
    released: str
    reason: str


@dataclass(frozen=True)
class SignedVoucher(Voucher):
    """A voucher signed by ``signer`` on ``signed``."""
    signer: str
    signer_role: str
    signed: str


@dataclass(frozen=True)
class UnsignedVoucher(Voucher):
    """A voucher signed by the preparer only."""


POLICY = Form(Policy, (
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
    "4. Automated postings by the system users are covered by the interface controls and carry no approver, "
    "except the payroll journal, which carries the approver of its payroll register (Finance, within the "
    "approver's limit).\n"
    "5. Monitoring. The Controller reviews the approval report monthly."))
_HEAD = ("Journal voucher for journal {ref} (entry {entry}), USD {amount}, debit {debit_account} / credit "
         "{credit_account}. {description}.\nPrepared by: {preparer} ({preparer_role}) on {prepared}.\nReleased in the "
         "ERP by the preparer on {released}; workflow not used: {reason}.\n")
_KINDS: dict[str, Any] = dict(ref=TOKEN, entry=REF, amount=MONEY, debit_account=TOKEN, credit_account=TOKEN,
                              description=LINE, preparer=TOKEN, preparer_role=NAME, prepared=DATE, released=DATE,
                              reason=LINE)
SIGNED = Form(SignedVoucher, _HEAD + "Approved by: {signer} ({signer_role}), signed {signed}.", signer=TOKEN,
              signer_role=NAME, signed=DATE, **_KINDS)
UNSIGNED = Form(UnsignedVoucher, _HEAD + "Approved by: (no approver signature; signed by the preparer only).", **_KINDS)


def plant(b: WorldBuilder) -> None:
    """Add the approval policy; make a pool of manual entries released by their preparers, each
    with a journal voucher that does (decoy) or does not (defect) carry a valid approval."""
    rng, c = b.rng, b.cols
    policy = b.add_document("policy", POLICY_TITLE, POLICY.render(Policy()), "2024-11-20")
    limit = {u["user_id"]: int(round(u["approval_limit"] * 100)) for u in b.users if u["role"] != "System"}
    chosen = b.pick(b.n_defects + b.n_decoys, where=c.manual, what="manual entries")
    # who approved in the ERP on which day (every approved entry but the ones released here)
    rest = np.ones(b.n, dtype=bool)
    rest[chosen] = False
    rest &= c.approver != ""
    erp_days = set(zip(c.approver[rest].tolist(), c.entry_date[rest].astype(np.int64).tolist()))
    busy_days = {d for _, d in erp_days}
    is_defect = roles(b.n_defects, b.n_decoys, rng)
    order = [DEFECT_KINDS[i] for i in rng.permutation(len(DEFECT_KINDS))]
    n_def = 0
    for idx, defect in zip(chosen.tolist(), is_defect):
        v, approver, approved = _release(b, idx, limit, erp_days, busy_days)
        if not defect:
            # the approval of record: the books' approver, on the day of the approval or of the release
            signed = v.released if rng.random() < b.knobs.near_miss else max(approved, v.prepared)
            doc = _voucher(b, v, approver, signed)
            b.add_decoy(idx, "voucher_signed_by_independent_approver", [doc, policy, "master:users"],
                        facts=[f"{{D:{doc}}}", approver, signed, limit[approver] / 100])
        else:
            # the limit defect needs an approver whose limit is below the amount; otherwise the next kind
            kinds = order[n_def % len(order):] + order[:n_def % len(order)]
            low = _colleagues(b, v.preparer, v.amount)
            n_def += 1
            doc = _defect(b, idx, v, next(kd for kd in kinds if kd != "approver_limit_below_amount" or low),
                          approver, approved, low, limit, policy)
        b.claim("JE-2", entries=[idx], documents=[policy, doc])


def _release(b: WorldBuilder, idx: int, limit: dict[str, int], erp_days: set[tuple[str, int]],
             busy_days: set[int]) -> tuple[Voucher, str, str]:
    """Release entry ``idx`` under its preparer's id: (the voucher's common part, the approver who
    signs it when one does, the day the books approved the document)."""
    rng, c = b.rng, b.cols
    prep, approver = str(c.preparer[idx]), str(c.approver[idx])
    cents = int(c.debit_cents[idx])
    keyed, dated = c.entry_date[idx], c.doc_date[idx]
    # the books' approval of the document: by ``approver``, on a day between the document and the entry
    approved = np.datetime64(int(b.books.docs.approved_on[int(c.books_doc[idx])]), "D")
    if limit.get(approver, 0) < cents:  # a document total below the entry's (a price variance): one tier up
        approver = _signer(rng, limit, prep, lambda lim: lim >= cents)
    # the voucher is prepared on or after the document's date, no later than the approval
    prepared = max(dated, min(approved, keyed - int(rng.integers(0, 4))))
    c.approver[idx] = prep  # the release under the preparer's id
    fits = _reasons(approver, int(keyed.astype(np.int64)), erp_days, busy_days)
    reason = fits[int(rng.integers(0, len(fits)))]
    if reason == LEAVE:  # the approver is away: a deputy signs in his or her place
        approver = _signer(rng, limit, prep, lambda lim: lim >= cents, besides=approver)
    v = Voucher(ref=str(c.reference[idx]), entry=entry_ref(idx), amount=cents, debit_account=str(c.debit_account[idx]),
                credit_account=str(c.credit_account[idx]), description=str(c.description[idx]), preparer=prep,
                preparer_role=b.user(prep)["role"], prepared=b.date_str(prepared), released=b.date_str(keyed),
                reason=reason.format(n=int(rng.integers(1000, 9999))))
    return v, approver, b.date_str(approved)


def _defect(b: WorldBuilder, idx: int, v: Voucher, kind: str, approver: str, approved: str, low: list[str],
            limit: dict[str, int], policy: int) -> int:
    """The voucher of a defect of ``kind``, recorded; its handle."""
    rng = b.rng
    if kind == "no_independent_approval":
        doc = _voucher(b, v, None, None)
        b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy], facts=[f"{{D:{doc}}}", v.preparer])
    elif kind == "approved_after_posting":
        late = 1 + int(rng.integers(0, 1 + round((1 - b.knobs.near_miss) * 24)))
        signed = b.date_str(np.datetime64(v.released) + late)
        doc = _voucher(b, v, approver, signed)
        b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy], facts=[f"{{D:{doc}}}", approver, signed, v.released])
    else:
        signer = str(rng.choice(low))
        doc = _voucher(b, v, signer, max(approved, v.prepared))
        b.add_defect(idx, kind, "SELF_APPROVAL", [doc, policy, "master:users"],
                     facts=[f"{{D:{doc}}}", signer, limit[signer] / 100, v.amount / 100])
    return doc


def _colleagues(b: WorldBuilder, preparer: str, cents: int) -> list[str]:
    """Users other than the preparer who hold an approval limit below ``cents``: those of the
    preparer's department if any, else any."""
    low = [u for u in b.users if u["role"] != "System" and u["user_id"] != preparer
           and 0 < int(round(u["approval_limit"] * 100)) < cents]
    dept = b.user(preparer)["department"]
    return sorted(u["user_id"] for u in ([u for u in low if u["department"] == dept] or low))


def _signer(rng: np.random.Generator, limit: dict[str, int], preparer: str, fits: Callable[[int], bool],
            besides: str | None = None) -> str:
    """An approver other than the preparer (and ``besides``, where another fits) whose limit ``fits``."""
    ok = sorted(u for u in APPROVERS if u != preparer and fits(limit[u]))
    return str(rng.choice([u for u in ok if u != besides] or ok))


def _reasons(approver: str, keyed: int, erp_days: set[tuple[str, int]], busy_days: set[int]) -> list[str]:
    """The reasons for not using the workflow that the books do not contradict on the release day
    ``keyed``: the approver away only on a day without ERP approvals of his or hers, an outage only on
    a day nobody approved in the ERP, the close meeting only from the last day of a month to its
    close; a misrouted entry is always possible."""
    out = []
    if (approver, keyed) not in erp_days:
        out += [TRAVEL, LEAVE]
    if keyed not in busy_days:
        out.append(OUTAGE)
    if any(int(end) - 1 <= keyed <= int(close) for end, close in zip(md.MONTH_ENDS, md.close_dates())):
        out.append(CLOSE)
    return out + [MISROUTED]


def _voucher(b: WorldBuilder, v: Voucher, signer: str | None, signed: str | None) -> int:
    """Add the voucher ``v``, signed by ``signer`` on ``signed`` (by the preparer only when ``None``)."""
    if signer is None or signed is None:
        body = UNSIGNED.render(UnsignedVoucher(**vars(v)))
    else:
        body = SIGNED.render(SignedVoucher(**vars(v), signer=signer, signer_role=b.user(signer)["role"], signed=signed))
    return b.add_document("journal_voucher", f"{VOUCHER_TITLE} {v.ref}", body, v.prepared)


# ----------------------------------------------------------------- strategies
def _self_approved(kit: Kit, only: list[dict] | None = None,
                   columns: tuple[str, ...] = ("entry_id", "posting_date", "entry_timestamp", "preparer", "approver",
                                               "debit", "reference"),
                   ) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """Entries (matching ``only``) whose approver equals their preparer, with their total debits (from every debit line)."""
    rows = yield from kit.ledger(filters=[{"column": "debit", "op": "gt", "value": 0}, *(only or [])], columns=list(columns))
    ents = entries_of(rows)
    return {k: v for k, v in ents.items() if v.get("approver") and v["approver"] == v["preparer"]}


RULE = SurfaceRule("the approver equals the preparer", "SELF_APPROVAL", _self_approved,
                   "Entry {entry_id} ({total_debit:.2f}) was approved by its own preparer {preparer}.",
                   "Flagged {n} entries approved by their preparer.")
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the policy and the user master, then each self-released entry's journal voucher:
    clears a voucher signed beforehand by another user whose limit covers the amount, flags the rest."""
    users = {u["user_id"]: u for u in (yield from kit.master("users"))}
    docs = yield from kit.documents()
    policy = next((d["doc_id"] for d in docs if "approval policy" in d["title"].lower()), None)
    if policy:
        yield from kit.open(policy)
    vouchers = {d["title"][len(VOUCHER_TITLE) + 1:]: d["doc_id"] for d in docs if d["title"].startswith(VOUCHER_TITLE)}
    # only manual entries go through the approval workflow (and can be released by their preparer)
    hits = yield from _self_approved(kit, [{"column": "source", "op": "eq", "value": "manual"}],
                                     ("entry_id", "entry_timestamp", "preparer", "approver", "debit", "reference"))

    def decide(eid: str) -> Generator[Step, Any, Disposition]:
        doc = vouchers.get(hits[eid].get("reference") or "")
        body = (yield from kit.open(doc)).get("body", "") if doc else ""
        return _judge(eid, hits[eid], doc, policy, parse_any(body, (SIGNED, UNSIGNED)), users)

    flags, clears = tally((yield from review(kit, sorted(hits), decide)))
    yield from kit.submit(f"Reviewed {len(hits)} entries released by their preparer: flagged {flags} self-approvals, "
                          f"cleared {clears} supported by a signed voucher.")


def _judge(eid: str, h: Mapping[str, Any], doc: str | None, policy: str | None, v: Voucher | None,
           users: Mapping[str, Mapping[str, Any]]) -> Disposition:
    """The disposition of a self-released entry ``h`` whose voucher ``doc`` reads ``v``."""
    amount, keyed, pol = h["total_debit"], str(h["entry_timestamp"])[:10], [policy] if policy else []
    if not isinstance(v, SignedVoucher):
        return flag(eid, "SELF_APPROVAL", ([doc] if doc else []) + pol,
                    f"Entry {eid} (USD {amount:,.2f}) was released by its preparer {h['preparer']}; the journal "
                    f"voucher {doc or '(none found)'} carries no signature of another approver, so under {policy} it "
                    "is self-approved.")
    signer, signed = v.signer, v.signed
    lim = float(users.get(signer, {}).get("approval_limit") or 0.0)
    if signer == h["preparer"]:
        why = f"the voucher {doc} is signed by the preparer {signer} himself or herself"
    elif signed > keyed:
        why = (f"the voucher {doc} was signed by {signer} only on {signed}, after the entry was keyed and released "
               f"on {keyed}")
    elif lim < amount:
        why = f"the voucher {doc} is signed by {signer}, whose approval limit of {lim:,.2f} is below the {amount:,.2f}"
    else:
        return clear(eid, [str(doc), *pol, "master:users"],
                     f"Entry {eid} (USD {amount:,.2f}) was released by {h['preparer']} under the voucher procedure of "
                     f"{policy}: voucher {doc} was signed on {signed}, before the release on {keyed}, by {signer}, "
                     f"whose approval limit of {lim:,.2f} in master:users covers it.")
    return flag(eid, "SELF_APPROVAL", [str(doc), *pol, "master:users"],
                f"Entry {eid} (USD {amount:,.2f}) was released by its preparer {h['preparer']} without a valid "
                f"independent approval: {why} ({policy}).")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, policy=POLICY.template,
            decisive="the journal voucher's signer, signing date and the signer's approval limit (master:users) "
                     "against the preparer, the release date and the entry's amount (policy sections 2 and 3)")
