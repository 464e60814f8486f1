"""JE-4 (L1): unauthorised posters.

Staff whose posting rights ended during FY2025 keep their ERP user until IT removes it, which
can take weeks; entries keyed under such a user after the date the rights ended were posted by
someone without the right to post (the user master is authoritative, the ERP's late removal is
the control failure). Two kinds of change are planted, each a new row of the user master with
the date it took effect: leavers (``status`` terminated, ``termination_date``) and staff moved
to a role without posting rights (``posting_rights`` false, ``rights_withdrawn_on``; ``may_post``
keeps the posting profile they held until then).

Planting is a perturbation of the books: each changed user is a former AP clerk or GL accountant
and takes over a group of one or two of the books' own manual entries of the kinds that role keys
(vendor invoices for an AP clerk; accruals, bank charges and interest, sales tax returns for a GL
accountant). Only the preparer changes; amounts, accounts, dates and the approver (another user
whose limit covers the entry) stay as the books posted them. Each user's group is made defects or
decoys at random and the users are drawn per seed from one list, so the ledger alone does not
tell them apart; the user master does.

* Defects ``posted_after_termination``: the leaver's termination date is before the day the entry
  was keyed (its entry timestamp) and before its posting date. Decisive facts: the user, the
  termination date, the entry date and the posting date.
* Defects ``posted_after_rights_withdrawn``: the same with the date posting rights were withdrawn.
* Decoys ``posted_before_termination`` / ``posted_before_rights_withdrawn``: the user's rights
  ended only after the entry was both keyed and posted (a GL accrual is keyed a few days after
  the month end it posts to; both dates sit before the change). Decisive facts as for defects.

HR's year-end starters, leavers and transfers report (one document) corroborates the dates.
Red-flag rule: the preparer has no posting rights or is terminated (the user master). The books'
users without posting rights (the treasury analyst, the buyer) prepare no journal entry, so the
rule catches no unplanted look-alike: 0 of the 25,410 unplanted entries over seeds 0-49 (default
knobs); every hit is a planted defect or decoy, and the decoys are the look-alikes a real filter
returns (leavers' and transferees' earlier postings). Required evidence: ``master:users``.
``near_miss`` brings the change dates closer to the entries.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

import numpy as np

from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, NAME, TOKEN, USER_MAY_POST, Form, Lines, LinesForm, SurfaceRule, Task, clear,
                                     dispose, flag, grouped_roles, surface_naive)

SPEC = spec(
    "JE-4",
    "L1",
    'Unauthorised posters',
    step_budget=40,  # 1.5 x the most calls careful needs over 200 seeds (bench/bench_budgets.py)
    objective="Find entries posted by users who had no right to post them.",
    defect='posted by a user after termination, or after his or her posting rights were withdrawn',
    decoys="postings by leavers and transferred staff dated before their rights ended",
    required_evidence='user master',
    sources=('general_ledger', 'user_master'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNAUTHORISED_USER', "posted by a user who had no right to post it (no posting rights, or no longer employed)"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

#: examining journal entries for management override: who keyed an entry is one of the characteristics looked at
_STANDARD = "AS 2401 .58-.62; ISA 240 .32(a), A41-A45"
KEY_RATIONALE = (
    key("defect", "posted_after_termination", evidence="master:users (the leaver's row); HR's leavers report",
        facts="the preparer's user id; termination_date; the entry's timestamp and posting date, both after it",
        conclusion="Entry keyed and posted under the ID of a user terminated before it was recorded: the user had no "
                   "right to post and the ERP access was not removed on the termination date. Exception.",
        standard=_STANDARD),
    key("defect", "posted_after_rights_withdrawn", evidence="master:users (posting_rights false, rights_withdrawn_on)",
        facts="the preparer's user id; rights_withdrawn_on; the entry's timestamp and posting date, both after it",
        conclusion="Entry keyed and posted by a user whose posting rights had been withdrawn on transfer to a role "
                   "without them: posted without authority. Exception.",
        standard=_STANDARD),
    key("decoy", "posted_before_termination", evidence="master:users (the leaver's row)",
        facts="the preparer's user id; termination_date; the entry's timestamp and posting date, both before it",
        conclusion="Entry keyed and posted while the user was still employed with posting rights, approved by another "
                   "user whose limit covers it: authorised. No exception.",
        standard=_STANDARD),
    key("decoy", "posted_before_rights_withdrawn", evidence="master:users (rights_withdrawn_on)",
        facts="the preparer's user id; rights_withdrawn_on; the entry's timestamp and posting date, both before it",
        conclusion="Entry keyed and posted before the user's transfer withdrew the posting rights: authorised. "
                   "No exception.",
        standard=_STANDARD),
)

REPORT_TITLE = "HR starters, leavers and transfers report FY2025"


@dataclass(frozen=True)
class Left:
    """A line of HR's report: a leaver (``ended`` is the termination date)."""
    ended: str
    name: str
    user_id: str
    role: str
    department: str


@dataclass(frozen=True)
class Moved:
    """A line of HR's report: a transfer to a role without posting rights (``ended``: rights withdrawn)."""
    ended: str
    name: str
    user_id: str
    role: str
    department: str
    new_role: str
    new_department: str


LEFT = Form(Left, "{ended}  {name} ({user_id}), {role}, {department}: left the company; termination date {ended}.",
            ended=DATE, name=NAME, user_id=TOKEN, role=NAME, department=NAME)
MOVED = Form(Moved, "{ended}  {name} ({user_id}) moved from {role}, {department} to {new_role}, {new_department} on "
             "{ended}; posting rights withdrawn with effect from that date.",
             ended=DATE, name=NAME, user_id=TOKEN, role=NAME, department=NAME, new_role=NAME, new_department=NAME)
#: HR's starters, leavers and transfers report: one line per change, by effective date
REPORT = LinesForm("Changes to finance staff in FY2025 notified by HR to IT for access changes (effective date, "
                   "change):\n", "\nIT is asked to remove ERP posting access on the effective date. The user master "
                   "is authoritative.", LEFT, MOVED)
# user_id, name, former role, department, approval limit: staff whose posting rights ended in FY2025
CHANGED_USERS = (
    ("NWALSH", "Nora Walsh", "AP Clerk", "Accounts Payable", 5_000),
    ("OBAKER", "Omar Baker", "GL Accountant", "General Ledger", 10_000),
    ("PROSSI", "Paolo Rossi", "AP Clerk", "Accounts Payable", 5_000),
    ("QDUBOIS", "Quentin Dubois", "GL Accountant", "General Ledger", 10_000),
    ("RIVANOVA", "Rita Ivanova", "AP Clerk", "Accounts Payable", 5_000),
    ("SMORENO", "Sofia Moreno", "GL Accountant", "General Ledger", 10_000),
    ("TNAKAMURA", "Taro Nakamura", "AP Clerk", "Accounts Payable", 5_000),
    ("UOKONKWO", "Uche Okonkwo", "GL Accountant", "General Ledger", 10_000),
    ("VLINDQVIST", "Vera Lindqvist", "AP Clerk", "Accounts Payable", 5_000),
    ("WHASSAN", "Walid Hassan", "GL Accountant", "General Ledger", 10_000),
    ("XSANTOS", "Ximena Santos", "AP Clerk", "Accounts Payable", 5_000),
    ("YCOHEN", "Yael Cohen", "GL Accountant", "General Ledger", 10_000),
    ("ZPETROV", "Zoran Petrov", "AP Clerk", "Accounts Payable", 5_000),
    ("AMENSAH", "Ama Mensah", "GL Accountant", "General Ledger", 10_000),
    ("BKOWALSKI", "Bartek Kowalski", "AP Clerk", "Accounts Payable", 5_000),
    ("CFERREIRA", "Clara Ferreira", "GL Accountant", "General Ledger", 10_000),
    ("DMURPHY", "Declan Murphy", "AP Clerk", "Accounts Payable", 5_000),
    ("EGARNIER", "Elodie Garnier", "GL Accountant", "General Ledger", 10_000),
)
#: roles without posting rights that transferred staff move to
NEW_ROLES = (("Treasury Analyst", "Treasury"), ("Sales Operations", "Sales"), ("FP&A Analyst", "Finance"))
#: document types each former role keys (as the books' AP clerks and GL accountants do)
ROLE_POSTS = {"AP Clerk": ("VI", "VN"), "GL Accountant": ("AC", "BC", "BI", "TX")}
#: share of changed users who left (the rest moved to a role without posting rights)
LEAVER_SHARE = 0.6
#: candidates are posted in this window, so every change date falls inside FY2025
WINDOW = (np.datetime64("2025-02-15"), np.datetime64("2025-11-15"))
FY_START, FY_END = np.datetime64("2025-01-01"), np.datetime64("2025-12-31")




def plant(b: WorldBuilder) -> None:
    """Add users whose posting rights ended during the year; hand each a group of the manual
    entries their former role keys, recorded and posted after (defects) or before (decoys) the
    date the rights ended. Only the preparer changes: amounts, accounts, dates and the approver
    (another user whose limit covers the entry) stay as the books have them."""
    rng, c = b.rng, b.cols
    post, keyed = c.post_date.astype("datetime64[D]"), c.entry_date.astype("datetime64[D]")
    first, last = np.minimum(post, keyed), np.maximum(post, keyed)
    no_rights = sorted(u["user_id"] for u in b.users if not u["posting_rights"])
    if (c.manual & np.isin(c.preparer, no_rights)).any():
        raise RuntimeError("JE-4 base entries are prepared by users without posting rights")
    least = max(1, -(-(b.n_defects + b.n_decoys) // (len(CHANGED_USERS) - 2)))
    groups = grouped_roles(b.n_defects, b.n_decoys, rng, least)
    people = [CHANGED_USERS[i] for i in sorted(rng.choice(len(CHANGED_USERS), size=len(groups), replace=False))]
    in_window = (first >= WINDOW[0]) & (last <= WINDOW[1])
    gap_max = 3 + int(round((1 - b.knobs.near_miss) * 40))
    changes: list[Left | Moved] = []
    for (size, is_defect), (uid, name, role, dept, limit) in zip(groups, people):
        kind_ok = c.manual & np.isin(c.doc_code, ROLE_POSTS[role])
        fits = kind_ok & in_window
        if int((fits & ~b.used).sum()) < size:  # a small slice: any entry of the role's kinds inside the year
            fits = kind_ok & (first > FY_START) & (last < FY_END)
        idxs = b.pick(size, where=fits, what=f"manual entries of the kinds an {role} keys")
        # the change date stays inside FY2025 and on one side of both the recording and the posting
        if is_defect:
            ended = max(first[idxs].min() - int(rng.integers(1, gap_max + 1)), FY_START)
        else:
            ended = min(last[idxs].max() + int(rng.integers(1, gap_max + 1)), FY_END)
        row, change = _changed_user(b, uid, name, role, dept, limit, str(ended))
        b.users.append(row)
        b.claim("JE-4", entries=idxs.tolist(), rows=[("users", uid)])
        changes.append(change)
        kind = "termination" if isinstance(change, Left) else "rights_withdrawn"
        for idx in idxs:
            c.preparer[idx] = uid
            facts = [uid, str(ended), b.date_str(keyed[idx]), b.date_str(post[idx])]
            assert USER_MAY_POST.check(row, facts[2], facts[3]).ok is not is_defect
            if is_defect:
                b.add_defect(int(idx), f"posted_after_{kind}", "UNAUTHORISED_USER", ["master:users"], facts=facts)
            else:
                b.add_decoy(int(idx), f"posted_before_{kind}", ["master:users"], facts=facts)
    for u in b.users:
        # empty text, not None: builder/_hash.py fills nulls of a text column with 0 and raises
        u["termination_date"] = u["termination_date"] or ""
        u.setdefault("rights_withdrawn_on", "")
    report = Lines(tuple(REPORT.in_order(changes)))  # by effective date, then by the line's text
    b.claim("JE-4", documents=[b.add_document("memo", REPORT_TITLE, REPORT.render(report), "2025-12-31")])


def _changed_user(b: WorldBuilder, uid: str, name: str, role: str, dept: str, limit: int,
                  ended: str) -> tuple[dict[str, Any], Left | Moved]:
    """The user master row of a user whose rights ended on ``ended`` (a leaver or a transfer, drawn),
    and the line of HR's report stating it."""
    rng = b.rng
    leaver = rng.random() < LEAVER_SHARE
    row = {"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
           "may_post": ", ".join(ROLE_POSTS[role]), "approval_limit": float(limit), "status": "active",
           "hire_date": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800))),
           "termination_date": "", "bank_account": b.bank_account(), "rights_withdrawn_on": ""}
    if leaver:
        row.update(status="terminated", termination_date=ended)
        return row, Left(ended, name, uid, role, dept)
    new_role, new_dept = NEW_ROLES[int(rng.integers(0, len(NEW_ROLES)))]
    # may_post keeps the posting profile the user held until rights_withdrawn_on (the document types
    # of the entries keyed before it); posting_rights says it is withdrawn
    row.update(role=new_role, department=new_dept, posting_rights=False, approval_limit=0.0, rights_withdrawn_on=ended)
    return row, Moved(ended, name, uid, role, dept, new_role, new_dept)


# ----------------------------------------------------------------- strategies
def _suspect_entries(kit: Kit) -> Generator[Step, Any, dict[str, dict[str, Any]]]:
    """The entries prepared by users the rule looks at (no posting rights, or terminated), each
    with its preparer's user master row under ``user``."""
    users = yield from kit.master("users")
    sus = {u["user_id"]: u for u in users if USER_MAY_POST.suspect(u)}
    if not sus:
        return {}
    rows = yield from kit.ledger(
        filters=[{"column": "preparer", "op": "in", "value": sorted(sus)}],
        columns=["entry_id", "posting_date", "entry_timestamp", "preparer", "debit", "description"],
    )
    return {eid: {**v, "user": sus[v["preparer"]]} for eid, v in entries_of(rows).items()}


RULE = SurfaceRule("the preparer has no posting rights or is terminated", "UNAUTHORISED_USER", _suspect_entries,
                   "Entry {entry_id} was prepared by {preparer}, who has no posting rights or is terminated.",
                   "Flagged {n} entries by users without posting rights or terminated.", ("master:users",))
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the user master, then checks every entry by a user without rights or terminated
    against the date the rights ended: flags entries keyed and posted after it, clears those keyed
    and posted before it."""
    ents = yield from _suspect_entries(kit)
    flags, clears = [], []
    for eid in sorted(ents):
        v = ents[eid]
        verdict = USER_MAY_POST.check(v["user"], str(v["entry_timestamp"])[:10], str(v["posting_date"])[:10])
        usd = f"Entry {eid} (USD {v['total_debit']:.2f})"
        if verdict.ok:
            clears.append(clear(eid, ["master:users"], f"{usd} is authorised: {verdict.why} (master:users)."))
        else:
            flags.append(flag(eid, "UNAUTHORISED_USER", ["master:users"],
                              f"{usd} is unauthorised: {verdict.why} (master:users)."))
    yield from dispose(kit, flags + clears)
    yield from kit.submit(f"Checked {len(ents)} entries by users without rights or terminated: flagged "
                          f"{len(flags)}, cleared {len(clears)}.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, rules=(USER_MAY_POST,),
            decisive="the date the preparer's posting rights ended (termination_date or rights_withdrawn_on in "
                     "master:users) against the dates the entry was keyed and posted")
