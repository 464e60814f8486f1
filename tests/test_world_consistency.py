"""Every task's world is a consistent set of books except exactly where something was planted.

The checks read the world as the agent sees it (the ledger listing, the master tables) plus the
lines of entries left out of the listing, which only the builder knows (they still move the
balances). "Planted" means an entry of the key: a defect, or a decoy where the check says so.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.books import chart
from jeval_ray.books.master import ALLOWED_ACCOUNTS
from jeval_ray.tasks import available_tasks, get_task, resolve_knobs, task_module
from jeval_ray.world import WorldBuilder

TASKS = [t.id for t in available_tasks()]
SEEDS = range(10)
#: balance-sheet accounts whose balance may sit on either side (a clearing account)
EITHER_SIDE = {"2050"}
#: decoys whose ERP approval field is planted to look like self-approval, the approval of record being
#: elsewhere (checked by the task's key audit): JE-2's journal vouchers signed by an independent
#: approver (every JE-2 decoy), JE-16's entries signed off on the workflow outage's approval log
APPROVAL_OUTSIDE_ERP = {"JE-2": None, "JE-16": {"signed_off_on_outage_log"}}


def _built(task_id: str, seed: int):
    spec = get_task(task_id)
    b = WorldBuilder(spec, seed, resolve_knobs(task_id, None))
    task_module(task_id).plant(b)
    return b, b.build()


@pytest.fixture(scope="module", params=TASKS)
def worlds(request):
    return request.param, [_built(request.param, s) for s in SEEDS]


def _entries(w) -> dict[str, dict]:
    """Per listed entry: its lines (account, signed cents) and header fields."""
    t = w.ledger
    cols = {c: t.column(c).to_pylist() for c in ("entry_id", "account", "debit", "credit", "entry_timestamp",
                                                 "preparer", "approver", "source", "document_type", "vendor_id",
                                                 "posting_date")}
    out: dict[str, dict] = {}
    for i, eid in enumerate(cols["entry_id"]):
        e = out.setdefault(eid, {"lines": [], **{c: cols[c][i] for c in ("entry_timestamp", "preparer", "approver",
                                                                          "source", "document_type", "vendor_id",
                                                                          "posting_date")}})
        e["lines"].append((cols["account"][i], round(cols["debit"][i] * 100) - round(cols["credit"][i] * 100)))
    return out


def _hidden_lines(b) -> list[tuple[int, str, int]]:
    """(fiscal month, account, cents) of every line of the entries left out of the listing."""
    le, acct, val = b.final_lines()
    hid = b.hidden[le]
    month = b.e["post_date"].astype("datetime64[M]").astype(np.int64) - (2025 - 1970) * 12 + 1
    return [(int(np.clip(month[i], 1, 12)), str(a), int(v)) for i, a, v in zip(le[hid], acct[hid], val[hid])]


def _approved_amount(lines: list[tuple[str, int]]) -> int:
    """The amount a manual entry's approval covers: a vendor invoice's total payable (its line on
    2000; a price variance in the company's favour does not raise it), else the entry's debits."""
    ap = [-v for a, v in lines if a == "2000" and v < 0]
    return sum(ap) if ap else sum(v for _, v in lines if v > 0)


def _planted(w, decoys: bool = False) -> set[str]:
    ids = {d.entry_id for d in w.defects}
    return ids | ({d.entry_id for d in w.decoys} if decoys else set())


def test_entries_balance_except_planted_imbalances(worlds):
    task, built = worlds
    for b, w in built:
        bad = {eid for eid, e in _entries(w).items() if sum(v for _, v in e["lines"])}
        assert bad <= _planted(w, decoys=True), f"{task} seed {w.seed}: unbalanced entries outside the key {sorted(bad - _planted(w, True))[:5]}"


def test_trial_balance_is_off_by_exactly_the_planted_imbalances_at_every_period_end(worlds):
    task, built = worlds
    for b, w in built:
        tb = w.master["trial_balance"].to_pylist()
        total = defaultdict(int)
        for r in tb:
            total[r["fiscal_period"]] += round(r["closing_balance"] * 100)
        imbalance = defaultdict(int)
        for eid, e in _entries(w).items():
            diff = sum(v for _, v in e["lines"])
            if diff:
                imbalance[min(12, int(str(e["posting_date"])[5:7]))] += diff
        for m, _, v in _hidden_lines(b):
            imbalance[m] += v
        running = 0
        for p in range(1, 14):
            running += imbalance.get(p, 0)
            assert total[p] == running, f"{task} seed {w.seed}: period {p} trial balance sums to {total[p]}, planted {running}"


def test_closing_is_opening_plus_postings_per_account_and_period(worlds):
    task, built = worlds
    for b, w in built:
        bal = {r["account"]: r for r in w.master["balances"].to_pylist()}
        assert sum(round(r["opening_balance"] * 100) for r in bal.values()) == 0, f"{task} seed {w.seed}: opening TB not zero"
        mov = defaultdict(int)
        for e in _entries(w).values():
            for a, v in e["lines"]:
                mov[a] += v
        for _, a, v in _hidden_lines(b):
            mov[a] += v
        for a, r in bal.items():
            assert round(r["closing_balance"] * 100) == round(r["opening_balance"] * 100) + mov.get(a, 0), (task, w.seed, a)
        tb = sorted(w.master["trial_balance"].to_pylist(), key=lambda r: (r["account"], r["fiscal_period"]))
        by_acct = defaultdict(list)
        for r in tb:
            by_acct[r["account"]].append(r)
        for a, rows in by_acct.items():
            assert round(rows[0]["opening_balance"] * 100) == round(bal[a]["opening_balance"] * 100)
            assert round(rows[-1]["closing_balance"] * 100) == round(bal[a]["closing_balance"] * 100)
            for r0, r1 in zip(rows, rows[1:]):
                assert round(r0["closing_balance"] * 100) == round(r1["opening_balance"] * 100)
            for r in rows:
                assert round(r["closing_balance"] * 100) == round((r["opening_balance"] + r["debit"] - r["credit"]) * 100)


def test_normal_balance_signs_hold_at_every_period_end_except_where_planted(worlds):
    task, built = worlds
    acct = {a.code: a for a in chart.ACCOUNTS}
    for b, w in built:
        touched = {a for eid, e in _entries(w).items() if eid in _planted(w) for a, _ in e["lines"]}
        touched |= {a for eid in w.hidden_entries if eid in _planted(w) for _, a, _ in _hidden_lines(b)}
        for r in w.master["trial_balance"].to_pylist():
            a = acct.get(r["account"])
            if a is None or not a.balance_sheet or r["account"] in EITHER_SIDE or r["fiscal_period"] == 13:
                continue
            if r["account"] in touched or (a.contra_of and a.contra_of in touched):
                continue
            assert round(r["closing_balance"] * 100) * a.normal >= 0, (
                f"{task} seed {w.seed}: {r['account']} {a.name} closes period {r['fiscal_period']} at "
                f"{r['closing_balance']:,.2f}, against its normal side")


def test_the_closing_entry_leaves_every_profit_and_loss_account_at_nil(worlds):
    """Revenue and expense accounts, the chart's and any a task added, close to retained earnings."""
    task, built = worlds
    for b, w in built:
        pnl = {a["account"] for a in w.master["accounts"].to_pylist() if a["type"] in ("revenue", "expense")}
        left = {r["account"]: r["closing_balance"] for r in w.master["balances"].to_pylist()
                if r["account"] in pnl and round(r["closing_balance"] * 100)}
        assert not left, f"{task} seed {w.seed}: profit-and-loss accounts not closed {left}"


def test_entry_numbers_follow_entry_time(worlds):
    task, built = worlds
    for b, w in built:
        e = _entries(w)
        ts = [e[k]["entry_timestamp"] for k in sorted(e, key=int)]
        late = [i for i in range(1, len(ts)) if ts[i] < ts[i - 1]]
        assert not late, f"{task} seed {w.seed}: entry numbers out of entry-time order at {late[:3]}"


def test_vendors_post_only_to_accounts_their_category_allows_except_planted(worlds):
    task, built = worlds
    for b, w in built:
        cat = {v["vendor_id"]: v.get("category") for v in w.master["vendors"].to_pylist()}
        # decoys too: a look-alike may post outside the category where its evidence allows it (a PO's account assignment)
        planted = _planted(w, decoys=True)
        for eid, e in _entries(w).items():
            if not e["vendor_id"] or eid in planted or cat.get(e["vendor_id"]) not in ALLOWED_ACCOUNTS:
                continue
            allowed = {chart.ACCOUNTS[i].code for i in ALLOWED_ACCOUNTS[cat[e["vendor_id"]]]}
            off = {a for a, _ in e["lines"]} - allowed
            assert not off, f"{task} seed {w.seed}: entry {eid} of {e['vendor_id']} ({cat[e['vendor_id']]}) posts {off}"


def test_manual_entries_are_approved_by_someone_else_whose_limit_covers_them_except_planted(worlds):
    task, built = worlds
    for b, w in built:
        users = {u["user_id"]: u for u in w.master["users"].to_pylist()}
        planted = _planted(w)
        if task in APPROVAL_OUTSIDE_ERP:
            kinds = APPROVAL_OUTSIDE_ERP[task]
            planted |= {d.entry_id for d in w.decoys if kinds is None or d.decoy_type in kinds}
        for eid, e in _entries(w).items():
            if e["source"] != "manual" or eid in planted:
                continue
            total = _approved_amount(e["lines"])
            appr = users.get(e["approver"])
            assert appr and e["approver"] != e["preparer"], f"{task} seed {w.seed}: entry {eid} approved by {e['approver']!r}"
            assert round(appr["approval_limit"] * 100) >= total, f"{task} seed {w.seed}: entry {eid} above {e['approver']}'s limit"
            prep = users.get(e["preparer"])
            assert prep and e["document_type"] in prep["may_post"].split(", "), (
                f"{task} seed {w.seed}: {e['preparer']} may not post {e['document_type']} (entry {eid})")


def test_a_world_without_planting_is_the_books_themselves():
    """Before planting, the builder's lines are the books' own: same entries, same lines, same totals."""
    b = WorldBuilder(get_task("JE-2"), 3, resolve_knobs("JE-2", None))
    le, acct, val = b.final_lines()
    books = b.books
    yc = books.docs.type[books.lines.doc] == __import__("jeval_ray.books.documents", fromlist=["TYPE"]).TYPE["YC"]
    assert len(val) == int((~yc).sum())
    assert int(val.sum()) == 0
    assert np.array_equal(np.sort(books.lines.value[~yc]), np.sort(val))
    w = b.build()
    tb = w.master["trial_balance"]
    assert abs(pc.sum(tb.filter(pc.equal(tb.column("fiscal_period"), 13)).column("closing_balance")).as_py()) < 0.005
    assert {r["account"] for r in w.master["accounts"].to_pylist()} >= {"1190", "1590"}
