"""The one posting engine: each document type maps to declarative journal-line templates.

A template line is (account role, sign, amount expression). The amount expression is a linear
combination of the document's amount columns (``amount``, ``tax``, ``variance``, ``withheld``),
so a vendor invoice matched to a goods receipt reads

    Dr GR/IR            amount
    Dr price variance   variance
    Cr accounts payable amount + variance

At import time every template is checked to balance *symbolically*: for each amount column the
signed coefficients sum to zero, so every entry balances for any amounts, by construction. The
role ``@account`` takes the account the document names (a cost account chosen by the vendor's
category); ``@items`` expands the document's itemised lines (the year-end closing entry, one line
per profit-and-loss account). Only the document types the chart allows may touch a control
account; a template that tries fails at import, a document naming one fails at posting.

Lines come out grouped by entry in entry-number order (the order the entries were *recorded*),
so an entry recorded after the close but posted into December carries a late number.
Zero-amount lines (no price variance, no tax) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import chart
from jeval_ray.books.documents import DOC_TYPES, POSTS, TYPE, DocTable

AMOUNT_FIELDS = ("amount", "tax", "variance", "withheld")

# (role, sign, {amount field: coefficient})
_A = {"amount": 1}
TEMPLATES: dict[str, tuple[tuple[str, int, dict[str, int]], ...]] = {
    "GR": (("@account", +1, _A), ("grir", -1, _A)),
    "VI": (("grir", +1, _A), ("price_variance", +1, {"variance": 1}), ("ap", -1, {"amount": 1, "variance": 1})),
    "VN": (("@account", +1, _A), ("ap", -1, _A)),
    "VP": (("ap", +1, _A), ("cash", -1, _A)),
    "SH": (("cogs", +1, _A), ("inventory_fg", -1, _A)),
    "CI": (("ar", +1, {"amount": 1, "tax": 1}), ("@account", -1, _A), ("sales_tax", -1, {"tax": 1})),
    "CR": (("cash", +1, _A), ("ar", -1, _A)),
    "WO": (("allowance", +1, _A), ("ar", -1, _A)),
    "AL": (("bad_debt", +1, _A), ("allowance", -1, _A)),
    "TX": (("sales_tax", +1, _A), ("cash", -1, _A)),
    "PR": (("wages", +1, _A), ("payroll_tax_expense", +1, {"tax": 1}),
           ("accrued_payroll", -1, {"amount": 1, "withheld": -1}), ("payroll_tax_payable", -1, {"tax": 1, "withheld": 1})),
    "PN": (("accrued_payroll", +1, _A), ("cash", -1, _A)),
    "PT": (("payroll_tax_payable", +1, _A), ("cash", -1, _A)),
    "DP": (("depreciation", +1, _A), ("accumulated_depreciation", -1, _A)),
    "PA": (("@account", +1, _A), ("prepaid", -1, _A)),
    "AC": (("@account", +1, _A), ("accrued", -1, _A)),
    "RV": (("accrued", +1, _A), ("@account", -1, _A)),
    "MF": (("inventory_fg", +1, _A), ("inventory_raw", -1, _A)),
    "BC": (("bank_charges", +1, _A), ("cash", -1, _A)),
    "BI": (("cash", +1, _A), ("other_income", -1, _A)),
    "RR": (("deferred_revenue", +1, _A), ("revenue_service", -1, _A)),
    "TS": (("@account", +1, _A), ("accrued", -1, _A)),
    "YC": (("@items", +1, _A), ("retained_earnings", -1, _A)),
}


def check_templates(templates: dict = TEMPLATES) -> None:
    """Every template balances for any amounts and touches control accounts only where allowed."""
    for code, lines in templates.items():
        assert code in TYPE and POSTS[TYPE[code]], code
        for f in AMOUNT_FIELDS:
            total = sum(sign * coef.get(f, 0) for _, sign, coef in lines)
            if total != 0:
                raise AssertionError(f"template {code} does not balance in {f}")
        for role, _, _ in lines:
            if role.startswith("@"):
                continue
            a = chart.idx(role)
            if a in chart.CONTROL and code not in chart.CONTROL[a]:
                raise AssertionError(f"template {code} posts control account {chart.ACCOUNTS[a].code}")
    missing = {t.code for t in DOC_TYPES if t.posts} - set(templates)
    assert not missing, missing


check_templates()
_LINES_OF = np.zeros(len(DOC_TYPES), dtype=np.int64)
for _code, _lines in TEMPLATES.items():
    _LINES_OF[TYPE[_code]] = len(_lines)


@dataclass(frozen=True, eq=False)
class Items:
    """Itemised lines of ``@items`` documents: (document, account, signed cents)."""

    doc: np.ndarray
    account: np.ndarray
    value: np.ndarray

    @staticmethod
    def empty() -> "Items":
        z = np.zeros(0, dtype=np.int64)
        return Items(z, z, z)


@dataclass(frozen=True, eq=False)
class Lines:
    """Journal lines: document, line number within its entry, account, signed cents (+ debit)."""

    doc: np.ndarray
    line_no: np.ndarray
    account: np.ndarray
    value: np.ndarray


def entry_order(docs: DocTable, posted: np.ndarray) -> np.ndarray:
    """Ids of the posted documents in the order their entries were recorded (entry time, then id)."""
    ts = docs.entry_date[posted] * 86_400 + docs.entry_time[posted]
    return posted[np.argsort(ts, kind="stable")]


def post(docs: DocTable, order: np.ndarray, items: Items | None = None) -> Lines:
    """Journal lines of the documents ``order`` (already in entry order), grouped by entry."""
    items = items or Items.empty()
    t = docs.type[order]
    if not POSTS[t].all():
        raise ValueError("a non-posting document was sent to the posting engine")
    n_lines = _LINES_OF[t].copy()
    # an @items document has its items plus its other template lines
    item_count = np.bincount(items.doc, minlength=len(docs))[order] if len(items.doc) else np.zeros(len(order), np.int64)
    n_lines += np.where(item_count > 0, item_count - 1, 0)
    start = np.concatenate([[0], np.cumsum(n_lines)[:-1]])
    total = int(n_lines.sum())
    doc = np.repeat(order, n_lines)
    account = np.full(total, -1, dtype=np.int64)
    value = np.zeros(total, dtype=np.int64)
    pos_in_order = np.empty(len(docs), dtype=np.int64)
    pos_in_order[order] = np.arange(len(order))
    for code, lines in TEMPLATES.items():
        rows = np.flatnonzero(t == TYPE[code])
        if not len(rows):
            continue
        ids = order[rows]
        offset = start[rows].copy()
        field = {f: docs.cols[f][ids] for f in {f for _, _, coef in lines for f in coef}}
        for j, (role, sign, coef) in enumerate(lines):
            amt = field["amount"] if coef == _A else sum(c * field[f] for f, c in coef.items())
            if role == "@items":
                sel = np.isin(items.doc, ids)
                ipos = start[pos_in_order[items.doc[sel]]]
                k = _rank_within(items.doc[sel])
                where = ipos + k
                account[where] = items.account[sel]
                value[where] = items.value[sel]
                got = np.bincount(items.doc[sel], weights=None, minlength=len(docs))
                offset = offset + got[ids]
                isum = np.zeros(len(docs), dtype=np.int64)
                np.add.at(isum, items.doc[sel], items.value[sel])
                if not np.array_equal(isum[ids], sign * amt):
                    raise ValueError(f"{code}: itemised lines do not add up to the document amount")
                continue
            if role == "@account":
                acct = docs.account[ids]
                bad = (acct < 0) | np.isin(acct, [a for a, allowed in chart.CONTROL.items() if code not in allowed])
                if bad.any():
                    raise ValueError(f"{code} document {int(ids[np.argmax(bad)])} names a control or no account")
            else:
                acct = chart.idx(role)
            account[offset] = acct
            value[offset] = amt if sign > 0 else -amt
            offset += 1
    keep = value != 0
    doc, account, value = doc[keep], account[keep], value[keep]
    # line numbers restart at 1 in every entry
    first = np.concatenate([[True], doc[1:] != doc[:-1]]) if len(doc) else np.zeros(0, bool)
    pos = np.arange(len(doc))
    line_no = pos - np.maximum.accumulate(np.where(first, pos, 0)) + 1
    return Lines(doc=doc, line_no=line_no.astype(np.int64), account=account, value=value)


def _rank_within(groups: np.ndarray) -> np.ndarray:
    """0, 1, 2 … within runs of equal values (``groups`` sorted)."""
    if not len(groups):
        return groups
    first = np.concatenate([[True], groups[1:] != groups[:-1]])
    pos = np.arange(len(groups))
    return pos - np.maximum.accumulate(np.where(first, pos, 0))


def entry_sums(lines: Lines) -> np.ndarray:
    """Sum of each entry's lines (all zero when the books balance)."""
    if not len(lines.doc):
        return np.zeros(0, dtype=np.int64)
    first = np.flatnonzero(np.concatenate([[True], lines.doc[1:] != lines.doc[:-1]]))
    return np.add.reduceat(lines.value, first)


def templates_markdown() -> str:
    """The posting templates as a Markdown table (docs/books.md carries it verbatim)."""
    from jeval_ray.books.documents import DOC_TYPES

    def expr(coef: dict[str, int]) -> str:
        out: list[str] = []
        for f, c in coef.items():
            out.append((f if c > 0 else f"-{f}") if not out else (f"+ {f}" if c > 0 else f"- {f}"))
        return " ".join(out)

    rows = ["| type | document | debit (sign +) / credit (sign -) lines |", "|---|---|---|"]
    for t in DOC_TYPES:
        if t.code not in TEMPLATES:
            continue
        cells = []
        for role, sign, coef in TEMPLATES[t.code]:
            name = {"@account": "the document's account", "@items": "each profit-and-loss account (its item)"}.get(role)
            if name is None:
                a = chart.ACCOUNTS[chart.idx(role)]
                name = f"{a.code} {a.name}"
            cells.append(f"{'Dr' if sign > 0 else 'Cr'} {name} = {expr(coef)}")
        rows.append(f"| {t.code} | {t.name} | {'; '.join(cells)} |")
    return "\n".join(rows)
