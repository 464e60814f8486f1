"""JE-4 (L1): unauthorised posters.

Staff whose posting rights ended during FY2025 keep their ERP user until IT removes it, which
can take weeks; entries keyed under such a user after the date the rights ended were posted by
someone without the right to post (the user master is authoritative, the ERP's late removal is
the control failure). Two kinds of change are planted, each a new row of the user master with
the date it took effect: leavers (``status`` terminated, ``termination_date``) and staff moved
to a role without posting rights (``posting_rights`` false, ``rights_withdrawn_on``).

Every candidate is a manual entry prepared by one of these users: all drawn from one pool
(manual payables and GL postings, the same dates, amounts and texts), in groups of one or two
per user, and each user's group made defects or decoys at random; the users themselves are drawn
per seed from one list. So the ledger alone does not tell them apart; the user master does.

* Defects ``posted_after_termination``: the leaver's termination date is before the posting
  date. Decisive facts: the user, the termination date and the posting date.
* Defects ``posted_after_rights_withdrawn``: the user's posting rights were withdrawn before the
  posting date. Decisive facts: the user, the withdrawal date and the posting date.
* Decoys ``posted_before_termination`` / ``posted_before_rights_withdrawn``: the user's rights
  ended only after the posting date. Decisive facts: the user, the date the rights ended and the
  posting date.

HR's year-end starters, leavers and transfers report (one document) corroborates the dates.
Red-flag rule: the preparer has no posting rights or is terminated (the user master). The base
preparers are active staff with posting rights and the changed users are new rows, so the base
never trips the rule; ``plant`` re-checks it. Required evidence: ``master:users``. ``near_miss``
brings the change dates closer to the postings.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec
from jeval_ray.tasks.je03 import split_in_groups

SPEC = spec(
    "JE-4",
    "L1",
    'Unauthorised posters',
    objective="Find entries posted by users without posting rights or after the user's termination date.",
    defect='posted by a user after termination, or after his or her posting rights were withdrawn',
    decoys="postings by leavers and transferred staff dated before their rights ended",
    required_evidence='user master',
    sources=('general_ledger', 'user_master'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNAUTHORISED_USER', "posted by a user without posting rights or after the user's termination"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

REPORT_TITLE = "HR starters, leavers and transfers report FY2025"
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
#: share of changed users who left (the rest moved to a role without posting rights)
LEAVER_SHARE = 0.6
#: candidates are posted in this window, so every change date falls inside FY2025
WINDOW = (np.datetime64("2025-02-15"), np.datetime64("2025-11-15"))


def plant(b) -> None:
    """Add users whose posting rights ended during the year; give each a group of manual entries
    dated after (defects) or before (decoys) the date the rights ended."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    post = e["post_date"].astype("datetime64[D]")
    manual = e["manual"]
    no_rights = sorted(u["user_id"] for u in b.users if not u["posting_rights"])
    if (manual & np.isin(e["preparer"], no_rights)).any():
        raise RuntimeError("JE-4 base entries are prepared by users without posting rights")

    least = max(1, -(-(b.n_defects + b.n_decoys) // (len(CHANGED_USERS) - 2)))
    groups = [(g, True) for g in split_in_groups(b.n_defects, rng, least)]
    groups += [(g, False) for g in split_in_groups(b.n_decoys, rng, least)]
    groups = [groups[i] for i in rng.permutation(len(groups))]
    people = [CHANGED_USERS[i] for i in sorted(rng.choice(len(CHANGED_USERS), size=len(groups), replace=False))]
    # payables and GL work (never the AR clerk's postings), inside the window
    pool = manual & ~np.isin(e["template"], ("customer_invoice", "customer_receipt")) & \
        (post >= WINDOW[0]) & (post <= WINDOW[1])
    gap_max = 3 + int(round((1 - near) * 40))
    added, report = [], []
    for (size, is_defect), (uid, name, role, dept, limit) in zip(groups, people):
        # stay out of the band just below the user's own approval limit (another task's red flag)
        cents = e["debit_cents"]
        fits = pool & ~((cents >= 0.8 * limit * 100) & (cents < limit * 100))
        if int((fits & ~b.used).sum()) < size:  # a small slice: any manual entry the dates allow
            fits = manual & (post > np.datetime64("2025-01-02")) & (post < np.datetime64("2025-12-31"))
        idxs = b.pick(size, where=fits, what="manual entries")
        dates = post[idxs]
        # the change date stays inside FY2025 (the fallback pool reaches its first and last days)
        if is_defect:
            ended = max(dates.min() - int(rng.integers(1, gap_max + 1)), np.datetime64("2025-01-01"))
        else:
            ended = min(dates.max() + int(rng.integers(1, gap_max + 1)), np.datetime64("2025-12-31"))
        leaver = rng.random() < LEAVER_SHARE
        row = {"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
               "approval_limit": float(limit), "status": "active",
               "hire_date": str(np.datetime64("2019-01-01") + int(rng.integers(0, 1800))),
               "termination_date": "", "bank_account": b.bank_account(), "rights_withdrawn_on": ""}
        if leaver:
            row.update(status="terminated", termination_date=str(ended))
            report.append((str(ended), f"{name} ({uid}), {role}, {dept}: left the company; termination date {ended}."))
            kind = "termination"
        else:
            new_role, new_dept = NEW_ROLES[int(rng.integers(0, len(NEW_ROLES)))]
            row.update(role=new_role, department=new_dept, posting_rights=False, approval_limit=0.0,
                       rights_withdrawn_on=str(ended))
            report.append((str(ended), f"{name} ({uid}) moved from {role}, {dept} to {new_role}, {new_dept} on "
                                       f"{ended}; posting rights withdrawn with effect from that date."))
            kind = "rights_withdrawn"
        added.append(row)
        for idx in idxs:
            e["preparer"][idx] = uid
            if e["approver"][idx] == uid:  # never the case in the base; keep the finding single-cause
                e["approver"][idx] = "JWRIGHT"
            facts = [uid, str(ended), b.date_str(post[idx])]
            if is_defect:
                b.add_defect(int(idx), f"posted_after_{kind}", "UNAUTHORISED_USER", ["master:users"], facts=facts)
            else:
                b.add_decoy(int(idx), f"posted_before_{kind}", ["master:users"], facts=facts)

    b.users.extend(added)
    for u in b.users:
        # empty text, not None: world/_hash.py fills nulls of a text column with 0 and raises
        u["termination_date"] = u["termination_date"] or ""
        u.setdefault("rights_withdrawn_on", "")
    b.add_document(
        "memo", REPORT_TITLE,
        "Changes to finance staff in FY2025 notified by HR to IT for access changes (effective date, change):\n"
        + "\n".join(f"{d}  {text}" for d, text in sorted(report))
        + "\nIT is asked to remove ERP posting access on the effective date. The user master is authoritative.",
        "2025-12-31",
    )


# ----------------------------------------------------------------- strategies
def _suspects(users: list[dict]) -> dict[str, dict]:
    """Users the red-flag rule looks at: no posting rights, or terminated."""
    return {u["user_id"]: u for u in users if not u.get("posting_rights") or u.get("status") == "terminated"}


def _entries_by(kit: Kit, user_ids: list[str]):
    if not user_ids:
        return {}
    rows = yield from kit.ledger(
        filters=[{"column": "preparer", "op": "in", "value": user_ids}, {"column": "line_no", "op": "eq", "value": 1}],
        columns=["entry_id", "posting_date", "preparer", "debit", "description"],
    )
    return entries_of(rows)


def naive(kit: Kit):
    """Flags every entry prepared by a user without posting rights or marked terminated, without
    comparing the posting date with the date the rights ended."""
    users = yield from kit.master("users")
    bad = _suspects(users)
    ents = yield from _entries_by(kit, sorted(bad))
    for eid in sorted(ents):
        if kit.calls_left <= 1:
            break
        p = ents[eid]["preparer"]
        yield from kit.flag(eid, "UNAUTHORISED_USER", ["master:users"],
                            f"Entry {eid} was prepared by {p}, who has no posting rights or is terminated.")
    yield from kit.submit(f"Flagged {len(ents)} entries by users without posting rights or terminated.")


def careful(kit: Kit):
    """Reads the user master, then checks every posting by a user without rights or terminated
    against the date the rights ended: flags postings dated after it, clears those before."""
    users = yield from kit.master("users")
    sus = _suspects(users)
    ents = yield from _entries_by(kit, sorted(sus))
    flags, clears = [], []
    for eid in sorted(ents):
        v = ents[eid]
        u = sus[v["preparer"]]
        posted = v["posting_date"]
        if u.get("status") == "terminated":
            end, what = u.get("termination_date") or "", "was terminated on"
        else:
            end, what = u.get("rights_withdrawn_on") or "", "had posting rights withdrawn on"
        if not end:
            flags.append((eid, f"{u['user_id']} ({u.get('role')}) holds no posting rights in master:users and no date "
                               "shows the user ever held them"))
        elif posted > end:
            flags.append((eid, f"{u['user_id']} {what} {end}, before the posting date {posted}"))
        else:
            clears.append((eid, f"{u['user_id']} {what} {end} only, after the posting date {posted}; the user "
                                "held posting rights when the entry was posted"))
    for eid, why in flags:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        yield from kit.flag(eid, "UNAUTHORISED_USER", ["master:users"],
                            f"Entry {eid} (USD {v['total_debit']:.2f}) is unauthorised: {why} (master:users).")
    for eid, why in clears:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        yield from kit.clear(eid, ["master:users"],
                             f"Entry {eid} (USD {v['total_debit']:.2f}) is authorised: {why} (master:users).")
    yield from kit.submit(f"Checked {len(ents)} postings by users without rights or terminated: flagged "
                          f"{len(flags)}, cleared {len(clears)}.")
