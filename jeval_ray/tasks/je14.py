"""JE-14 (L4): estimate releases.

Planted: top-side (manual, document type SA, prepared by the Controller or the CFO), post-closing
(entered after the period's close date in ``master:calendar``, posted back to the month end)
releases of a specific bad-debt reserve: Dr 1190 Allowance for Doubtful Accounts / Cr 6500 Bad
Debt Expense. Every release has a management memo stating the reserve held before the release;
the estimate policy states the reserve rates on balances 91-180 days and over 180 days past due
(the 91-180 rate varies by seed); the AR aging report at the period end gives the customer's
overdue balances. Required reserve = rate x (91-180 days) + 100% x (over 180 days). For a defect
what the release leaves is below the required reserve: either the reserve held was already short
of it (nothing supports the release) or the release exceeds the excess held over it (part of it is
unsupported). The misstatement is the allowance's shortfall after the release,
``required - (held - release)``: an auditor proposes the adjustment that restores the required
reserve, which exceeds the release itself when the reserve was already short.

Decoys: releases drawn from the same surface distribution (amount, preparer and approver, dates,
customer, reference and description shape: every release's amount is drawn before it is made a
defect or a decoy) whose memo, aging and policy agree: the reserve held exceeds the required
reserve by at least the release, so what is left still covers it. ``near_miss`` moves the
decoy release towards that full excess.

Decisive facts (the key's ``facts``): the reserve held (memo), the customer's 91-180 and over-180
balances (aging), the policy rate, the required reserve they give and the release; for a defect
also the shortfall. A memo's basis for the release (collections, a payment plan, a credit
improvement) is worded the same way for supported and unsupported releases: only the figures decide.

Background: a monthly general-reserve provision (Dr 6500 / Cr 1190) by a GL accountant and a few
write-offs (Dr 1190 / Cr 1100), all within the period; the base population never touches 1190 or
6500. Required evidence for a defect: the memo, the aging report of the period, the estimate
policy and the close calendar; a decoy is cleared by its memo, aging report and the policy.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.agents._script import Kit
from jeval_ray.errors import ConfigError
from jeval_ray.tasks._spec import spec
from jeval_ray.world._base import (COMPANY_NAME, HOLIDAYS_2025, PERIOD_END, PERIOD_START, business_days,
                                   month_close_dates)

SPEC = spec(
    "JE-14",
    "L4",
    'Estimate releases',
    objective='Find top-side, post-closing releases of estimates (such as the bad-debt allowance) that the AR aging and the estimate policy contradict; state the misstatement.',
    defect='top-side post-closing release of an estimate that the documents contradict',
    decoys='a documented, supported estimate change',
    required_evidence='management memo, AR aging, estimate policy',
    sources=('general_ledger', 'management_memos', 'ar_aging', 'estimate_policy'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('ESTIMATE_RELEASE', 'top-side post-closing release of an estimate contradicted by the documents'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
)

ALLOWANCE, BAD_DEBT, AR = "1190", "6500", "1100"
POLICY_TITLE = "Allowance for doubtful accounts - estimate policy"
AGING_TITLE = "Accounts receivable aging as of {date}"
MEMO_TITLE = "Memo: release of specific reserve - {customer} ({period})"
SENIOR = ("IBROWN", "JWRIGHT")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
BUCKETS = ("Current", "1-30", "31-60", "61-90", "91-180", "Over 180")
#: what management gives as the basis for a release (the same wording for supported and unsupported ones)
REASONS = (
    "collections received from the customer after the quarterly credit review",
    "a payment plan agreed with the customer's finance director",
    "an improvement in the customer's credit position reported by the sales team",
    "partial settlement of the overdue invoices following a dispute resolution",
    "receipts expected under the customer's refinancing, confirmed in a call with its treasurer",
)


def _month_end(m: int) -> np.datetime64:
    return (np.datetime64(f"2025-{m:02d}") + 1).astype("datetime64[D]") - 1


def _not_round(dollars: int, down: bool) -> int:
    """Whole-hundred amounts read as estimates plucked from the air; keep planted amounts off them."""
    return dollars + (-37 if down else 37) if dollars % 100 == 0 else dollars


def plant(b) -> None:
    rng = b.rng
    e = b.e
    names = {u["user_id"]: (u["name"], u["role"]) for u in b.users}
    rate91 = int(rng.choice([40, 50, 60]))
    step91 = {40: 5, 50: 2, 60: 5}[rate91]  # balances for which the reserve is whole dollars
    policy = b.add_document(
        "policy", POLICY_TITLE,
        "1. Scope. This policy sets how Northwind Components estimates the allowance for doubtful accounts "
        f"(account {ALLOWANCE}) and the bad debt expense (account {BAD_DEBT}). "
        "2. General reserve. Balances up to 90 days past due are covered by a general reserve provided monthly "
        "by the GL team (2% of current balances, 5% of balances 1-90 days past due). "
        f"3. Specific reserve. For each customer a specific reserve is required of {rate91}% of the balance 91-180 "
        "days past due plus 100% of the balance more than 180 days past due, computed on the accounts receivable "
        "aging report at the period end. "
        "4. Releases. A specific reserve may be released only to the extent that the reserve held exceeds the "
        "reserve required at the period end under section 3. Expectations of future collection, payment plans "
        "without payments received, or changes in sentiment do not reduce the required reserve. "
        "5. Approval and timing. A release is proposed by memo stating the reserve held, approved by the Controller "
        "and the CFO, and may be recorded as a top-side adjustment after the period close until the reporting "
        "package is issued; the memo and the aging report are retained with the journal voucher.",
        "2024-10-15",
    )
    n_def, n_dec = b.n_defects, b.n_decoys
    slots = [(m, c) for m in range(1, 13) for c in range(len(b.customers))]
    if n_def + n_dec > len(slots):
        raise ConfigError(f"impossible knobs for JE-14: at most {len(slots)} reserve releases fit in one year")
    chosen = [slots[i] for i in rng.choice(len(slots), size=n_def + n_dec, replace=False)]
    kinds = ["defect"] * n_def + ["decoy"] * n_dec
    order = rng.permutation(len(kinds))
    releases = [(kinds[k], *chosen[k]) for k in order]
    closes = dict(month_close_dates())
    hol = np.array([h for h, _ in HOLIDAYS_2025], dtype="datetime64[D]")
    idxs = b.pick(len(releases), what="entries to hold the reserve releases")
    aging_rows: dict[int, dict[int, tuple[int, ...]]] = {}
    per_month: dict[int, int] = {}
    for idx, (kind, month, cust) in zip(idxs, releases):
        period = f"2025-{month:02d}"
        customer = b.customers[cust]
        b180 = int(rng.integers(0, 40_000))
        b91 = int(rng.integers(30_000, 260_000)) // step91 * step91
        required = rate91 * b91 // 100 + b180
        # the release comes from one distribution whatever the kind: only the memo, the aging and
        # the policy (read, not listed) tell a supported release from an unsupported one
        x = _not_round(int(np.exp(rng.uniform(np.log(12_000), np.log(120_000)))), down=True)
        if kind == "decoy":
            # supported = held - required covers the release; near_miss brings it down to the release
            supported = int(np.ceil(x / (1 - (1 - b.knobs.near_miss) * rng.uniform(0, 0.5))))
            held = required + supported
        elif rng.random() < 0.55:
            held = int(required * rng.uniform(0.75, 1.0))  # the reserve was already short: nothing supports it
        else:
            held = required + int(x * rng.uniform(0.2, 0.8))  # part of the release is supported
        # the misstatement is the allowance's shortfall after the release (required - what is left)
        unsupported = max(0, required - (held - x))
        aging_rows.setdefault(month, {})[cust] = (b91, b180)
        preparer = str(rng.choice(SENIOR))
        approver = SENIOR[1] if preparer == SENIOR[0] else SENIOR[0]
        close = np.datetime64(closes[period])
        entered = np.busday_offset(close, int(rng.integers(1, 4)), roll="forward", holidays=hol)
        per_month[month] = per_month.get(month, 0) + 1
        ref = f"TS-{month:02d}{per_month[month]:02d}-25"
        e["manual"][idx] = True
        e["template"][idx] = "reserve_release"
        e["doc_type"][idx] = "SA"
        e["preparer"][idx] = preparer
        e["approver"][idx] = approver
        e["post_date"][idx] = _month_end(month)
        e["doc_date"][idx] = _month_end(month)
        e["entry_date"][idx] = entered
        e["time_s"][idx] = int(rng.integers(9 * 3600, 17 * 3600))
        e["debit_account"][idx] = ALLOWANCE
        e["credit_account"][idx] = BAD_DEBT
        e["debit_cents"][idx] = e["credit_cents"][idx] = x * 100
        e["vendor_id"][idx] = ""
        e["reference"][idx] = ref
        e["description"][idx] = f"Release specific reserve {customer['name']} {MONTHS[month - 1]} close"
        p_name, p_role = names[preparer]
        a_name, a_role = names[approver]
        memo = b.add_document(
            "memo", MEMO_TITLE.format(customer=customer["name"], period=period),
            f"To: Accounting file, period {period}. From: {p_name}, {p_role}. "
            f"Subject: journal voucher {ref}, release of the specific reserve held against {customer['name']} "
            f"({customer['customer_id']}). Specific reserve held before this entry: USD {held:,.2f}. "
            f"Basis for the release: {REASONS[int(rng.integers(0, len(REASONS)))]}. "
            f"Management releases USD {x:,.2f} of the reserve to bad debt expense as a top-side adjustment to period "
            f"{period}, recorded after the close. Approved: {a_name}, {a_role}.",
            str(entered - 1),
        )
        aging_doc = ("aging", month)
        ev_core = [memo, aging_doc, policy]
        # decisive facts: the reserve held (memo), the customer's aged balances (aging), the policy rate,
        # the required reserve they give and the release; for a defect also the shortfall it leaves
        facts = [float(held), float(b91), float(b180), f"{rate91}%", float(required), float(x)]
        if kind == "defect":
            b.add_defect(int(idx), "unsupported_reserve_release", "ESTIMATE_RELEASE", ev_core + ["master:calendar"],
                         unsupported * 100, facts=facts + [unsupported / 1.0])
        else:
            b.add_decoy(int(idx), "supported_reserve_release", ev_core, facts=facts)

    # one aging report per period end that has a release; the rows of other customers are ordinary
    aging_handle = {}
    for month in sorted(aging_rows):
        lines = [" | ".join(("Customer", *BUCKETS, "Total"))]
        for ci, c in enumerate(b.customers):
            cur = int(rng.integers(20_000, 400_000))
            b1, b2, b3 = (int(rng.integers(0, hi)) for hi in (90_000, 40_000, 20_000))
            b91, b180 = aging_rows[month].get(ci, (int(rng.integers(0, 15_000)) if rng.random() < 0.4 else 0, 0))
            vals = (cur, b1, b2, b3, b91, b180)
            lines.append(" | ".join((f"{c['name']} ({c['customer_id']})", *(f"{v:,}" for v in vals), f"{sum(vals):,}")))
        date = str(_month_end(month))
        aging_handle[month] = b.add_document(
            "aging_report", AGING_TITLE.format(date=date),
            f"{COMPANY_NAME} - accounts receivable aging by customer as of {date}, in USD, days past due. "
            "Prepared by the AR team from the billing subledger; reconciled to account 1100.\n" + "\n".join(lines),
            date,
        )
    b.defects = [(i, t, c, [aging_handle[x[1]] if isinstance(x, tuple) and x[0] == "aging" else x for x in ev], m, fx)
                 for i, t, c, ev, m, fx in b.defects]
    b.decoys = [(i, t, [aging_handle[x[1]] if isinstance(x, tuple) and x[0] == "aging" else x for x in ev], fx)
                for i, t, ev, fx in b.decoys]
    _background(b)


def _background(b) -> None:
    """Monthly general-reserve provisions and a few write-offs: the allowance's ordinary traffic."""
    rng = b.rng
    e = b.e
    bdays = business_days(PERIOD_START, PERIOD_END)
    provisions = b.pick(12, what="entries for the monthly provisions")
    for month, idx in zip(range(1, 13), provisions):
        last = bdays[np.searchsorted(bdays, _month_end(month), side="right") - 1]
        preparer = str(rng.choice(["DPATEL", "EMUELLER"]))
        _rewrite(e, idx, last, preparer, str(rng.choice(["FNGUYEN", "HJOHANSSON"])), BAD_DEBT, ALLOWANCE,
                 int(rng.integers(2_000_00, 12_000_00)), f"Bad debt provision {MONTHS[month - 1]} - general reserve",
                 f"GR-{month:02d}-25", rng)
    writeoffs = b.pick(int(rng.integers(2, 4)), what="entries for the write-offs")
    for idx in writeoffs:
        day = bdays[int(rng.integers(20, len(bdays) - 20))]
        cust = b.customers[int(rng.integers(0, len(b.customers)))]
        _rewrite(e, idx, day, "FNGUYEN", "HJOHANSSON", ALLOWANCE, AR, int(rng.integers(1_500_00, 9_000_00)),
                 f"Write-off {cust['name']} balance per credit committee", f"WO-{int(rng.integers(100, 999))}", rng)


def _rewrite(e, idx, day, preparer, approver, dr, cr, cents, text, ref, rng) -> None:
    cents = cents + 1_737 if cents % 10_000 == 0 else cents
    e["manual"][idx] = True
    e["template"][idx] = "allowance"
    e["doc_type"][idx] = "SA"
    e["preparer"][idx] = preparer
    e["approver"][idx] = approver
    e["post_date"][idx] = e["entry_date"][idx] = e["doc_date"][idx] = day
    e["time_s"][idx] = int(rng.integers(9 * 3600, 17 * 3600))
    e["debit_account"][idx], e["credit_account"][idx] = dr, cr
    e["debit_cents"][idx] = e["credit_cents"][idx] = cents
    e["vendor_id"][idx] = ""
    e["reference"][idx] = ref
    e["description"][idx] = text


# ---------------------------------------------------------------------------- strategies
def _money(text: str) -> float:
    return float(text.replace(",", ""))


def _releases(kit: Kit):
    """Entries debiting the allowance and crediting bad debt expense, with their header fields."""
    rows = yield from kit.ledger(
        filters=[{"column": "account", "op": "in", "value": [ALLOWANCE, BAD_DEBT]}],
        columns=["entry_id", "line_no", "account", "debit", "credit", "posting_date", "entry_timestamp", "preparer",
                 "source", "document_type", "description", "reference"],
    )
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["entry_id"], []).append(r)
    out = {}
    for eid, lines in by.items():
        dr = [r for r in lines if r["account"] == ALLOWANCE and (r["debit"] or 0) > 0]
        cr = [r for r in lines if r["account"] == BAD_DEBT and (r["credit"] or 0) > 0]
        if dr and cr:
            out[eid] = {**lines[0], "amount": dr[0]["debit"]}
    return out


def _post_closing(kit: Kit, releases: dict):
    """Releases entered after the close of the period they are posted to (close dates from the calendar)."""
    cal = yield from kit.master("calendar")
    closes = {r["description"].split()[-1]: r["date"] for r in cal if r.get("kind") == "period_close"}
    late = {}
    for eid, r in releases.items():
        close = closes.get(r["posting_date"][:7])
        if close and r["entry_timestamp"][:10] > close and r["source"] == "manual" and r["document_type"] == "SA":
            late[eid] = {**r, "close": close}
    return late


def naive(kit: Kit):
    """Flags every top-side post-closing allowance release at its full amount, without reading the memos."""
    releases = yield from _releases(kit)
    late = yield from _post_closing(kit, releases)
    for eid, r in sorted(late.items()):
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "ESTIMATE_RELEASE", ["master:calendar"],
                            f"Entry {eid}: top-side release of {r['amount']:,.2f} from the allowance, entered "
                            f"{r['entry_timestamp'][:10]} after the {r['close']} close.", amount=r["amount"])
    yield from kit.submit(f"Flagged {len(late)} post-closing allowance releases.")


def _aging_row(body: str, customer: str) -> tuple[float, float] | None:
    for line in body.splitlines():
        if line.startswith(customer + " ("):
            cells = [c.strip() for c in line.split("|")]
            return _money(cells[5]), _money(cells[6])
    return None


def careful(kit: Kit):
    """Recomputes each post-closing release's required reserve from the aging and the policy, flags the
    unsupported part, and clears releases the documents support."""
    releases = yield from _releases(kit)
    late = yield from _post_closing(kit, releases)
    docs = yield from kit.documents()
    policy_id = next((d["doc_id"] for d in docs if d["title"] == POLICY_TITLE), None)
    rate91, rate180 = 0.5, 1.0
    if policy_id:
        body = (yield from kit.open(policy_id)).get("body", "")
        m = re.search(r"(\d+)% of the balance 91-180 days", body)
        m2 = re.search(r"(\d+)% of the balance more than 180 days", body)
        rate91 = int(m.group(1)) / 100 if m else rate91
        rate180 = int(m2.group(1)) / 100 if m2 else rate180
    by_title = {d["title"]: d["doc_id"] for d in docs}
    agings: dict[str, str] = {}
    n_flag = n_clear = 0
    for eid, r in sorted(late.items(), key=lambda kv: kv[1]["posting_date"]):
        if kit.calls_left <= 4:
            break
        customer = re.sub(r"^Release specific reserve (.*) \w{3} close$", r"\1", r["description"])
        period = r["posting_date"][:7]
        memo_id = by_title.get(MEMO_TITLE.format(customer=customer, period=period))
        aging_id = by_title.get(AGING_TITLE.format(date=r["posting_date"]))
        if not memo_id or not aging_id or not policy_id:
            continue
        memo = (yield from kit.open(memo_id)).get("body", "")
        if aging_id not in agings:
            agings[aging_id] = (yield from kit.open(aging_id)).get("body", "")
        row = _aging_row(agings[aging_id], customer)
        held_m = re.search(r"reserve held before this entry: USD ([\d,]+\.\d\d)", memo)
        if row is None or held_m is None:
            continue
        held = _money(held_m.group(1))
        required = round(rate91 * row[0] + rate180 * row[1], 2)
        left = held - r["amount"]
        unsupported = round(max(0.0, required - left), 2)
        calc = (f"reserve held {held:,.2f} per {memo_id}; required {required:,.2f} = {rate91:.0%} x 91-180 days "
                f"{row[0]:,.0f} + {rate180:.0%} x over 180 days {row[1]:,.0f} per aging {aging_id} and policy {policy_id}; "
                f"reserve left after the release {left:,.2f}")
        if unsupported > 0.01:
            yield from kit.flag(
                eid, "ESTIMATE_RELEASE", [memo_id, aging_id, policy_id, "master:calendar"],
                f"Entry {eid}: top-side release of {r['amount']:,.2f} by {r['preparer']} entered "
                f"{r['entry_timestamp'][:10]} after the {r['close']} close; {calc}. The allowance is short of the "
                f"required reserve by {unsupported:,.2f} after the release (misstatement).", amount=unsupported)
            n_flag += 1
        else:
            yield from kit.clear(
                eid, [memo_id, aging_id, policy_id],
                f"Entry {eid}: release of {r['amount']:,.2f} leaves at least the required reserve; {calc}.")
            n_clear += 1
    yield from kit.submit(f"Examined {len(late)} post-closing allowance releases: flagged {n_flag} unsupported, "
                          f"cleared {n_clear} supported by the aging and the policy.")
