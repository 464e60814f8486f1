"""JE-T1 (L1): approvals outside a deputy's delegation (the task kit's acceptance task; tests only).

Deputies approve manual entries for the Controller; the Controller's memo lists each delegation. Defects are posted
outside every delegation of their approver, decoys within one. Written with the kit alone (docs/adding_a_task.md)."""

from __future__ import annotations

import itertools
from collections.abc import Generator
from typing import Any
from dataclasses import dataclass

import numpy as np

from jeval_ray.builder import WorldBuilder
from jeval_ray.builder.spec import key, spec
from jeval_ray.protocol.kit import Kit, Step, entries_of
from jeval_ray.tasks.taskkit import (DATE, NAME, TOKEN, Form, Lines, LinesForm, SurfaceRule, Task, Verdict, clear,
                                     dispose, flag, roles, split_in_groups, surface_naive, tally)

SPEC = spec("JE-T1", "L1", "Approvals outside a delegation",
            objective="Find entries approved by a deputy outside the deputy's delegations of approval authority.",
            defect="approved by a deputy and posted outside every delegation of the deputy",
            decoys="entries approved by deputies and posted within a delegation", required_evidence="the memo",
            sources=("general_ledger", "documents", "user_master"),
            tools=("list_documents", "open_document", "search_documents", "query_ledger", "get_entry",
                   "get_master_data", "flag_entry", "clear_entry", "submit"),
            criteria=(("APPROVAL_AUTHORITY", "approved by a user without approval authority on the day"),),
            withheld_variant=("search_documents",), available=True)
KEY_RATIONALE = (
    key("defect", "approved_outside_delegation", evidence="the Controller's delegation memo",
        facts="the approver; the posting date; the deputy's delegations, none of which covers it",
        conclusion="Approved by a deputy outside every delegation: approved without authority. Exception."),
    key("decoy", "approved_within_delegation", evidence="the Controller's delegation memo",
        facts="the approver; the posting date; the deputy's delegation that covers it",
        conclusion="Approved by a deputy within the delegation: authorised. No exception."),
)
MEMO_TITLE = "Controller's delegations of approval authority FY2025"
DEPUTIES = tuple(((n[0] + n.split()[1]).upper(), n) for n in (
    "Hanna Berg, Ines Moreau, Jun Tanaka, Kemi Adeyemi, Luka Novak, Marta Silva, Nnamdi Okafor, Olivia Hall, Pia Lund, "
    "Quinn Reyes, Ravi Menon, Sara Blom, Tomas Varga, Uma Iyer, Victor Lam, Wendy Cho").split(", "))


@dataclass(frozen=True)
class Delegation:  # a line of the memo
    start: str
    name: str
    user_id: str
    until: str


LINE_ = Form(Delegation, "{start}  {name} ({user_id}) may approve journal entries for the Controller from {start} "
             "to {until} inclusive.", start=DATE, name=NAME, user_id=TOKEN, until=DATE)
MEMO = LinesForm("Temporary delegations of approval authority (start, deputy, period):\n",
                 "\nA deputy's authority ends on the last day stated; the Controller approves all else.", LINE_)


@dataclass(frozen=True)
class DelegationInForce:
    statement: str = "a deputy may approve only entries posted within one of the deputy's delegations"

    def check(self, uid: str, periods: list[Delegation], posted: str) -> Verdict:
        stated = "; ".join(f"{d.start} to {d.until}" for d in periods) or "none"
        ok = any(d.start <= posted <= d.until for d in periods)
        return Verdict(ok, f"{uid} posted on {posted}, {'within' if ok else 'outside'} the delegations stated for "
                           f"{uid} in the Controller's memo ({stated})")


IN_FORCE = DelegationInForce()


def _periods(uid: str, name: str, days: list[int], flags: list[bool], rng) -> list[Delegation]:
    """A delegation around each run of decoys (``days``: posting day numbers, in order), never a defect's day."""
    out, pos = [], 0
    for is_defect, run in itertools.groupby(flags):
        i, j = pos, pos + len(list(run)) - 1
        pos = j + 1
        if not is_defect:
            lo = days[i - 1] + 1 if i else days[i] - 30
            hi = days[j + 1] - 1 if j + 1 < len(days) else days[j] + 30
            first, last = days[i] - rng.integers(0, days[i] - lo + 1), days[j] + rng.integers(0, hi - days[j] + 1)
            out.append(Delegation(str(np.datetime64(int(first), "D")), name, uid, str(np.datetime64(int(last), "D"))))
    return out


def plant(b: WorldBuilder) -> None:
    """Roles from one pool, in chunks to deputies (one entry a day each); delegations around the decoys."""
    rng, c, post = b.rng, b.cols, b.cols.post_date.astype("datetime64[D]")
    flags = roles(b.n_defects, b.n_decoys, rng)
    chunks = split_in_groups(len(flags), rng, 3)
    people = [DEPUTIES[i] for i in rng.choice(len(DEPUTIES), size=len(chunks), replace=False)]
    fits = c.manual & (post >= np.datetime64("2025-02-01")) & (post <= np.datetime64("2025-11-30"))
    controller = max(b.users, key=lambda u: u["approval_limit"])  # a deputy holds the Controller's limit
    lines, planted, start = [], [], 0
    for size, (uid, name) in zip(chunks, people):
        idxs: list[int] = []
        for _ in range(size):
            idxs += b.pick(1, where=fits & ~np.isin(post, post[idxs]), what="manual entries inside the window").tolist()
        idxs.sort(key=lambda i: post[i])
        mine, start = flags[start:start + size], start + size
        periods = _periods(uid, name, [int(post[i].astype(np.int64)) for i in idxs], mine, rng)
        lines += periods
        b.users.append({**controller, "user_id": uid, "name": name, "role": "Deputy Controller",
                        "bank_account": b.bank_account()})
        b.claim("JE-T1", entries=idxs, rows=[("users", uid)])
        for idx, is_defect in zip(idxs, mine):
            c.approver[idx] = uid
            assert IN_FORCE.check(uid, periods, b.date_str(post[idx])).ok is not is_defect
            planted.append((idx, is_defect, [uid, b.date_str(post[idx])] + [d.until for d in periods]))
    memo = b.add_document("memo", MEMO_TITLE, MEMO.render(Lines(tuple(MEMO.in_order(lines)))), "2025-12-31")
    b.claim("JE-T1", documents=[memo])
    for idx, is_defect, facts in planted:
        (b.add_defect(idx, "approved_outside_delegation", "APPROVAL_AUTHORITY", [memo], facts=facts) if is_defect
         else b.add_decoy(idx, "approved_within_delegation", [memo], facts=facts))


def _approved_by_deputies(kit: Kit) -> Generator[Step, Any, dict[str, dict]]:
    users = yield from kit.master("users")
    deputies = sorted(u["user_id"] for u in users if u.get("role") == "Deputy Controller")
    rows = yield from kit.ledger(filters=[{"column": "approver", "op": "in", "value": deputies}],
                                 columns=["entry_id", "posting_date", "approver", "debit", "description"])
    return entries_of(rows)


RULE = SurfaceRule("the entry was approved by a Deputy Controller", "APPROVAL_AUTHORITY", _approved_by_deputies,
                   "Entry {entry_id} was approved by {approver}, a deputy, not the Controller.",
                   "Flagged {n} entries approved by deputies.", ("master:users",))
naive = surface_naive(RULE)


def careful(kit: Kit) -> Generator[Step, Any, None]:
    """Reads the memo through its form; flags deputies' entries posted outside their delegations, clears the rest."""
    ents = yield from _approved_by_deputies(kit)
    memo_id = (yield from kit.find_document("delegation approval authority", "delegations", "approval")) or ""
    memo = MEMO.parse(((yield from kit.open(memo_id)) if memo_id else {}).get("body", ""))
    stated: list[Delegation] = list(memo.lines) if memo else []
    periods = {d.user_id: [x for x in stated if x.user_id == d.user_id] for d in stated}
    decisions = []
    for eid, v in sorted(ents.items()):
        verdict = IN_FORCE.check(v["approver"], periods.get(v["approver"], []), str(v["posting_date"])[:10])
        why = f"Entry {eid} (USD {v['total_debit']:.2f}): {verdict.why} ({memo_id})."
        decisions.append(clear(eid, [memo_id], why) if verdict.ok else
                         flag(eid, "APPROVAL_AUTHORITY", [memo_id], why))
    yield from dispose(kit, decisions)
    flags, clears = tally(decisions)
    yield from kit.submit(f"Checked {len(ents)} deputy approvals against the memo: flagged {flags}, cleared {clears}.")


TASK = Task(SPEC, plant, careful, naive, KEY_RATIONALE, rules=(IN_FORCE,),
            decisive="the posting date against the approver's delegations (first to last day) in the Controller's memo")
