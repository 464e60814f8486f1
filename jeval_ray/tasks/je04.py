"""JE-4 (L1): unauthorised posters.

Planted: manual entries prepared by a user without posting rights (the treasury analyst, the
sales-operations user or the IT administrator), or by a user after his or her termination date
(leavers whose ERP access was revoked late). Decoys: entries prepared by a leaver *before* the
termination date, when the user still held posting rights. Required evidence: the user master
(``master:users``: posting rights, status, termination date). HR leaver notifications in the
support pack corroborate the termination dates.

Red-flag rule: the preparer has no posting rights or is terminated. The base preparers are
active staff with posting rights, and the leavers are new rows of the user master, so the base
never trips the rule; ``plant`` re-checks it.
"""

from __future__ import annotations

import numpy as np

from jeval_ray.agents._script import Kit, entries_of
from jeval_ray.tasks._spec import spec

SPEC = spec(
    "JE-4",
    "L1",
    'Unauthorised posters',
    objective="Find entries posted by users without posting rights or after the user's termination date.",
    defect='posted by a user without posting rights or after termination',
    decoys='user terminated after the posting date',
    required_evidence='user master',
    sources=('general_ledger', 'user_master'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('UNAUTHORISED_USER', "posted by a user without posting rights or after the user's termination"),
    ),
    withheld_variant=('search_documents',),
    available=True,
)

# user_id, name, role, department, approval limit: staff who left during FY2025
LEAVERS = (
    ("NWALSH", "Nora Walsh", "AP Clerk", "Accounts Payable", 5_000),
    ("OBAKER", "Omar Baker", "GL Accountant", "General Ledger", 10_000),
    ("PROSSI", "Paolo Rossi", "AP Clerk", "Accounts Payable", 5_000),
    ("QDUBOIS", "Quentin Dubois", "GL Accountant", "General Ledger", 10_000),
)
#: templates each user without posting rights would plausibly touch (tried before any manual entry)
NO_RIGHTS_AFFINITY = {
    "KLEE": ("vendor_payment", "customer_receipt"),
    "LGARCIA": ("customer_invoice", "customer_receipt"),
    "MCHEN": ("vendor_invoice", "accrual"),
}


def plant(b) -> None:
    """Add two leavers to the user master, plant postings by users without rights or after
    termination, and postings by leavers shortly before their termination date."""
    rng = b.rng
    e = b.e
    near = b.knobs.near_miss
    post = e["post_date"].astype("datetime64[D]")
    manual = e["manual"]
    no_rights = sorted(u["user_id"] for u in b.users if not u["posting_rights"])

    # the base never uses these preparers; keep it so if the generator ever changes
    base_bad = manual & np.isin(e["preparer"], no_rights)
    if base_bad.any():
        raise RuntimeError("JE-4 base entries are prepared by users without posting rights")

    leavers = [LEAVERS[i] for i in sorted(rng.choice(len(LEAVERS), size=2, replace=False))]
    # postings after termination vs without rights: both kinds appear once there are two defects
    n_after = int(rng.integers(1, b.n_defects)) if b.n_defects >= 2 else int(rng.integers(0, b.n_defects + 1))
    n_rights = b.n_defects - n_after
    window = 7 + int(round((1 - near) * 90))  # decoys sit this many days or fewer before termination
    added = []
    for k, (uid, name, role, dept, limit) in enumerate(leavers):
        # a leaver keyed payables and GL work, never the AR clerk's postings, and stays out of the band
        # just below his or her own approval limit (another task's red flag)
        cents = e["debit_cents"]
        fits = manual & ~np.isin(e["template"], ("customer_invoice", "customer_receipt")) & \
            ~((cents >= 0.8 * limit * 100) & (cents < limit * 100))
        n_dec = b.n_decoys // 2 + (b.n_decoys % 2 if k == 0 else 0)
        n_def = n_after // 2 + (n_after % 2 if k == 1 else 0)
        if int((fits & ~b.used).sum()) < n_dec + n_def + n_rights:
            fits = manual
        t = _termination_date(np.sort(post[fits & ~b.used]), n_dec, n_def, rng)
        w = window
        while int((fits & ~b.used & (post < t) & (post >= t - w)).sum()) < n_dec and w < 400:
            w += 14
        for idx in b.pick(n_dec, where=fits & (post < t) & (post >= t - w), what="manual entries before a termination") if n_dec else []:
            e["preparer"][idx] = uid
            b.add_decoy(idx, "posted_before_termination", ["master:users"])
        for idx in b.pick(n_def, where=fits & (post > t), what="manual entries after a termination") if n_def else []:
            e["preparer"][idx] = uid
            b.add_defect(idx, "posted_after_termination", "UNAUTHORISED_USER", ["master:users"])
        hired = np.datetime64("2019-01-01") + int(rng.integers(0, 1800))
        added.append({"user_id": uid, "name": name, "role": role, "department": dept, "posting_rights": True,
                      "approval_limit": float(limit), "status": "terminated", "hire_date": str(hired),
                      "termination_date": str(t), "bank_account": ""})
        notified = t - int(rng.integers(5, 20))
        b.add_document(
            "memo", f"HR leaver notification - {name}",
            f"Employee: {name} ({role}, {dept}), ERP user {uid}.\nLast working day and termination date: {t}.\n"
            f"Line manager: please return equipment and confirm knowledge transfer. IT: disable all system access "
            f"on the termination date.\nIT access removal request ITSR-{int(rng.integers(1000, 9999))} raised on "
            f"{notified}.",
            str(notified),
        )
    for u in added:
        u["bank_account"] = "US" + "".join(str(d) for d in rng.integers(0, 10, size=18))

    for _ in range(n_rights):
        uid = str(rng.choice(no_rights))
        pref = manual & np.isin(e["template"], NO_RIGHTS_AFFINITY.get(uid, ()))
        where = pref if int((pref & ~b.used).sum()) else manual
        idx = int(b.pick(1, where=where, what="manual entries")[0])
        e["preparer"][idx] = uid
        if e["approver"][idx] == uid:  # never the case in the base; keep the defect single-cause
            e["approver"][idx] = "JWRIGHT"
        b.add_defect(idx, "no_posting_rights", "UNAUTHORISED_USER", ["master:users"])

    b.users.extend(added)
    for u in b.users:
        # empty text, not None: world/_hash.py fills nulls of a text column with 0 and raises
        u["termination_date"] = u["termination_date"] or ""


def _termination_date(dates: np.ndarray, n_before: int, n_after: int, rng) -> np.datetime64:
    """A termination date with at least ``n_before`` of ``dates`` strictly before it and ``n_after``
    strictly after it, preferably in April-September (mid-year leavers); ``pick`` reports the
    impossible case."""
    lo = dates[n_before - 1] + 1 if n_before and len(dates) >= n_before else np.datetime64("2025-01-02")
    hi = dates[len(dates) - n_after] - 1 if n_after and len(dates) >= n_after else np.datetime64("2025-12-30")
    pref_lo, pref_hi = max(lo, np.datetime64("2025-04-01")), min(hi, np.datetime64("2025-09-30"))
    if pref_lo <= pref_hi:
        lo, hi = pref_lo, pref_hi
    if lo > hi:
        return lo
    return lo + int(rng.integers(0, int((hi - lo).astype(int)) + 1))


# ----------------------------------------------------------------- strategies
def _suspects(users: list[dict], dated: bool) -> dict[str, dict]:
    """Users the red-flag rule looks at: no posting rights, terminated, or with a termination date."""
    return {u["user_id"]: u for u in users
            if not u.get("posting_rights") or u.get("status") == "terminated" or (dated and u.get("termination_date"))}


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
    comparing the posting date with the termination date."""
    users = yield from kit.master("users")
    bad = _suspects(users, dated=False)
    ents = yield from _entries_by(kit, sorted(bad))
    for eid in sorted(ents):
        if kit.calls_left <= 1:
            break
        p = ents[eid]["preparer"]
        yield from kit.flag(eid, "UNAUTHORISED_USER", ["master:users"],
                            f"Entry {eid} was prepared by {p}, who has no posting rights or is terminated.")
    yield from kit.submit(f"Flagged {len(ents)} entries by users without posting rights or terminated.")


def careful(kit: Kit):
    """Reads the user master, then checks every posting by a user without rights or with a
    termination date: flags those without rights or dated after termination, clears the rest."""
    users = yield from kit.master("users")
    sus = _suspects(users, dated=True)
    ents = yield from _entries_by(kit, sorted(sus))
    flags, clears = [], []
    for eid in sorted(ents):
        v = ents[eid]
        u = sus[v["preparer"]]
        term = u.get("termination_date") or ""
        if not u.get("posting_rights"):
            flags.append((eid, f"{u['user_id']} ({u.get('role')}) holds no posting rights in the user master"))
        elif term and v["posting_date"] > term:
            flags.append((eid, f"{u['user_id']} was terminated on {term}, before the posting date {v['posting_date']}"))
        elif term:
            clears.append((eid, f"{u['user_id']} held posting rights and was terminated only on {term}, after the "
                                f"posting date {v['posting_date']}"))
        else:
            # terminated with no date on file: nothing shows the user was still employed
            flags.append((eid, f"{u['user_id']} is marked {u.get('status')} in the user master with no "
                               "termination date on file"))
    for eid, why in flags:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        yield from kit.flag(eid, "UNAUTHORISED_USER", ["master:users"],
                            f"Entry {eid} (USD {v['total_debit']:.2f}, posted {v['posting_date']}) is unauthorised: {why}.")
    for eid, why in clears:
        if kit.calls_left <= 1:
            break
        v = ents[eid]
        yield from kit.clear(eid, ["master:users"],
                             f"Entry {eid} (USD {v['total_debit']:.2f}, posted {v['posting_date']}) is authorised: {why}.")
    yield from kit.submit(f"Checked {len(ents)} postings by users without rights or with a termination date: "
                          f"flagged {len(flags)}, cleared {len(clears)}.")
