"""Every task's world is a consistent set of books except exactly where something was planted.

The checks read the world as the agent sees it (the ledger listing, the master tables) plus the
lines of entries left out of the listing, which only the builder knows (they still move the
balances). "Planted" means an entry of the key: a defect, or a decoy where the check says so.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict

import numpy as np
import pyarrow.compute as pc
import pytest

from jeval_ray.books import chart
from jeval_ray.books.documents import PARTNER_KIND
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


def test_every_entry_balances(worlds):
    """The ERP posts only balanced documents: an upload's residual goes to a rounding or suspense
    account on a line of its own (JE-1, JE-16), so no entry is unbalanced, planted or not."""
    task, built = worlds
    for b, w in built:
        bad = {eid for eid, e in _entries(w).items() if sum(v for _, v in e["lines"])}
        assert not bad, f"{task} seed {w.seed}: unbalanced entries {sorted(bad)[:5]}"


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


# ------------------------------------------------------------------ subledgers, bank and documents
#: the control accounts, the entry field naming their partner, the subledger side, and the
#: document types whose lines on them are invoices (raise the item) and clearings (settle it)
CONTROL = {"2000": ("vendor_id", "ap", ("VI", "VN"), ("VP",)), "1100": ("customer_id", "ar", ("CI",), ("CR", "WO"))}
_REF = re.compile(r"\b([A-Z]{2}-\d{7})\b")
_SETTLES = re.compile(r"\binvoice ([A-Z]{2}-\d{7})\b")


@functools.cache
def _view(b) -> dict:
    """What the checks below read of a built world, computed once: its final lines, each entry's
    reference and description, and the books' number of each entry's document (or "")."""
    le, acct, val = b.final_lines()
    docs = b.e["books_doc"]
    return {"le": le, "acct": acct, "val": val, "ref": b.e["reference"].to_arrow().to_pylist(),
            "desc": b.e["description"].to_arrow().to_pylist(),
            "books_no": doc_numbers(b.books.docs, docs).to_pylist(),
            "parent_no": doc_numbers(b.books.docs, np.where(docs >= 0, b.books.docs.parent[np.maximum(docs, 0)], -1)).to_pylist()}


def _key_index(b, w) -> dict[int, tuple[str, str]]:
    """The builder's index of every key entry: {entry index: (kind, type)}."""
    of_id = {str(n): i for i, n in enumerate(b.entry_numbers().tolist())}
    key = {of_id[d.entry_id]: ("defect", d.defect_type) for d in w.defects}
    key.update({of_id[d.entry_id]: ("decoy", d.decoy_type) for d in w.decoys if of_id[d.entry_id] not in key})
    return key


def _touched_partners(b, key: dict) -> set[str]:
    """Partners a planted entry names now or named in the books (a moved invoice touches both)."""
    d, m = b.books.docs, b.books.master
    out = set()
    for i in key:
        out |= {str(b.e["vendor_id"][i]), str(b.e["customer_id"][i])}
        doc = int(b.e["books_doc"][i])
        if doc >= 0 and d.partner[doc] >= 0:
            kind = PARTNER_KIND[d.type[doc]]
            out.add(m.vendor_id(int(d.partner[doc])) if kind == "vendor" else m.customer_id(int(d.partner[doc])))
    return out - {""}


def test_every_line_on_a_control_account_carries_its_partner(worlds):
    task, built = worlds
    for b, w in built:
        v = _view(b)
        for code, (field, _side, _inv, _clr) in CONTROL.items():
            bare = np.flatnonzero((v["acct"] == code) & (b.e[field][v["le"]] == ""))
            assert not len(bare), f"{task} seed {w.seed}: {len(bare)} lines on {code} without a partner, e.g. entry {v['le'][bare[0]]}"


def test_each_partner_ties_to_the_books_open_items_except_partners_planted_entries_touch(worlds):
    """Per vendor (AP, 2000) and customer (AR, 1100), at every month end: the books' opening items
    plus the world's postings to the control account equal the books' open items of that partner."""
    task, built = worlds
    for b, w in built:
        touched = _touched_partners(b, _key_index(b, w))
        books, v = b.books, _view(b)
        sub = books.subledger_tables()
        ends = books.period_ends.astype("datetime64[D]")
        for code, (field, side, _inv, _clr) in CONTROL.items():
            m = books.master
            ids = [m.vendor_id(i) for i in range(m.n_vendors)] if side == "ap" else \
                [m.customer_id(i) for i in range(m.n_customers)]
            ledger = defaultdict(lambda: np.zeros(len(ends), dtype=np.int64))
            items, amounts = books.opening.ap if side == "ap" else books.opening.ar
            for it, amt in zip(items.tolist(), amounts.tolist()):
                ledger[ids[books.docs.partner[it]]] += int(amt)
            on = v["acct"] == code
            sign = -1 if side == "ap" else 1  # open items are what the partner is owed / owes
            partner = b.e[field][v["le"][on]]
            period = np.searchsorted(ends, b.e["post_date"][v["le"][on]].astype("datetime64[D]"))
            names, inv = np.unique(partner, return_inverse=True)
            moved = np.bincount(inv * len(ends) + period, weights=sign * v["val"][on],
                                minlength=len(names) * len(ends)).astype(np.int64).reshape(len(names), len(ends))
            for p, row in zip(names.tolist(), np.cumsum(moved, axis=1)):
                ledger[p] += row
            books_open = defaultdict(lambda: np.zeros(len(ends), dtype=np.int64))
            oi = sub[f"{side}_open_items"]
            at = np.searchsorted(ends, oi.column("as_of").to_numpy().astype("datetime64[D]"))
            for k, p, amt in zip(at.tolist(), oi.column(field).to_pylist(), oi.column("open_amount").to_pylist()):
                books_open[p][k] += round(amt * 100)
            for p in (set(ledger) | set(books_open)) - touched - {""}:
                bad = np.flatnonzero(ledger[p] != books_open[p])
                assert not len(bad), (
                    f"{task} seed {w.seed}: {side} of {p} at {ends[bad[0]]} is {ledger[p][bad[0]]} cents in the "
                    f"ledger, {books_open[p][bad[0]]} in the books' open items")


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
        exempt = {i for i, (_k, t) in _key_index(b, w).items() if t in PLANTED_SETTLEMENT.get(task, set())}
        books, d, e, v = b.books, b.books.docs, b.e, _view(b)
        code_of = e["doc_code"]
        for code, (_field, side, inv_codes, clr_codes) in CONTROL.items():
            on = v["acct"] == code
            # each entry's effect on the item: + raises what the partner is owed (AP) or owes (AR)
            per_entry = np.bincount(v["le"][on], weights=(-1 if side == "ap" else 1) * v["val"][on],
                                    minlength=b.n).astype(np.int64)
            items, amounts = books.opening.ap if side == "ap" else books.opening.ar
            start = dict(zip(doc_numbers(d, items).to_pylist(), amounts.tolist()))
            own = dict.fromkeys(start, True)
            posted = dict.fromkeys(start, np.datetime64("2024-12-31"))
            planted: set[str] = set()
            for i in np.flatnonzero(np.isin(code_of, inv_codes)).tolist():
                r, doc = v["ref"][i], int(e["books_doc"][i])
                start[r] = start.get(r, 0) + int(per_entry[i])
                posted[r] = e["post_date"][i]
                gross = int(d.amount[doc] + d.tax[doc] + d.variance[doc]) if doc >= 0 else None
                # the books' own invoice as the books posted it: its number and gross (a copy keeps neither)
                own[r] = own.get(r, True) and gross == per_entry[i] and r == v["books_no"][i]
                if i in exempt:
                    planted.add(r)
            cleared: dict[str, int] = defaultdict(int)
            for i in np.flatnonzero(np.isin(code_of, clr_codes)).tolist():
                m = _SETTLES.search(v["desc"][i] or "")
                r = m.group(1) if m else v["parent_no"][i]
                if i in exempt:
                    planted.add(r)
                    continue
                assert r in start, f"{task} seed {w.seed}: {code_of[i]} entry {i} settles {r!r}, which no invoice raised"
                assert e["post_date"][i] >= posted[r], f"{task} seed {w.seed}: {r} settled on {e['post_date'][i]}, before it was posted"
                cleared[r] -= int(per_entry[i])
            oi = books.ap_open if side == "ap" else books.ar_open
            at_end = oi.at == books.period_ends[-1]
            books_open = dict(zip(doc_numbers(d, oi.item[at_end]).to_pylist(), oi.amount[at_end].tolist()))
            for r, amt in start.items():
                if r in planted:
                    continue
                left = amt - cleared[r]
                assert 0 <= left <= amt, f"{task} seed {w.seed}: {r} of {amt} cents settled by {cleared[r]}"
                if own[r]:
                    assert left == books_open.get(r, 0), (
                        f"{task} seed {w.seed}: {r} open {left} cents at the year end, {books_open.get(r, 0)} in the books")
                else:
                    assert left in (0, amt), f"{task} seed {w.seed}: {r} (planted at {amt} cents) settled by {cleared[r]}"


_MONEY = r"(-?[\d,]+\.\d\d)"
_STATEMENT_HEAD = re.compile(r"Account holder: (.+); account (.+)\nStatement period: (\S+) to (\S+)\nOpening balance USD "
                             rf"{_MONEY}; credits USD {_MONEY}; debits USD {_MONEY}; closing balance USD {_MONEY}")


def _cents(text: str) -> int:
    return round(float(text.replace(",", "")) * 100)


def test_bank_statements_carry_the_company_account_and_tie_to_the_ledger_cash(worlds):
    """A statement a world shows is of the company's one account, adds up, chains to the next one,
    lists each cash posting at its ledger amount, and its closing balance is the ledger's cash at
    its month end less what the ledger posted and the bank had not yet cleared, plus what the bank
    cleared of postings the ledger makes later (the prior year's postings in transit at the opening
    are in both the opening cash and, once cleared, the statements). No task plants a difference
    between its statements and its ledger (JE-15's scheme shows on the statements as it is in the
    ledger), so none is exempt."""
    task, built = worlds
    for b, w in built:
        stmts = [d for d in w.documents if d.doc_type == "bank_statement"]
        if not stmts:
            continue
        v = _view(b)
        on = v["acct"] == "1000"
        posted: dict[str, list] = defaultdict(lambda: [0, None])  # reference: [cash cents, last posting date]
        for i, x in zip(v["le"][on].tolist(), v["val"][on].tolist()):
            r, day = v["ref"][i], b.e["post_date"][i]
            posted[r][0] += int(x)
            posted[r][1] = day if posted[r][1] is None else max(posted[r][1], day)
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
                assert r in posted or r in pending, f"{task} seed {w.seed}: statement line {r} ({a}) has no ledger posting"
            month = int(end[5:7])
            if len(parsed) < month:
                continue  # statements missing before this one: what cleared earlier is unknown
            day = np.datetime64(end)
            in_ledger = {r: v for r, (v, p) in posted.items() if p <= day}
            outstanding = sum(v - cleared.get(r, 0) for r, v in in_ledger.items())
            unposted = sum(a for r, a in cleared.items() if r not in in_ledger)
            assert tb[month] - closing == outstanding - unposted + in_transit, (
                f"{task} seed {w.seed}: the {end} statement closes at {closing}, ledger cash {tb[month]}; "
                f"outstanding {outstanding}, cleared but not in the ledger {unposted}")


_DATE = r"(\d{4}-\d\d-\d\d)"
#: an amount a document states as its own total (a line of its body labelled so)
_STATED = re.compile(r"(?i)\b(?:amount|invoice total|amount due|total due|total payroll cost):? (?:USD )?" + _MONEY)
_POSTED = re.compile(r"(?:Posting date:|\bposted(?: as [A-Z]{2}-\d{7})?(?: on)?|\bfor posting on) " + _DATE)
_DOC_DATE = re.compile(r"(?:Document date|Invoice date|Order date): ?" + _DATE)
_ANY_AMOUNT = re.compile(r"(?<![\d.])" + _MONEY)
#: a reference a document records itself under ("recorded under reference CTR-2025-032")
_RECORDED = re.compile(r"\breference ([A-Z]{2,4}-[\w-]*\d)\b")
#: an entry's document the text dates ("invoice VN-0000570 from … dated 2025-08-27")
_DATED = re.compile(r"\b([A-Z]{2}-\d{7})(?: from [^\n,;]*?)? dated " + _DATE)
_APPROVED = re.compile(r"(?<!Not )\b[Aa]pproved(?: by:?| in (?:the )?ERP by|:) [^\n]*?\b(?:on|signed) " + _DATE)
#: key types whose documents are planted to disagree with the entry they name: the amount keyed is
#: not the amount billed (JE-12, JE-13); a top-side adjustment above the contract or engagement
#: letter filed under its reference (JE-8, JE-9)
PLANTED_DOCUMENT = {"JE-8": {"amount_not_supported"}, "JE-9": {"topside_unsupported"},
                    "JE-12": {"keying_error"}, "JE-13": {"invoice_keyed_above_billed"}}


def test_documents_state_the_figures_of_the_entries_they_name_and_no_approval_precedes_its_document(worlds):
    """A document whose title names an entry's reference states that entry's amounts, posting date
    and document date; every approval in a document is dated on or after the document it approves
    (board minutes approving an entry's invoice are not dated before it); except where the key plants
    exactly that contradiction."""
    task, built = worlds
    for b, w in built:
        v = _view(b)
        planted = {v["ref"][i] for i, (_k, t) in _key_index(b, w).items() if t in PLANTED_DOCUMENT.get(task, set())}
        # the figures and dates of every entry a document names: its debits, each line, its dates
        mentioned = {r for d in w.documents for r in _REF.findall(d.title + "\n" + d.body) + _RECORDED.findall(d.body)}
        figures: dict[str, set[int]] = defaultdict(set)
        dates: dict[str, tuple[set, set]] = defaultdict(lambda: (set(), set()))
        le, val = v["le"], v["val"]
        dr = np.bincount(le, weights=np.where(val > 0, val, 0), minlength=b.n).astype(np.int64)
        hit = np.flatnonzero(np.isin(np.array(v["ref"], dtype=object), list(mentioned)))
        for i in hit.tolist():
            r = v["ref"][i]
            figures[r].add(int(dr[i]))
            dates[r][0].add(str(b.e["post_date"][i]))
            dates[r][1].add(str(b.e["doc_date"][i]))
        lines = np.isin(le, hit)
        for i, x in zip(le[lines].tolist(), val[lines].tolist()):
            figures[v["ref"][i]].add(abs(int(x)))
        for d in w.documents:
            own_date = (_DOC_DATE.search(d.body) or [None, d.date])[1]
            for on in _APPROVED.findall(d.body):
                assert on >= own_date, f"{task} seed {w.seed}: {d.doc_id} {d.title!r} dated {own_date} approved on {on}"
            named = [r for r in dict.fromkeys(_REF.findall(d.title) + _RECORDED.findall(d.body)) if r in figures]
            for r, day in _DATED.findall(d.body):
                if r in figures and r not in planted:
                    assert day in dates[r][1], f"{task} seed {w.seed}: {d.doc_id} dates {r} {day}, the ledger {dates[r][1]}"
            if d.doc_type == "board_minutes" and "RESOLVED" in d.body:
                for r in dict.fromkeys(_REF.findall(d.body)):
                    if r in figures and r not in planted:
                        assert min(dates[r][1]) <= d.date, (
                            f"{task} seed {w.seed}: minutes of {d.date} ({d.doc_id}) approve {r}, dated {min(dates[r][1])}")
            for r in named:
                if r in planted:
                    continue
                for amount in _STATED.findall(d.body):
                    assert abs(_cents(amount)) in figures[r], (
                        f"{task} seed {w.seed}: {d.doc_id} {d.title!r} states {amount}; entry {r} has {sorted(figures[r])}")
                stated = [abs(_cents(a)) for a in _ANY_AMOUNT.findall(d.body)]
                if stated and not _STATED.search(d.body):  # no labelled total: one of its figures is the entry's
                    assert set(stated) & figures[r], (
                        f"{task} seed {w.seed}: {d.doc_id} {d.title!r} states {stated}; entry {r} has {sorted(figures[r])}")
                for day in _POSTED.findall(d.body):
                    assert day in dates[r][0], f"{task} seed {w.seed}: {d.doc_id} says {r} posted {day}, the ledger {dates[r][0]}"
                for day in _DOC_DATE.findall(d.body)[:1]:
                    assert day in dates[r][1], f"{task} seed {w.seed}: {d.doc_id} dates {r} {day}, the ledger {dates[r][1]}"
