"""JE-14 (L4): estimate releases.

The books' allowance review (``jeval_ray.books.close``) sets the allowance for doubtful accounts
(1190, a contra account with a credit balance) at every month end: a general provision by aging
bucket and specific provisions per customer, keyed by the senior accountant within the close. The
AR subledger gives the open invoices and their aging at each month end; they tie to account 1100
and roll forward.

Planted, per release: a customer disputes some of its invoices, and at a month end the senior
accountant books a specific provision of their open amount (Dr 6500 Bad Debt Expense / Cr 1190,
an ``AL`` allowance adjustment keyed within the close, with the credit committee's note listing
the invoices). Some months later the accounting manager releases the reserve as a top-side entry
(Dr 1190 / Cr 6500, ``AL``, posted to a month end, keyed one to three business days *after* that
period's close date in ``master:calendar``, approved by the Controller or the CFO) with a memo
stating the reserve held, the invoices it covers and the basis for the release. The estimate
policy lets a specific reserve be released only to the extent that the invoices it covers were
collected, credited or written off by the period end. The AR open-items report of that month end
(from the books' subledger, reconciled to account 1100) shows which of them are still open.

* **Defect** (``unsupported_reserve_release``): at least one of the disputed invoices is still
  open at the period end, so the reserve left after the release is below their open amount. The
  misstatement is the allowance's shortfall for the dispute after the release,
  ``open amount - (held - release)``: less than the release when part of the invoices was paid.
* **Decoy** (``supported_reserve_release``): the same entry, memo and basis, but the invoices it
  releases were paid by the period end (receipts in the ledger; not on the open-items report), so
  what is left still covers the invoices still open (with ``near_miss`` >= 0.5 some releases leave
  exactly the open amount).

Whatever reserve a release leaves is released by the senior accountant's review (within the close)
at the first month end by which all the disputed invoices are paid, so no reserve outlives its
invoices. The release's basis in the memo (a settlement, a payment plan, a credit improvement ...)
is drawn from one list for both: only the figures decide. Release months (February-November), amounts,
preparer, approver, keying lag and wording come from one distribution.

Decisive facts (the key's ``facts``): the reserve held (memo), the open amount of the disputed
invoices at the period end (open-items report), the release, and for a defect the shortfall.

Unplanted look-alikes: the books' own allowance review releases the reserve (Dr 1190 / Cr 6500, a
manual ``AL`` entry by the senior accountant) whenever the required allowance falls, and releases
what a planted release left once the disputed invoices are paid: 369 such entries over seeds 0-49
(7.4 a world), all keyed within the close. The red-flag filter (manual allowance releases keyed
after the close of the period they are posted to) caught none of the 45,502 unplanted entries of
those worlds (0 %); a wider surface rule, "every manual release of the allowance", catches those
7.4 a world, and they are not exceptions: the review's own adjustments, keyed before the close,
leaving the allowance at the policy's requirement.
"""

from __future__ import annotations

import re

import numpy as np

from jeval_ray.protocol.kit import Kit
from jeval_ray.books import master as md
from jeval_ray.books.documents import doc_number
from jeval_ray.errors import ConfigError
from jeval_ray.builder.spec import key, spec
from jeval_ray.builder._base import COMPANY_NAME, MONTH_ABBR, month_close_dates

SPEC = spec(
    "JE-14",
    "L4",
    'Estimate releases',
    objective='Find top-side, post-closing releases of estimates (such as the bad-debt allowance) that the evidence does not support; state the misstatement.',
    defect='top-side post-closing release of an estimate that the documents do not support',
    decoys='a documented, supported estimate change',
    required_evidence='management memo, AR open items, estimate policy',
    sources=('general_ledger', 'management_memos', 'ar_open_items', 'estimate_policy', 'close_calendar'),
    tools=('list_documents', 'open_document', 'search_documents', 'query_ledger', 'get_entry', 'get_master_data', 'compute_stats', 'flag_entry', 'clear_entry', 'submit'),
    criteria=(
        ('ESTIMATE_RELEASE', 'top-side post-closing release of an estimate that the documents do not support'),
    ),
    withheld_variant=('search_documents',),
    asks_amount=True,
    available=True,
)

KEY_RATIONALE = (
    key("defect", "unsupported_reserve_release",
        evidence="the release memo, the AR open-items report at the period end, the estimate policy, master:calendar",
        facts="the specific reserve held (memo), the open amount at the period end of the disputed invoices the memo "
              "lists (open-items report), the release, and the shortfall open amount - (held - release)",
        conclusion="A top-side release keyed after the period's close reduced the specific reserve below the open amount "
                   "of the disputed invoices it covers; the policy allows a release only for invoices collected, credited "
                   "or written off by the period end. The allowance is understated (net receivables "
                   "overstated) and bad debt expense understated by the shortfall; propose an adjustment restoring the reserve.",
        standard="AS 2401.58-.62 (journal entries and other adjustments, top-side and post-closing); AS 2401.63-.65 "
                 "(reviewing accounting estimates for bias); ISA 240.32(a)-(b)"),
    key("decoy", "supported_reserve_release",
        evidence="the release memo, the AR open-items report at the period end, the estimate policy",
        facts="the reserve held, the open amount at the period end of the invoices listed (nil or no more than what the "
              "release leaves), the release",
        conclusion="The release only removes the reserve on disputed invoices the customer paid by the period end (they are "
                   "no longer on the open-items report); the reserve left covers the invoices still open. Supported; no "
                   "exception.",
        standard="AS 2401.58-.62; AS 2501 (auditing accounting estimates)"),
)

ALLOWANCE, BAD_DEBT, AR = "1190", "6500", "1100"
POLICY_TITLE = "Allowance for doubtful accounts - estimate policy"
OPEN_ITEMS_TITLE = "Accounts receivable open items and aging as of {date}"
MEMO_TITLE = "Memo: release of specific reserve {ref} - {customer} ({period})"
NOTE_TITLE = "Credit committee note: disputed invoices {ref} - {customer} ({period})"
RELEASE_TEXT = "Release specific reserve {customer} - {month} close"
PROVISION_TEXT = "Specific provision disputed invoices {customer} {month}"
PAID_TEXT = "Release specific provision {customer} {month} - disputed invoices paid"
#: what management gives as the basis for a release (the same wording for supported and unsupported ones)
REASONS = (
    "the dispute was settled with the customer's purchasing team and the invoices are being paid",
    "a payment plan agreed with the customer's finance director",
    "an improvement in the customer's credit position reported by the sales team",
    "partial settlement of the disputed invoices following the quality review",
    "receipts from the customer confirmed in a call with its treasurer",
)
_BUCKET_NAMES = ("Current", "1-30", "31-60", "61-90", "Over 90")


def _money(c: int) -> str:
    return f"{c / 100:,.2f}"


def _approver_for(cents: int, preparer: str) -> str:
    """The lowest approver (other than the preparer) whose limit covers the amount."""
    for a in md.APPROVERS:
        if a != preparer and md.USERS[md.USER[a]].approval_limit_cents >= cents:
            return a
    return "JWRIGHT"


class _OpenItems:
    """The books' AR open items at the month ends, looked up by (day, invoice)."""

    def __init__(self, books):
        oi = books.ar_open
        self.oi = oi
        self.key = oi.at.astype(np.int64) * (1 << 32) + oi.item.astype(np.int64)
        self.order = np.argsort(self.key, kind="stable")
        self.sorted = self.key[self.order]

    def amount(self, day: int, items: np.ndarray) -> np.ndarray:
        k = np.int64(day) * (1 << 32) + np.asarray(items, dtype=np.int64)
        pos = np.searchsorted(self.sorted, k)
        pos = np.minimum(pos, len(self.sorted) - 1)
        hit = self.sorted[pos] == k
        return np.where(hit, self.oi.amount[self.order[pos]], 0).astype(np.int64)

    def at(self, day: int) -> np.ndarray:
        """Row indices of the items open at ``day``."""
        return np.flatnonzero(self.oi.at == day)


def _excluded(books, oi: _OpenItems) -> set[int]:
    """Invoices the books treat as doubtful (written off, or still unpaid well past due at year end):
    the allowance review provides for them already."""
    d = books.docs
    wo = d.of("WO")
    out = set(d.parent[wo].tolist())
    last = oi.at(md.YEAR_END)
    late = last[oi.oi.days_past_due[last] > 25]
    out |= set(oi.oi.item[late].tolist())
    return out


def plant(b) -> None:
    rng = b.rng
    books = b.books
    d = books.docs
    m = books.master
    names = {u["user_id"]: (u["name"], u["role"]) for u in b.users}
    policy = b.add_document(
        "policy", POLICY_TITLE,
        f"1. Scope. This policy sets how {COMPANY_NAME} estimates the allowance for doubtful accounts (account "
        f"{ALLOWANCE}, a contra account to {AR} Accounts Receivable - Trade) and bad debt expense (account {BAD_DEBT}). "
        "2. General provision. At every month end the allowance holds 1% of current receivables, 4% of receivables 1-90 "
        "days past due and 20% of receivables more than 90 days past due, computed on the accounts receivable aging. "
        "3. Specific provisions. Invoices identified as uncollectible are provided in full once more than 60 days past due. "
        "Invoices a customer disputes are provided in full, on the credit committee's note listing them, from the month "
        "end at which the dispute is known; the general provision stays as computed. "
        "4. Releases. A specific provision may be released only to the extent that the invoices it covers were collected, "
        "credited or written off by the period end, as shown by the accounts receivable open items at that date: the "
        "reserve left must be at least the open amount of the invoices it still covers. Settlements not yet paid, payment "
        "plans, expected receipts and changes in credit sentiment do not reduce the required reserve. "
        "5. Approval and timing. A release is proposed by memo stating the reserve held, the invoices covered and the "
        "basis, approved by the Controller or the CFO, and may be recorded as a top-side adjustment after the period close "
        "until the reporting package is issued; the memo and the open-items report are retained with the journal voucher.",
        "2024-10-15",
    )
    n_def, n_dec = b.n_defects, b.n_decoys
    kinds = ["defect"] * n_def + ["decoy"] * n_dec
    kinds = [kinds[i] for i in rng.permutation(len(kinds))]
    oi = _OpenItems(books)
    excluded = _excluded(books, oi)
    closes = {int(p[5:7]): md.day(c) for p, c in month_close_dates()}
    ends = md.MONTH_ENDS
    used: set[int] = set()
    ref_no = len(d)  # new documents are numbered after the books' own
    planted = []  # (kind, customer, m0, m, items, open_m0, open_m, release)
    for kind in kinds:
        for _attempt in range(400):
            mm = int(rng.integers(2, 12))  # release month, February-November (December's close ends the year)
            m0 = mm - int(rng.integers(1, 4))
            if m0 < 1:
                continue
            rows = oi.at(int(ends[m0 - 1]))
            items = oi.oi.item[rows]
            # invoices of the year (in the listing), not already disputed, not doubtful in the books
            ok = (d.post_date[items] >= md.YEAR_START) & np.array(
                [i not in used and i not in excluded for i in items.tolist()], dtype=bool)
            rows, items = rows[ok], items[ok]
            if not len(rows):
                continue
            cust = oi.oi.partner[rows]
            c = int(cust[int(rng.integers(0, len(cust)))])
            mine = cust == c
            its, a0 = items[mine], oi.oi.amount[rows[mine]]
            am = oi.amount(int(ends[mm - 1]), its)
            paid, still = np.flatnonzero(am == 0), np.flatnonzero(am > 0)
            k = int(rng.integers(1, 4))
            if kind == "decoy":
                # some invoices paid; with near_miss, one still open whose open amount the release leaves
                take_open = len(still) and b.knobs.near_miss >= 0.5 and rng.random() < 0.4
                if not len(paid):
                    continue
                sel = list(rng.choice(paid, size=min(len(paid), max(1, k - int(take_open))), replace=False))
                if take_open:
                    sel.append(int(rng.choice(still)))
            else:
                if not len(still):
                    continue
                sel = [int(rng.choice(still))]
                rest = np.setdiff1d(np.arange(len(its)), sel)
                if k > 1 and len(rest):
                    sel += list(rng.choice(rest, size=min(len(rest), k - 1), replace=False))
            sel = np.array(sorted(int(s) for s in sel))
            s0 = int(a0[sel].sum())
            open_m = int(am[sel].sum())
            if s0 < 500_00:
                continue
            if kind == "decoy":
                x = s0 - open_m
            elif open_m < s0 and rng.random() < 0.5:
                # a partial release that still leaves less than the open amount
                x = s0 - int(open_m * rng.uniform(0.1, 0.8))
            else:
                x = s0
            if x <= 0:
                continue
            used.update(int(i) for i in its[sel])
            planted.append((kind, c, m0, mm, its[sel], a0[sel], am[sel], x))
            break
        else:
            raise ConfigError(f"impossible knobs for JE-14: no disputed invoices left for a {kind}; lower n_defects/n_decoys "
                              "or raise n_entries")
    # the entries: one provision and one release per dispute
    rows_e, meta, rows_later = [], [], []
    for kind, c, m0, mm, its, a0, am, x in planted:
        s0 = int(a0.sum())
        cname = m.customer_name[c]
        pday = int(ends[m0 - 1])
        p_entered = int(md.business_offset(pday + 1, int(rng.integers(0, 3))))
        p_app = _approver_for(s0, "FNGUYEN")
        p_ref = doc_number("AL", ref_no)
        r_ref = doc_number("AL", ref_no + 1)
        ref_no += 2
        rday = int(ends[mm - 1])
        r_entered = int(md.business_offset(closes[mm] + 1, int(rng.integers(0, 3))))
        r_app = _approver_for(x, "HJOHANSSON")
        if r_app == "HJOHANSSON" or md.USERS[md.USER[r_app]].approval_limit_cents < md.USERS[md.USER["IBROWN"]].approval_limit_cents:
            r_app = "IBROWN" if x <= md.USERS[md.USER["IBROWN"]].approval_limit_cents else "JWRIGHT"
        if rng.random() < 0.3 and r_app == "IBROWN":
            r_app = "JWRIGHT"
        common = {"doc_code": "AL", "customer_id": m.customer_id(c)}
        rows_e.append({**common, "post_date": md.iso(pday), "entry_date": md.iso(p_entered),
                       "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "FNGUYEN", "approver": p_app,
                       "reference": p_ref, "description": PROVISION_TEXT.format(customer=cname, month=MONTH_ABBR[m0 - 1]),
                       "lines": [(BAD_DEBT, s0), (ALLOWANCE, -s0)]})
        rows_e.append({**common, "post_date": md.iso(rday), "entry_date": md.iso(r_entered),
                       "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "HJOHANSSON", "approver": r_app,
                       "reference": r_ref, "description": RELEASE_TEXT.format(customer=cname, month=MONTH_ABBR[mm - 1]),
                       "lines": [(ALLOWANCE, x), (BAD_DEBT, -x)]})
        meta.append((p_ref, p_entered, p_app, r_ref, r_entered, r_app))
        # what the release leaves is released by the senior accountant's review at the first month end by
        # which the invoices are all paid (within that close), so no reserve outlives its invoices
        left = s0 - x
        paid_by = [k for k in range(mm + 1, 13) if left > 0 and int(oi.amount(int(ends[k - 1]), its).sum()) == 0]
        if paid_by:
            k = paid_by[0]
            rows_later.append({**common, "post_date": md.iso(int(ends[k - 1])),
                               "entry_date": md.iso(int(md.business_offset(int(ends[k - 1]) + 1, int(rng.integers(0, 3))))),
                               "time_s": int(rng.integers(9 * 3600, 17 * 3600)), "preparer": "FNGUYEN",
                               "approver": _approver_for(left, "FNGUYEN"), "reference": doc_number("AL", ref_no),
                               "description": PAID_TEXT.format(customer=cname, month=MONTH_ABBR[k - 1]),
                               "lines": [(ALLOWANCE, left), (BAD_DEBT, -left)]})
            ref_no += 1
    idx = b.add_entries(rows_e + rows_later)  # one batch: the releases stay at odd positions of rows_e
    by_month: dict[int, list[int]] = {}
    for j, (kind, c, m0, mm, its, a0, am, x) in enumerate(planted):
        p_ref, p_entered, p_app, r_ref, r_entered, r_app = meta[j]
        ridx = int(idx[2 * j + 1])
        cname, cid = m.customer_name[c], m.customer_id(c)
        s0, open_m = int(a0.sum()), int(am.sum())
        inv = [doc_number("CI", int(i)) for i in its]
        listing = "; ".join(f"{n} dated {md.iso(d.doc_date[int(i)])}, open USD {_money(int(a))}"
                            for n, i, a in zip(inv, its, a0))
        pa_name, pa_role = names[p_app]
        b.add_document(
            "memo", NOTE_TITLE.format(ref=p_ref, customer=cname, period=f"2025-{m0:02d}"),
            f"Credit committee, {md.iso(p_entered)}. Customer: {cname} ({cid}). The customer disputes the following invoices "
            f"(quality and delivery claims under review): {listing}. Under the estimate policy section 3 they are provided in "
            f"full at {md.iso(int(ends[m0 - 1]))}: specific provision USD {_money(s0)}, journal voucher {p_ref}, prepared by "
            f"{names['FNGUYEN'][0]} (Senior Accountant), approved by {pa_name} ({pa_role}) on {md.iso(p_entered)}.",
            md.iso(p_entered),
        )
        period = f"2025-{mm:02d}"
        ra_name, ra_role = names[r_app]
        memo = b.add_document(
            "memo", MEMO_TITLE.format(ref=r_ref, customer=cname, period=period),
            f"To: Accounting file, period {period}. From: {names['HJOHANSSON'][0]}, Accounting Manager. "
            f"Subject: journal voucher {r_ref}, release of the specific reserve held against {cname} ({cid}) for the "
            f"disputed invoices {', '.join(inv)} (provided by {p_ref}). Specific reserve held before this entry: "
            f"USD {_money(s0)}. Basis for the release: {REASONS[int(rng.integers(0, len(REASONS)))]}. "
            f"Management releases USD {_money(x)} of the reserve to bad debt expense as a top-side adjustment to period "
            f"{period}, recorded after the close. Approved: {ra_name}, {ra_role}, on {md.iso(r_entered)}.",
            md.iso(r_entered),
        )
        by_month.setdefault(mm, []).append(j)
        planted[j] = (*planted[j], ridx, memo)
    reports = {mm: _open_items_report(b, oi, int(ends[mm - 1]), sorted({planted[j][1] for j in js}))
               for mm, js in sorted(by_month.items())}
    for kind, c, m0, mm, its, a0, am, x, ridx, memo in planted:
        s0, open_m = int(a0.sum()), int(am.sum())
        # the invoices the reserve covers are decisive too: which of them the open-items report still lists
        facts = [s0 / 100, open_m / 100, x / 100] + [doc_number("CI", int(i)) for i in its]
        ev = [memo, reports[mm], policy]
        if kind == "defect":
            short = open_m - (s0 - x)
            b.add_defect(ridx, "unsupported_reserve_release", "ESTIMATE_RELEASE", ev + ["master:calendar"], short,
                         facts=facts[:3] + [short / 100] + facts[3:])
        else:
            b.add_decoy(ridx, "supported_reserve_release", ev, facts=facts)


def _open_items_report(b, oi: _OpenItems, day: int, detail_for: list[int]) -> int:
    """The books' AR aging at a month end (every customer) with the open invoices of the customers
    under specific review; the total ties to account 1100."""
    m = b.books.master
    d = b.books.docs
    rows = oi.at(day)
    part, buck, amt, item = oi.oi.partner[rows], oi.oi.bucket[rows], oi.oi.amount[rows], oi.oi.item[rows]
    lines = [" | ".join(("Customer", *_BUCKET_NAMES, "Total"))]
    n_c = m.n_customers
    grid = np.bincount(part * 5 + buck, weights=amt, minlength=n_c * 5).astype(np.int64).reshape(n_c, 5)
    for c in np.flatnonzero(grid.any(axis=1)).tolist():
        vals = grid[c].tolist()
        lines.append(" | ".join((f"{m.customer_name[c]} ({m.customer_id(c)})", *(_money(v) for v in vals),
                                 _money(sum(vals)))))
    total = int(amt.sum())
    lines.append("Total | " + " | ".join(_money(int(amt[buck == k].sum())) for k in range(5)) + f" | {_money(total)}")
    detail = ["Open invoices of customers under specific review (invoice | customer | invoice date | due date | days past "
              "due | open amount USD):"]
    for c in detail_for:
        for r in np.flatnonzero(part == c).tolist():
            i = int(item[r])
            detail.append(f"{doc_number('CI', i)} | {m.customer_id(c)} | {md.iso(d.doc_date[i])} | {md.iso(oi.oi.due[rows[r]])} | "
                          f"{int(day - oi.oi.due[rows[r]])} | {_money(int(amt[r]))}")
    date = md.iso(day)
    return b.add_document(
        "aging_report", OPEN_ITEMS_TITLE.format(date=date),
        f"{COMPANY_NAME} - accounts receivable open items and aging by customer as of {date}, in USD, days past due. "
        f"Prepared by the AR team from the billing subledger; the total agrees to account {AR} Accounts Receivable - Trade "
        f"at {date} (USD {_money(total)}). Invoices not listed were paid, credited or written off by that date.\n"
        + "\n".join(lines) + "\n" + "\n".join(detail),
        date,
    )


# ---------------------------------------------------------------------------- strategies
def _amount(text: str) -> float:
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
    """Manual releases entered after the close of the period they are posted to (close dates from the calendar)."""
    cal = yield from kit.master("calendar")
    closes = {r["description"].split()[-1]: r["date"] for r in cal if r.get("kind") == "period_close"}
    late = {}
    for eid, r in releases.items():
        close = closes.get(r["posting_date"][:7])
        if close and r["entry_timestamp"][:10] > close and r["source"] == "manual":
            late[eid] = {**r, "close": close}
    return late


def naive(kit: Kit):
    """Flags every manual post-closing allowance release at its full amount, without reading the memos."""
    releases = yield from _releases(kit)
    late = yield from _post_closing(kit, releases)
    for eid, r in sorted(late.items()):
        if kit.calls_left <= 1:
            break
        yield from kit.flag(eid, "ESTIMATE_RELEASE", ["master:calendar"],
                            f"Entry {eid}: top-side release of {r['amount']:,.2f} from the allowance, entered "
                            f"{r['entry_timestamp'][:10]} after the {r['close']} close.", amount=r["amount"])
    yield from kit.submit(f"Flagged {len(late)} post-closing allowance releases.")


def _open_invoices(body: str) -> dict[str, float]:
    """Invoice -> open amount from the detail lines of an open-items report."""
    out = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 6 and re.fullmatch(r"CI-\d+", cells[0]):
            out[cells[0]] = _amount(cells[5])
    return out


def careful(kit: Kit):
    """For each post-closing release, reads the memo (reserve held, invoices covered), finds the invoices
    still open at the period end on the open-items report, and flags the shortfall the release leaves
    against their open amount; clears releases that leave at least that."""
    releases = yield from _releases(kit)
    late = yield from _post_closing(kit, releases)
    docs = yield from kit.documents()
    by_title = {d["title"]: d["doc_id"] for d in docs}
    policy_id = by_title.get(POLICY_TITLE)
    if policy_id:
        yield from kit.open(policy_id)
    reports: dict[str, dict[str, float]] = {}
    n_flag = n_clear = 0
    pattern = re.compile("^" + re.escape(RELEASE_TEXT).replace(r"\{customer\}", "(.*)").replace(r"\{month\}", r"\w{3}") + "$")
    for eid, r in sorted(late.items(), key=lambda kv: (kv[1]["posting_date"], kv[0])):
        if kit.calls_left <= 4:
            break
        m = pattern.match(r["description"] or "")
        if not m or not policy_id:
            continue
        period = r["posting_date"][:7]
        memo_id = by_title.get(MEMO_TITLE.format(ref=r["reference"], customer=m.group(1), period=period))
        report_id = by_title.get(OPEN_ITEMS_TITLE.format(date=r["posting_date"]))
        if not memo_id or not report_id:
            continue
        memo = (yield from kit.open(memo_id)).get("body", "")
        if report_id not in reports:
            reports[report_id] = _open_invoices((yield from kit.open(report_id)).get("body", ""))
        held_m = re.search(r"reserve held before this entry: USD ([\d,]+\.\d\d)", memo)
        inv_m = re.search(r"disputed invoices ([A-Z0-9\-, ]+) \(provided by", memo)
        if held_m is None or inv_m is None:
            continue
        held = _amount(held_m.group(1))
        invoices = [s.strip() for s in inv_m.group(1).split(",")]
        still = {i: reports[report_id][i] for i in invoices if i in reports[report_id]}
        required = round(sum(still.values()), 2)
        left = round(held - r["amount"], 2)
        short = round(required - left, 2)
        open_txt = ", ".join(still) or "none of them"
        calc = (f"specific reserve held {held:,.2f} per memo {memo_id} for invoices {', '.join(invoices)}; still open at "
                f"{r['posting_date']} per open-items report {report_id}: {open_txt}, open amount {required:,.2f}; reserve "
                f"left after the release {left:,.2f}")
        if short > 0.005:
            yield from kit.flag(
                eid, "ESTIMATE_RELEASE", [memo_id, report_id, policy_id, "master:calendar"],
                f"Entry {eid}: top-side release of {r['amount']:,.2f} by {r['preparer']} entered "
                f"{r['entry_timestamp'][:10]} after the {r['close']} close; {calc}. The policy allows a release only for "
                f"invoices collected by the period end: the reserve is short by {short:,.2f} (misstatement).", amount=short)
            n_flag += 1
        else:
            yield from kit.clear(
                eid, [memo_id, report_id, policy_id],
                f"Entry {eid}: release of {r['amount']:,.2f}; {calc}, which covers the invoices still open: supported by "
                "the policy.")
            n_clear += 1
    yield from kit.submit(f"Examined {len(late)} post-closing allowance releases: flagged {n_flag} unsupported, "
                          f"cleared {n_clear} supported by the open items and the policy.")
