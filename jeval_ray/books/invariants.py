"""What consistent books satisfy, as checks that return their violations (empty = holds).

Each check reads only the books' public numbers and states one accounting invariant. The tests
(``tests/test_books_consistency.py``) require every check to hold over many seeds and sizes; the
simulation runs the cheap ones itself and raises on a violation. A later planting layer may break
an invariant only where its label declares it (see docs/books.md).
"""

from __future__ import annotations

import numpy as np

from jeval_ray.books import _np, chart, master as md, posting, subledgers
from jeval_ray.books.documents import MANUAL, PARTNER_KIND, POSTS, TYPE, TYPE_CODES


class BooksInconsistent(AssertionError):
    """Raised when freshly simulated books break an invariant (a generator bug, never expected)."""


def _fmt(cents) -> str:
    return f"{int(cents) / 100:,.2f}"


def entries_balance(books) -> list[str]:
    s = posting.entry_sums(books.lines)
    bad = np.flatnonzero(s != 0)
    return [f"entry of document {int(books.lines.doc[0])} is off by {_fmt(s[i])}" for i in bad[:5]]


def trial_balance_zero(books) -> list[str]:
    tb = books.trial_balance_cents()
    out = []
    if books.opening.balances.sum() != 0:
        out.append(f"opening trial balance sums to {_fmt(books.opening.balances.sum())}")
    for p, row in zip(tb["period"], tb["closing"]):
        if row.sum() != 0:
            out.append(f"trial balance of period {p} sums to {_fmt(row.sum())}")
    return out


def closing_is_opening_plus_postings(books) -> list[str]:
    """Per account and period: the trial balance's closing is its opening plus the period's debits
    less credits, each period opens at the last close, and the closing equals the balance summed
    from the opening and every line posted by the period's last day."""
    tb = books.trial_balance_cents()
    out = []
    running = books.opening.balances.copy()
    for p, opening, closing, dr, cr in zip(tb["period"], tb["opening"], tb["closing"], tb["debit"], tb["credit"]):
        if not np.array_equal(opening, running):
            out.append(f"period {p} opens at a balance other than the last close")
        if not np.array_equal(closing, opening + dr - cr):
            out.append(f"period {p}: closing is not opening plus debits less credits")
        last = min(int(md.MONTH_ENDS[min(p, 12) - 1]), books.end)
        if not np.array_equal(closing, books.balances_at(last, include_closing=p == 13)):
            out.append(f"period {p}: closing differs from the postings up to {md.iso(last)}")
        running = closing
    return out


def normal_balances(books) -> list[str]:
    """Contra accounts keep their credit balance and never exceed their parent; at every period end
    assets, liabilities and equity carry their normal side (GR/IR may be either); cash and inventories
    are never negative at the end of any day."""
    out = []
    for d in books.period_ends:
        bal = books.balances_at(int(d))
        for c, parent in chart.CONTRA.items():
            if bal[c] > 0 or -bal[c] > bal[parent]:
                out.append(f"{md.iso(d)}: contra {chart.ACCOUNTS[c].code} {_fmt(bal[c])} against "
                           f"{chart.ACCOUNTS[parent].code} {_fmt(bal[parent])}")
        for a, acc in enumerate(chart.ACCOUNTS):
            if acc.balance_sheet and not acc.contra_of and acc.role not in ("grir", "retained_earnings"):
                if bal[a] * acc.normal < 0:
                    out.append(f"{md.iso(d)}: {acc.code} {acc.name} has an abnormal balance {_fmt(bal[a])}")
    for role in ("cash", "inventory_raw", "inventory_fg"):
        a = chart.idx(role)
        sel = books.lines.account == a
        days = books.docs.post_date[books.lines.doc[sel]]
        order = np.argsort(days, kind="stable")
        run = books.opening.balances[a] + np.cumsum(books.lines.value[sel][order])
        end_of_day = np.concatenate([days[order][1:] != days[order][:-1], [True]]) if len(days) else np.zeros(0, bool)
        if len(run) and run[end_of_day].min() < 0:
            out.append(f"{role} goes negative: {_fmt(run[end_of_day].min())}")
    return out


def subledgers_tie(books) -> list[str]:
    """AP and AR open items, their aging and the control account agree at every period end."""
    out = []
    for side, role, sign in (("ap", "ap", -1), ("ar", "ar", 1)):
        oi = books.ap_open if side == "ap" else books.ar_open
        ag = subledgers.aging(oi)
        bucket_sum = sum(ag[b] for b in subledgers.BUCKETS)
        if not np.array_equal(bucket_sum, ag["total"]):
            out.append(f"{side}: aging buckets do not add up to the total")
        for d in books.period_ends:
            control = sign * books.balances_at(int(d))[chart.idx(role)]
            items = int(oi.amount[oi.at == d].sum())
            aged = int(ag["total"][ag["at"] == d].sum())
            if not (control == items == aged):
                out.append(f"{side} at {md.iso(d)}: control {_fmt(control)}, open items {_fmt(items)}, aging {_fmt(aged)}")
        if (oi.amount < 0).any():
            out.append(f"{side}: an invoice is cleared by more than its amount")
    return out


def partners_tie(books) -> list[str]:
    """Each partner's open items = the partner's opening items plus its postings to the control
    account (the journal names the partner on every line), at every period end."""
    out = []
    d = books.docs
    for side, role, sign in (("ap", "ap", -1), ("ar", "ar", 1)):
        oi = books.ap_open if side == "ap" else books.ar_open
        base_ids, base_amt = books.opening.ap if side == "ap" else books.opening.ar
        n = (books.master.n_vendors if side == "ap" else books.master.n_customers) + 1
        on = books.lines.account == chart.idx(role)
        partner = d.partner[books.lines.doc[on]]
        post = d.post_date[books.lines.doc[on]]
        value = sign * books.lines.value[on]
        opening = np.bincount(d.partner[base_ids], weights=base_amt, minlength=n)
        for day in books.period_ends:
            ledger = opening + np.bincount(partner[post <= day], weights=value[post <= day], minlength=n)
            sub = np.bincount(oi.partner[oi.at == day], weights=oi.amount[oi.at == day], minlength=n)
            if not np.array_equal(np.rint(ledger), np.rint(sub)):
                k = int(np.argmax(np.rint(ledger) != np.rint(sub)))
                out.append(f"{side} at {md.iso(day)}: partner {k} owes {_fmt(sub[k])} by its open items "
                           f"but {_fmt(ledger[k])} by the ledger")
                break
    return out


def agings_roll_forward(books) -> list[str]:
    """From one period end to the next: open total + invoices - clearings; an item still open is
    exactly as many days older as days passed."""
    out = []
    d = books.docs
    for side in ("ap", "ar"):
        oi = books.ap_open if side == "ap" else books.ar_open
        totals = subledgers.totals(oi, books.period_ends)
        start_total = int(np.sum((books.opening.ap if side == "ap" else books.opening.ar)[1]))
        sel = _np.grouped_unique(books.lines.doc)
        items, clear = subledgers.items_and_clearings(d, side, sel)
        prev_day, prev = books.start - 1, start_total
        for day_, tot in zip(books.period_ends, totals):
            inv = int(d.gross()[items][(d.post_date[items] > prev_day) & (d.post_date[items] <= day_)].sum())
            clr = int(d.amount[clear][(d.post_date[clear] > prev_day) & (d.post_date[clear] <= day_)].sum())
            if prev + inv - clr != tot:
                out.append(f"{side} at {md.iso(day_)}: {_fmt(prev)} + {_fmt(inv)} - {_fmt(clr)} != {_fmt(tot)}")
            prev_day, prev = day_, int(tot)
        for a, b in zip(books.period_ends[:-1], books.period_ends[1:]):
            ia, ib = oi.item[oi.at == a], oi.item[oi.at == b]
            ka = _np.member(ia, ib)
            kb = _np.member(ib, ia)
            both = ia[ka]
            dpa = oi.days_past_due[oi.at == a][ka][np.argsort(ia[ka])]
            dpb = oi.days_past_due[oi.at == b][kb][np.argsort(ib[kb])]
            if len(both) and not np.all(dpb - dpa == b - a):
                out.append(f"{side}: items open at {md.iso(a)} and {md.iso(b)} did not age by {b - a} days")
    return out


def bank_ties(books) -> list[str]:
    """Each statement's closing balance = the ledger's cash less the listed reconciling items, and
    statements chain (each opens where the last closed)."""
    out = []
    v = books.bank
    cash = chart.idx("cash")
    for k, d in enumerate(v.month_end):
        book = int(books.balances_at(int(d))[cash])
        recon = int(v.recon_amount[v.recon_at == d].sum())
        if v.closing[k] != book - recon:
            out.append(f"bank at {md.iso(d)}: statement {_fmt(v.closing[k])} != book {_fmt(book)} - items {_fmt(recon)}")
        if k and v.opening[k] != v.closing[k - 1]:
            out.append(f"statement of {md.iso(d)} does not open at the last closing balance")
        if (books.docs.post_date[v.recon_doc[v.recon_at == d]] > d).any():
            out.append("a reconciling item was posted after the statement date")
    cash_docs, _ = books.cash_documents()
    missing = cash_docs[~_np.member(cash_docs, np.concatenate([v.line_doc, v.recon_doc]))]
    if len(missing):
        out.append(f"{len(missing)} cash postings neither on a statement nor reconciling")
    return out


def document_chains(books) -> list[str]:
    """Received <= ordered, invoiced <= ordered (no goods receipt), paid <= invoiced, dates never
    run backwards along a chain, and approvals are dated on or after what they approve and by an
    entitled other person."""
    d = books.docs
    out = []
    n = len(d)
    has_parent = np.flatnonzero(d.parent >= 0)
    p = d.parent[has_parent]
    # dates monotone (a payment, receipt, reversal, release or receipt of goods never precedes its parent)
    if (d.doc_date[has_parent] < d.doc_date[p]).any():
        k = has_parent[np.argmax(d.doc_date[has_parent] < d.doc_date[p])]
        out.append(f"document {TYPE_CODES[d.type[k]]}-{k} is dated before its parent")
    # received <= ordered, shipped <= ordered
    for delivery, order in (("GR", "PO"), ("SH", "SO")):
        lots = d.of(delivery)
        got = np.bincount(d.parent[lots], weights=d.quantity[lots], minlength=n)
        ordered = d.of(order)
        if (got[ordered] > d.quantity[ordered]).any():
            out.append(f"an order ({order}) was delivered ({delivery}) beyond the quantity ordered")
    vn = d.of("VN")
    vn_po = vn[d.parent[vn] >= 0]
    if (d.amount[vn_po] > d.amount[d.parent[vn_po]]).any():
        out.append("an invoice without goods receipt exceeds its order")
    # paid <= invoiced
    for clear_codes, item_codes in ((("VP",), ("VI", "VN")), (("CR", "WO"), ("CI",))):
        c = np.flatnonzero(np.isin(d.type, [TYPE[x] for x in clear_codes]))
        paid = np.bincount(d.parent[c], weights=d.amount[c], minlength=n)
        it = np.flatnonzero(np.isin(d.type, [TYPE[x] for x in item_codes]))
        if (paid[it] > d.gross()[it]).any():
            out.append(f"an item of {item_codes} is cleared by more than its amount")
    # approvals
    ap = np.flatnonzero(d.approver >= 0)
    if (d.approved_on[ap] < d.doc_date[ap]).any():
        out.append("an approval is dated before the document it approves")
    posted = ap[POSTS[d.type[ap]]]
    if (d.approved_on[posted] > d.entry_date[posted]).any():
        out.append("an entry was recorded before it was approved")
    if (d.approver[ap] == d.preparer[ap]).any():
        out.append("a document is approved by its own preparer")
    limits = np.array([u.approval_limit_cents for u in md.USERS])
    if (limits[d.approver[ap]] < np.abs(d.gross()[ap])).any():
        out.append("a document is approved by someone whose limit does not cover it")
    manual = np.flatnonzero(MANUAL[d.type] & POSTS[d.type])
    if (d.approver[manual] < 0).any():
        out.append("a manual entry has no approver")
    rights = {(i, t) for i, u in enumerate(md.USERS) for t in u.posts}
    pairs = set(zip(d.preparer.tolist(), TYPE_CODES[d.type].tolist()))
    bad = sorted((md.USERS[i].user_id, t) for i, t in pairs - rights)
    if bad:
        out.append(f"users posting document types they have no right to: {bad[:5]}")
    return out


def entry_numbers_follow_entry_time(books) -> list[str]:
    d = books.docs
    has = np.flatnonzero(books.entry_no >= 0)
    order = has[np.argsort(books.entry_no[has])]
    ts = d.entry_date[order] * 86_400 + d.entry_time[order]
    return [] if np.all(np.diff(ts) >= 0) else ["entry numbers do not follow entry time"]


def fixed_assets_tie(books) -> list[str]:
    """Register cost - accumulated depreciation = net book value, asset by asset and in the ledger."""
    from jeval_ray.books.assets import FIRST_MONTH

    r = books.register
    out = []
    for k, d in enumerate(books.period_ends):
        month = FIRST_MONTH + int(md.month_of(np.array([d]))[0]) - 1
        held = r.acquired <= d
        acc = r.accumulated(month)
        nbv = r.cost - acc
        bal = books.balances_at(int(d))
        if (nbv[held] < 0).any():
            out.append(f"{md.iso(d)}: an asset is depreciated below nil")
        if d in md.MONTH_ENDS and (books.start == md.YEAR_START):
            if bal[chart.idx("ppe")] != int(r.cost[held].sum()):
                out.append(f"{md.iso(d)}: PP&E {_fmt(bal[chart.idx('ppe')])} != register cost {_fmt(r.cost[held].sum())}")
            if -bal[chart.idx("accumulated_depreciation")] != int(acc[held].sum()):
                out.append(f"{md.iso(d)}: accumulated depreciation does not equal the register")
    return out


def prepaids_tie(books) -> list[str]:
    from jeval_ray.books import prepaids
    from jeval_ray.books.assets import FIRST_MONTH

    out = []
    if books.start != md.YEAR_START:
        return out
    for i, d in enumerate(md.MONTH_ENDS):
        if d > books.end:
            break
        bal = int(books.balances_at(int(d))[chart.idx("prepaid")])
        want = prepaids.balance_at(books.schedule, FIRST_MONTH + i, int(d))
        if bal != want:
            out.append(f"{md.iso(d)}: prepaid {_fmt(bal)} != schedule {_fmt(want)}")
    return out


def accruals_reverse(books) -> list[str]:
    """Each reversal mirrors its accrual line by line, on the first day of the next month."""
    d = books.docs
    rv = d.of("RV")
    ac = d.parent[rv]
    out = []
    if (d.type[ac] != TYPE["AC"]).any() or (d.amount[rv] != d.amount[ac]).any() or (d.account[rv] != d.account[ac]).any():
        out.append("a reversal does not mirror its accrual")
    if (d.post_date[rv] != d.post_date[ac] + 1).any():
        out.append("a reversal is not posted on the day after its accrual")
    acs = d.of("AC")
    due = acs[(d.post_date[acs] + 1 <= books.end) & (d.post_date[acs] >= books.start)]
    if (~_np.member(due, ac)).any():
        out.append("an accrual within the year has no reversal")
    # in the ledger: lines of an accrual and its reversal cancel per account
    in_ledger = _np.grouped_unique(books.lines.doc)
    both = _np.member(ac, in_ledger) & _np.member(rv, in_ledger)
    keep = _np.member(books.lines.doc, np.concatenate([ac[both], rv[both]]))
    net = np.bincount(books.lines.account[keep], weights=books.lines.value[keep], minlength=len(chart.ACCOUNTS))
    if np.any(net != 0):
        out.append("accruals and their reversals do not net to nil")
    return out


def vendor_accounts(books) -> list[str]:
    """Every line of a vendor's documents posts to an account its category allows."""
    d = books.docs
    doc = books.lines.doc
    is_vendor = (PARTNER_KIND[d.type[doc]] == "vendor") & (d.partner[doc] >= 0)
    cats = books.master.vendor_category[d.partner[doc[is_vendor]]]
    allowed = np.zeros((len(md.CATEGORIES), len(chart.ACCOUNTS)), dtype=bool)
    for k, c in enumerate(md.CATEGORIES):
        allowed[k, list(md.ALLOWED_ACCOUNTS[c.name])] = True
    ok = allowed[cats, books.lines.account[is_vendor]]
    if ok.all():
        return []
    i = np.flatnonzero(~ok)[0]
    v = int(d.partner[doc[is_vendor][i]])
    return [f"vendor {books.master.vendor_name[v]} ({md.CATEGORIES[cats[i]].name}) posts to "
            f"{chart.ACCOUNTS[books.lines.account[is_vendor][i]].code}"]


def control_accounts(books) -> list[str]:
    out = []
    for a, allowed in chart.CONTROL.items():
        t = books.docs.type[books.lines.doc[books.lines.account == a]]
        bad = set(TYPE_CODES[_np.unique(t)].tolist()) - set(allowed)
        if bad:
            out.append(f"control account {chart.ACCOUNTS[a].code} posted by {sorted(bad)}")
    return out


ALL = (entries_balance, trial_balance_zero, closing_is_opening_plus_postings, normal_balances, subledgers_tie,
       partners_tie, agings_roll_forward, bank_ties, document_chains, entry_numbers_follow_entry_time,
       fixed_assets_tie, prepaids_tie, accruals_reverse, vendor_accounts, control_accounts)
#: what ``simulate_year`` checks on every run (linear in the size of the books)
CHEAP = (entries_balance, trial_balance_zero, closing_is_opening_plus_postings, normal_balances, subledgers_tie,
         bank_ties, fixed_assets_tie, prepaids_tie, control_accounts)


def check(books, checks=ALL) -> dict[str, list[str]]:
    """Violations by check name (only checks that failed)."""
    out = {}
    for c in checks:
        v = c(books)
        if v:
            out[c.__name__] = v
    return out


def assert_cheap(books) -> None:
    bad = check(books, CHEAP)
    if bad:
        raise BooksInconsistent(f"simulated books are inconsistent: {bad}")
