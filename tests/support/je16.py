"""Readers of a JE-16 world as the agent sees it (the listing, the master data, the documents) and the
checks that every planted defect breaks its rule and every decoy is cleared by its evidence, shared
by the task's tests and its key audit."""

from __future__ import annotations

import re

import numpy as np
import pytest

from jeval_ray.agents import entries_of
from jeval_ray.books.calendar import month_close_dates
from jeval_ray.tasks.je16 import KINDS

CLOSES = dict(month_close_dates())
#: the posting window the close policy states (08:00-18:00), in hours
HOURS = (8, 18)


# The rules as the policies state them, written here again (never the task's or the kit's code): a
# wrong rule shared by the planter, the solver and this audit would be invisible to all three.
def _standing(acct: dict | None) -> bool:
    """A plain active account, unchanged during FY2025 (what the red-flag screen trusts)."""
    return bool(acct) and acct.get("status") == "active" and (acct.get("opened") or "") < "2025-01-01" \
        and not acct.get("closed") and not acct.get("blocked_on")


def _account_open(acct: dict | None, posted: str) -> bool:
    """Whether ``acct`` accepted postings dated ``posted``: in the chart, opened on or before the date, not
    closed before it, and not blocked on it (a blocked account from its ``blocked_on`` date, or always
    when no date is given)."""
    if acct is None or acct.get("status") not in ("active", "blocked", "closed"):
        return False
    blocked = acct.get("status") == "blocked" and posted >= (acct.get("blocked_on") or "")
    return not blocked and (acct.get("opened") or "") <= posted and posted <= (acct.get("closed") or "9999")


def _may_post(user: dict | None, posted: str) -> bool:
    """Whether ``user`` could post on ``posted``: posting rights, and access not yet ended (it ends on the
    termination date)."""
    return user is not None and bool(user.get("posting_rights")) and posted <= (user.get("termination_date") or "9999")


def _off_window(ts: str, holidays: set[str]) -> bool:
    """Whether a manual entry keyed at ``ts`` is outside the posting window (a holiday, a weekend, or
    outside 08:00-18:00 by the entry timestamp)."""
    day = ts[:10]
    hour = int(ts[11:13]) + int(ts[14:16]) / 60
    return day in holidays or not np.is_busday(np.datetime64(day)) or hour < HOURS[0] or hour >= HOURS[1]


def _rules(ents: dict, users: dict, chart: dict, holidays: set[str], closes: dict[str, str]) -> dict[str, list[str]]:
    """Candidates per criterion by the red-flag rules the brief states (the listing and master data)."""
    def no_rights(user: dict | None) -> bool:
        return user is None or not user.get("posting_rights") or user.get("status") != "active"

    rule = {
        "UNBALANCED": lambda h: abs(h["residual"]) > 0.004,
        "SELF_APPROVAL": lambda h: bool(h.get("approver")) and h["approver"] == h["preparer"],
        "INVALID_ACCOUNT": lambda h: not all(_standing(chart.get(a)) for a in h["accounts"]),
        "UNAUTHORISED_USER": lambda h: h["source"] == "manual" and no_rights(users.get(h["preparer"])),
        "OFF_HOURS": lambda h: h["source"] == "manual" and _off_window(h["entry_timestamp"], holidays),
        # a period without a close date in the calendar has no cut-off to break
        "CUTOFF": lambda h: h["entry_timestamp"][:10] > closes.get(h["posting_date"][:7], "9999"),
    }
    return {k: [eid for eid in sorted(ents) if rule[k](ents[eid])] for k in KINDS}


#: where the billing interface posts an upload's residual, as the journal entry policy states it
SUSPENSE = "2990"


def entries(world) -> dict[str, dict]:
    """The listing grouped by entry; each entry's ``residual``: its suspense line's credit less debit (the
    upload's debits less its credits before the interface balanced it), 0 without one."""
    rows = [{**r, "posting_date": str(r["posting_date"]), "entry_timestamp": r["entry_timestamp"].isoformat()}
            for r in world.ledger.to_pylist()]
    ents = entries_of(rows)
    for h in ents.values():
        h["residual"] = 0.0
    for r in rows:
        if r["account"] == SUSPENSE:
            ents[r["entry_id"]]["residual"] = round(ents[r["entry_id"]]["residual"] + r["credit"] - r["debit"], 2)
    return ents


def master(world, name, key) -> dict[str, dict]:
    return {r[key]: r for r in world.master[name].to_pylist()}


def holidays(world) -> set[str]:
    return {r["date"] for r in world.master["calendar"].to_pylist() if r["kind"] == "holiday"}


def rule_hits(world) -> dict[str, list[str]]:
    return _rules(entries(world), master(world, "users", "user_id"), master(world, "accounts", "account"), holidays(world),
                  CLOSES)


def memo_covers(world, doc_id: str, h: dict) -> bool:
    """Whether an out-of-hours work authorisation names the entry's preparer, day and time."""
    body = world.document(doc_id).body
    day, a, b, c, d = re.search(r"on \w+ (\d{4}-\d\d-\d\d), between (\d\d):(\d\d) and (\d\d):(\d\d)", body).groups()
    users = {u.strip() for u in re.search(r"Authorised users: ([A-Z_, ]+)", body).group(1).split(",")}
    ts = h["entry_timestamp"]
    return ts[:10] == day and h["preparer"] in users and f"{a}:{b}" <= ts[11:16] < f"{c}:{d}"


def approval_row(world, doc_id: str, ref: str) -> dict | None:
    for line in world.document(doc_id).body.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 5 and cells[0] == ref:
            return {"amount": float(cells[1].replace(",", "")), "preparer": cells[2], "signer": cells[3], "date": cells[4]}
    return None


def rounding_report(world, doc_id: str) -> dict[str, float]:
    """Upload reference -> difference (debits - credits) on an interface rounding report."""
    return {ref: diff for ref, (diff, _n) in rounding_rows(world, doc_id).items()}


def rounding_rows(world, doc_id: str) -> dict[str, tuple[float, int]]:
    """Upload reference -> (difference, priced lines) on an interface rounding report."""
    out = {}
    for line in world.document(doc_id).body.splitlines():
        m = re.fullmatch(r"(\S+) \| (\d+) priced lines \| ([+-][\d,]+\.\d\d)", line.strip())
        if m:
            out[m.group(1)] = (float(m.group(3).replace(",", "")), int(m.group(2)))
    return out


def extension(world, doc_id: str) -> tuple[str, str, str, str]:
    """(period, original close, new close, issued) of a close calendar change."""
    body = world.document(doc_id).body
    p, old, new = re.search(r"close of period (\S+) is extended from (\S+) to (\S+)", body).groups()
    return p, old, new, re.search(r"Date: (\S+)", body).group(1)


def check_defects(w) -> set[str]:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    kinds = set()
    for d in w.defects:
        kinds.add(d.defect_type)
        if d.criteria == "COMPLETENESS_GAP":
            assert d.entry_id in w.hidden_entries and d.required_evidence == ("master:balances",)
            continue
        h = ents[d.entry_id]
        assert d.entry_id in hits[d.criteria], d
        # exactly one rule fires on a planted entry, so the criteria code is unambiguous
        assert [k for k in KINDS if d.entry_id in hits[k]] == [d.criteria], d
        if d.criteria == "UNBALANCED":
            diff = h["residual"]
            assert h["total_debit"] == pytest.approx(h["total_credit"], abs=0.001), "the interface balanced it"
            reported = rounding_report(w, d.required_evidence[1]).get(h["reference"])
            assert reported is None or abs(reported - diff) > 0.005, d  # not on the report as it stands
            assert d.misstatement == pytest.approx(abs(diff), abs=0.01)
        else:
            assert d.misstatement == pytest.approx(h["total_debit"])
        if d.criteria == "SELF_APPROVAL":
            assert h["source"] == "manual" and users[h["preparer"]]["role"] != "System"
            log = d.required_evidence[0]
            row = approval_row(w, log, h["reference"])
            assert row is None or row["date"] > h["posting_date"] or \
                users[row["signer"]]["approval_limit"] < h["total_debit"], d
        if d.criteria == "INVALID_ACCOUNT":
            assert not all(_account_open(chart.get(a), h["posting_date"]) for a in h["accounts"])
            # back-dated, not rejected: the account existed when the entry was keyed
            assert all(chart[a]["opened"] <= h["entry_timestamp"][:10] for a in h["accounts"])
        if d.criteria == "UNAUTHORISED_USER":
            assert not _may_post(users.get(h["preparer"]), h["posting_date"])
        if d.criteria == "OFF_HOURS":
            memos = [x.doc_id for x in w.documents if x.title.startswith("Out-of-hours work authorisation")]
            assert not any(memo_covers(w, m, h) for m in memos)
        if d.criteria == "CUTOFF":
            rec = h["entry_timestamp"][:10]
            assert rec > CLOSES[h["posting_date"][:7]]
            exts = [extension(w, x.doc_id) for x in w.documents if x.title.startswith("Close calendar change")]
            assert all(rec > new for p, _o, new, _i in exts if p == h["posting_date"][:7]), d
    return kinds


def check_decoys(w) -> None:
    ents = entries(w)
    users, chart = master(w, "users", "user_id"), master(w, "accounts", "account")
    hits = rule_hits(w)
    for d in w.decoys:
        h = ents[d.entry_id]
        fired = [k for k in KINDS if d.entry_id in hits[k]]
        assert len(fired) == 1, d  # looks like exactly one kind of exception
        if d.decoy_type == "interface_rounding_reported":
            body = w.document(d.clearing_evidence[2]).body
            per_root = float(re.search(r"of at most USD ([\d.]+) x sqrt\(n\)", body).group(1))
            reported, n = rounding_rows(w, d.clearing_evidence[1])[h["reference"]]
            diff = h["residual"]
            # tolerated: three standard deviations of n half-cent roundings, USD 0.0087 x sqrt(n)
            assert 0 < abs(diff) <= per_root * np.sqrt(n) + 1e-9 and h["preparer"] == "SYS_INTERFACE"
            assert h["total_debit"] == pytest.approx(h["total_credit"], abs=0.001), "the interface balanced it"
            assert reported == pytest.approx(diff, abs=0.005)
        elif d.decoy_type == "signed_off_on_outage_log":
            row = approval_row(w, d.clearing_evidence[0], h["reference"])
            assert h["source"] == "manual" and row["preparer"] == h["preparer"] != row["signer"]
            assert row["date"] <= h["posting_date"] and users[row["signer"]]["approval_limit"] >= h["total_debit"]
            assert row["amount"] == pytest.approx(h["total_debit"])
        elif d.decoy_type == "account_opened_before_posting":
            assert all(_account_open(chart.get(a), h["posting_date"]) for a in h["accounts"])
        elif d.decoy_type == "posted_before_termination":
            assert _may_post(users[h["preparer"]], h["posting_date"]) and users[h["preparer"]]["termination_date"]
        elif d.decoy_type == "authorised_out_of_hours_work":
            assert _off_window(h["entry_timestamp"], holidays(w)) and memo_covers(w, d.clearing_evidence[0], h)
            body = w.document(d.clearing_evidence[0]).body
            # a prior authorisation whose purpose fits the entry (issue 15: a memo for another purpose clears nothing)
            assert re.search(r"Date: (\S+)", body).group(1) < h["entry_timestamp"][:10]
            assert f"accruals of period {h['posting_date'][:7]}" in body
        else:
            assert d.decoy_type == "recorded_within_close_extension"
            rec = h["entry_timestamp"][:10]
            period, old, new, issued = extension(w, d.clearing_evidence[2])
            assert period == h["posting_date"][:7] and old == CLOSES[period] < rec <= new and issued <= old
            assert np.is_busday(np.datetime64(rec))
