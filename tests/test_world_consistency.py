"""Every task's world is a consistent set of books except exactly where something was planted.

The checks read the world as the agent sees it (the ledger listing, the master tables) plus the
lines of entries left out of the listing, which only the builder knows (they still move the
balances). "Planted" means an entry of the key: a defect, or a decoy where the check says so.
"""

from __future__ import annotations

import re
from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.books import chart
from jeval_ray.books.master import ALLOWED_ACCOUNTS, BANK_ACCOUNT
from jeval_ray.books.tables import doc_numbers
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
        planted = _planted(w)
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


# ------------------------------------------------------------------ subledgers, bank and documents
#: the control accounts, the entry field naming their partner, the subledger side, and the
#: document types whose lines on them are invoices (raise the item) and clearings (settle it)
CONTROL = {"2000": ("vendor_id", "ap", ("VI", "VN"), ("VP",)), "1100": ("customer_id", "ar", ("CI",), ("CR", "WO"))}
_REF = re.compile(r"\b([A-Z]{2}-\d{7})\b")
_SETTLES = re.compile(r"\binvoice ([A-Z]{2}-\d{7})\b")


def _key_index(b, w) -> dict[str, tuple[str, str]]:
    """The builder's index of every key entry: {entry index: (kind, type)}."""
    of_id = {str(n): i for i, n in enumerate(b.entry_numbers().tolist())}
    key = {of_id[d.entry_id]: ("defect", d.defect_type) for d in w.defects}
    key.update({of_id[d.entry_id]: ("decoy", d.decoy_type) for d in w.decoys if of_id[d.entry_id] not in key})
    return key


def _partner_ids(b, kind: str) -> np.ndarray:
    m = b.books.master
    return np.array([m.vendor_id(i) if kind == "vendor_id" else m.customer_id(i)
                     for i in range(m.n_vendors if kind == "vendor_id" else m.n_customers)] + [""])


def _touched_partners(b, key: dict) -> set[str]:
    """Partners a planted entry names now or named in the books (a moved invoice touches both)."""
    d = b.books.docs
    out = set()
    for i in key:
        out |= {str(b.e["vendor_id"][i]), str(b.e["customer_id"][i])}
        doc = int(b.e["books_doc"][i])
        if doc >= 0 and d.partner[doc] >= 0:
            out |= {str(_partner_ids(b, "vendor_id")[d.partner[doc]]) if d.partner[doc] < b.books.master.n_vendors else "",
                    str(_partner_ids(b, "customer_id")[d.partner[doc]]) if d.partner[doc] < b.books.master.n_customers else ""}
    return out - {""}


def test_every_line_on_a_control_account_carries_its_partner(worlds):
    task, built = worlds
    for b, w in built:
        le, acct, _val = b.final_lines()
        for code, (field, _side, _inv, _clr) in CONTROL.items():
            bare = np.flatnonzero((acct == code) & (b.e[field][le] == ""))
            assert not len(bare), f"{task} seed {w.seed}: {len(bare)} lines on {code} without a partner, e.g. entry {le[bare[0]]}"


def test_each_partner_ties_to_the_books_open_items_except_partners_planted_entries_touch(worlds):
    """Per vendor (AP, 2000) and customer (AR, 1100), at every month end: the books' opening items
    plus the world's postings to the control account equal the books' open items of that partner."""
    task, built = worlds
    for b, w in built:
        key = _key_index(b, w)
        touched = _touched_partners(b, key)
        books = b.books
        sub = books.subledger_tables()
        le, acct, val = b.final_lines()
        post = b.e["post_date"].astype("datetime64[D]")
        ends = books.period_ends.astype("datetime64[D]")
        for code, (field, side, _inv, _clr) in CONTROL.items():
            ids = _partner_ids(b, field)
            opening = defaultdict(int)
            items, amounts = books.opening.ap if side == "ap" else books.opening.ar
            for it, amt in zip(items.tolist(), amounts.tolist()):
                opening[str(ids[books.docs.partner[it]])] += int(amt)
            on = acct == code
            partner, day, v = b.e[field][le[on]], post[le[on]], val[on]
            sign = -1 if side == "ap" else 1  # open items are what the partner is owed / owes
            oi = sub[f"{side}_open_items"]
            books_open = defaultdict(int)
            for at, p, amt in zip(oi.column("as_of").to_pylist(), oi.column(field).to_pylist(),
                                  oi.column("open_amount").to_pylist()):
                books_open[(str(at), p)] += round(amt * 100)
            partners = (set(partner.tolist()) | set(opening) | {p for _, p in books_open}) - touched - {""}
            for end in ends:
                upto = day <= end
                moved = defaultdict(int)
                for p, x in zip(partner[upto].tolist(), v[upto].tolist()):
                    moved[p] += sign * int(x)
                for p in partners:
                    assert opening[p] + moved[p] == books_open[(str(end), p)], (
                        f"{task} seed {w.seed}: {side} of {p} at {end} is {opening[p] + moved[p]} cents in the "
                        f"ledger, {books_open[(str(end), p)]} in the books' open items")


#: key types that plant an invoice settled at another amount than its own: the amount keyed is not
#: the amount billed (and paid)
PLANTED_SETTLEMENT = {"JE-12": {"keying_error"}, "JE-13": {"invoice_keyed_above_billed"}}


def test_each_invoice_is_settled_at_its_own_amount_except_where_planted(worlds):
    """Per invoice (its reference), the payments or receipts naming it settle it at its own amount:
    a books invoice left as the books posted it keeps the books' open amount at the year end (the
    books pay a few in two instalments), an invoice planting added or changed is paid in full or
    not at all, nothing settles more than the invoice, and nothing is paid before it is posted."""
    task, built = worlds
    for b, w in built:
        key = _key_index(b, w)
        exempt_types = PLANTED_SETTLEMENT.get(task, set())
        books, d = b.books, b.books.docs
        le, acct, val = b.final_lines()
        e = b.e
        ref = e["reference"]
        year_end = books.period_ends[-1]

        def number(doc: int) -> str:
            return doc_numbers(d, np.array([doc]))[0].as_py() if doc >= 0 else ""
        for code, (field, side, inv_codes, clr_codes) in CONTROL.items():
            sign = -1 if side == "ap" else 1
            on = acct == code
            per_entry = defaultdict(int)
            for i, x in zip(le[on].tolist(), val[on].tolist()):
                per_entry[i] += sign * int(x)
            start, posted, own, planted = {}, {}, {}, defaultdict(bool)
            items, amounts = books.opening.ap if side == "ap" else books.opening.ar
            for r, amt in zip(doc_numbers(d, items).to_pylist(), amounts.tolist()):
                start[r] = int(amt)
                own[r] = True
                posted[r] = np.datetime64("2024-12-31")
            for i in np.flatnonzero(np.isin(e["doc_code"], inv_codes)).tolist():
                r = ref[i]
                start[r] = start.get(r, 0) + per_entry.get(i, 0)
                posted[r] = e["post_date"][i]
                doc = int(e["books_doc"][i])
                gross = int(d.amount[doc] + d.tax[doc] + d.variance[doc]) if doc >= 0 else None
                # the books' own invoice as the books posted it: its number and gross (a copy keeps neither)
                own[r] = own.get(r, True) and gross == per_entry.get(i, 0) and r == number(doc)
                if key.get(i, ("", ""))[1] in exempt_types:
                    planted[r] = True
            cleared = defaultdict(int)
            for i in np.flatnonzero(np.isin(e["doc_code"], clr_codes)).tolist():
                m = _SETTLES.search(e["description"][i])
                doc = int(e["books_doc"][i])
                r = m.group(1) if m else (number(int(d.parent[doc])) if doc >= 0 else "")
                if key.get(i, ("", ""))[1] in exempt_types:
                    planted[r] = True
                    continue
                assert r in start, f"{task} seed {w.seed}: {e['doc_code'][i]} entry {i} settles {r!r}, which no invoice raised"
                assert e["post_date"][i] >= posted[r], f"{task} seed {w.seed}: {r} settled on {e['post_date'][i]}, before it was posted"
                cleared[r] -= per_entry.get(i, 0)
            oi = books.ap_open if side == "ap" else books.ar_open
            at_end = oi.at == year_end
            books_open = dict(zip(doc_numbers(d, oi.item[at_end]).to_pylist(), oi.amount[at_end].tolist()))
            for r, amt in start.items():
                if planted[r]:
                    continue
                left = amt - cleared[r]
                assert 0 <= left <= amt, f"{task} seed {w.seed}: {r} of {amt} cents settled by {cleared[r]}"
                if own.get(r):
                    assert left == books_open.get(r, 0), (
                        f"{task} seed {w.seed}: {r} open {left} cents at the year end, {books_open.get(r, 0)} in the books")
                else:
                    assert left in (0, amt), f"{task} seed {w.seed}: {r} (planted at {amt} cents) settled by {cleared[r]}"


_MONEY = r"(-?[\d,]+\.\d\d)"
_STATEMENT_HEAD = re.compile(r"Account holder: (.+); account (.+)\nStatement period: (\S+) to (\S+)\nOpening balance USD "
                             rf"{_MONEY}; credits USD {_MONEY}; debits USD {_MONEY}; closing balance USD {_MONEY}")
#: key types that plant a difference between a bank statement and the ledger's cash
PLANTED_BANK = {}


def _cents(text: str) -> int:
    return round(float(text.replace(",", "")) * 100)


def test_bank_statements_carry_the_company_account_and_tie_to_the_ledger_cash(worlds):
    """A statement a world shows is of the company's one account, adds up, chains to the next one,
    lists each cash posting at its ledger amount, and its closing balance is the ledger's cash at
    its month end less what the ledger posted and the bank had not yet cleared, plus what the bank
    cleared of postings the ledger makes later (the prior year's postings in transit at the opening
    are in both the opening cash and, once cleared, the statements)."""
    task, built = worlds
    for b, w in built:
        stmts = [d for d in w.documents if d.doc_type == "bank_statement"]
        if not stmts:
            continue
        key = _key_index(b, w)
        exempt = {b.e["reference"][i] for i, (_k, t) in key.items() if t in PLANTED_BANK.get(task, set())}
        le, acct, val = b.final_lines()
        on = acct == "1000"
        posted: dict[str, list] = defaultdict(lambda: [0, None])
        for i, v in zip(le[on].tolist(), val[on].tolist()):
            r = b.e["reference"][i]
            posted[r][0] += int(v)
            posted[r][1] = max(posted[r][1] or b.e["post_date"][i], b.e["post_date"][i])
        # the prior year's cash postings the bank had not cleared when the year opened (in the opening cash)
        pending = set(doc_numbers(b.books.docs, b.books.opening.bank.pending).to_pylist())
        in_transit = int(b.books.opening.bank.pending_amount.sum())
        tb = {r["fiscal_period"]: round(r["closing_balance"] * 100) for r in w.master["trial_balance"].to_pylist()
              if r["account"] == "1000"}
        parsed = []
        for s in stmts:
            m = _STATEMENT_HEAD.search(s.body)
            assert m, f"{task} seed {w.seed}: {s.doc_id} has no statement header"
            holder, account, start, end = m.group(1, 2, 3, 4)
            opening, credits, debits, closing = (_cents(x) for x in m.group(5, 6, 7, 8))
            assert holder == w.facts["company_name"] and account == BANK_ACCOUNT, (task, w.seed, s.doc_id, account)
            rows = [ln.split(" | ") for ln in s.body.split("\n") if re.match(r"\d{4}-\d\d-\d\d \| ", ln)]
            amounts = [_cents(r[-1]) for r in rows]
            assert opening + credits - debits == closing, (task, w.seed, s.doc_id)
            assert sum(a for a in amounts if a > 0) == credits and -sum(a for a in amounts if a < 0) == debits, (
                task, w.seed, s.doc_id)
            parsed.append((start, end, opening, closing, [(r[0], r[1], a) for r, a in zip(rows, amounts)]))
        parsed.sort()
        for (_s0, e0, _o0, c0, _l0), (s1, _e1, o1, _c1, _l1) in zip(parsed, parsed[1:]):
            if np.datetime64(s1) == np.datetime64(e0) + 1:
                assert o1 == c0, f"{task} seed {w.seed}: the statement from {s1} opens at {o1}, the last closed at {c0}"
        cleared: dict[str, int] = defaultdict(int)
        for start, end, _opening, closing, rows in parsed:
            for _day, r, a in rows:
                cleared[r] += a
                if r in exempt:
                    continue
                assert r in posted or r in pending, f"{task} seed {w.seed}: statement line {r} ({a}) has no ledger posting"
            month = int(end[5:7])
            if any(r in exempt for _d, r, _a in rows) or len(parsed) < month:
                continue  # a planted difference, or statements missing before this one: nothing to reconcile
            day = np.datetime64(end)
            in_ledger = {r: v for r, (v, p) in posted.items() if p <= day}
            outstanding = sum(v - cleared.get(r, 0) for r, v in in_ledger.items())
            unposted = sum(a for r, a in cleared.items() if r not in in_ledger)
            assert tb[month] - closing == outstanding - unposted + in_transit, (
                f"{task} seed {w.seed}: the {end} statement closes at {closing}, ledger cash {tb[month]}; "
                f"outstanding {outstanding}, cleared but not in the ledger {unposted}")
