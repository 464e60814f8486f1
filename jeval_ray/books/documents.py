"""Documents, the source of truth of the books.

Every business event is a document: a purchase order, a goods receipt, a vendor invoice, a
payment, a payroll journal, an accrual … Journal lines, open items, agings and bank lines are
*projections* of documents (``posting.py``, ``subledgers.py``, ``bank.py``); nothing is stored
twice. A document has an id (a counter, in the order the processes create them), a type, dates
(document, posting, entry and, for cash, the bank's value date), a partner, amounts in integer
cents, the account it names where its type leaves the account open (a vendor invoice's cost
account), the people who prepared and approved it, and its parent: a goods receipt's purchase
order, a payment's invoice, a reversal's accrual. Clearing is that parent link with an amount.

``DocBuilder`` collects blocks of documents from the processes as numpy columns (whole chains
at once) and freezes them into a ``DocTable``. ``render`` words a document as a text body that
agrees with its entry (amounts, dates, partner, approver).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from jeval_ray.books import master as md
from jeval_ray.books.chart import ACCOUNTS


@dataclass(frozen=True)
class DocType:
    code: str
    name: str
    partner: str  # vendor | customer | "" (none)
    source: str  # manual | automated (how its journal entry is recorded)
    posts: bool  # whether it posts a journal entry


DOC_TYPES: tuple[DocType, ...] = (
    DocType("PO", "purchase order", "vendor", "manual", False),
    DocType("GR", "goods receipt", "vendor", "automated", True),
    DocType("VI", "vendor invoice (matched to goods receipt)", "vendor", "manual", True),
    DocType("VN", "vendor invoice (no goods receipt)", "vendor", "manual", True),
    DocType("VP", "vendor payment", "vendor", "automated", True),
    DocType("SO", "sales order", "customer", "automated", False),
    DocType("SH", "shipment", "customer", "automated", True),
    DocType("CI", "customer invoice", "customer", "automated", True),
    DocType("CR", "customer receipt", "customer", "automated", True),
    DocType("WO", "receivable write-off", "customer", "manual", True),
    DocType("AL", "allowance adjustment", "customer", "manual", True),
    DocType("TX", "sales tax remittance", "", "manual", True),
    DocType("PR", "payroll journal", "", "automated", True),
    DocType("PN", "net pay transfer", "", "automated", True),
    DocType("PT", "payroll tax deposit", "", "automated", True),
    DocType("DP", "depreciation run", "", "automated", True),
    DocType("PA", "prepaid amortisation", "vendor", "automated", True),
    DocType("AC", "month-end accrual", "vendor", "manual", True),
    DocType("RV", "accrual reversal", "vendor", "automated", True),
    DocType("MF", "production issue", "", "automated", True),
    DocType("BC", "bank charges", "", "manual", True),
    DocType("BI", "bank interest", "", "manual", True),
    DocType("RR", "deferred revenue release", "customer", "automated", True),
    DocType("TS", "top-side adjustment", "", "manual", True),
    DocType("YC", "year-end closing entry", "", "automated", True),
)
TYPE = {t.code: i for i, t in enumerate(DOC_TYPES)}
TYPE_CODES = np.array([t.code for t in DOC_TYPES])
POSTS = np.array([t.posts for t in DOC_TYPES])
MANUAL = np.array([t.source == "manual" for t in DOC_TYPES])
PARTNER_KIND = np.array([t.partner for t in DOC_TYPES])

#: the integer columns every document has (-1 where a column does not apply)
COLUMNS = ("type", "doc_date", "post_date", "entry_date", "entry_time", "value_date", "due_date", "partner",
           "amount", "tax", "variance", "withheld", "account", "quantity", "preparer", "approver", "approved_on",
           "parent", "ext_ref", "service_month", "year_end")
_DEFAULT = {"amount": 0, "tax": 0, "variance": 0, "withheld": 0, "quantity": 0, "year_end": 0}


class DocBuilder:
    """Collects document blocks; ids are counters in creation order."""

    def __init__(self):
        self._blocks: list[tuple[int, int, dict]] = []
        self.n = 0

    def add(self, code: str, n: int, **cols) -> np.ndarray:
        """Add ``n`` documents of type ``code``; returns their ids. Unknown columns fail loudly.

        A column may be one value for the whole block; blocks are laid out only by ``freeze``."""
        bad = set(cols) - set(COLUMNS)
        if bad:
            raise KeyError(f"unknown document columns {sorted(bad)}")
        block: dict[str, object] = {"type": TYPE[code]}
        for c in COLUMNS[1:]:
            v = cols.get(c, _DEFAULT.get(c, -1))
            if isinstance(v, (np.ndarray, list, tuple)):
                v = np.asarray(v, dtype=np.int64)
                if v.ndim == 0:
                    v = int(v)
                elif len(v) != n:
                    raise ValueError(f"column {c} of {code} has {len(v)} values for {n} documents")
            else:
                v = int(v)
            block[c] = v
        ids = np.arange(self.n, self.n + n, dtype=np.int64)
        self._blocks.append((self.n, self.n + n, block))
        self.n += n
        return ids

    def freeze(self, columns: tuple[str, ...] = COLUMNS) -> "DocTable":
        """The documents so far; ``columns`` picks a few columns for a cheap look mid-simulation."""
        out = {}
        for c in columns:
            a = np.empty(self.n, dtype=np.int64)
            for lo, hi, block in self._blocks:
                a[lo:hi] = block[c]
            out[c] = a
        return DocTable(out)


class DocTable:
    """Frozen documents as integer columns; ``d.amount[i]`` is document ``i``'s amount."""

    def __init__(self, cols: dict[str, np.ndarray]):
        self.cols = cols
        for c, a in cols.items():
            a.setflags(write=False)
            setattr(self, c, a)

    def __len__(self) -> int:
        return len(self.cols["type"])

    def of(self, code: str) -> np.ndarray:
        """Ids of the documents of one type."""
        return np.flatnonzero(self.cols["type"] == TYPE[code])

    def take(self, ids: np.ndarray) -> "DocTable":
        return DocTable({c: a[ids] for c, a in self.cols.items()})

    def replace(self, **cols) -> "DocTable":
        new = dict(self.cols)
        new.update({c: np.asarray(v, dtype=np.int64) for c, v in cols.items()})
        return DocTable(new)

    def gross(self) -> np.ndarray:
        """What the partner owes or is owed: invoice amount plus tax and price variance."""
        return self.cols["amount"] + self.cols["tax"] + self.cols["variance"]


def doc_number(code: str, i: int) -> str:
    """The printed number of document ``i`` (e.g. ``VI-0001234``)."""
    return f"{code}-{int(i):07d}"


def _money(cents: int) -> str:
    return f"USD {cents / 100:,.2f}"


def _purpose(code: str, ext_ref: int) -> str:
    """What a close document is for (top-side adjustments, allowance parts, tax returns by state)."""
    from jeval_ray.books import close, sales

    words = {"TS": [p for p, _ in close.TOP_SIDE], "AL": list(close.ALLOWANCE_PARTS), "TX": list(sales.STATES)}.get(code)
    if words is None or not 0 <= ext_ref < len(words):
        return ""
    return words[ext_ref] if code != "TX" else f"sales tax return, {words[ext_ref]}"


def render(books, i: int) -> dict:
    """A document as a support-pack item: id, type, title, date and a body worded from its fields.

    Every figure, date, partner and person in the body is the document's own, so the body agrees
    with the journal entry it supports; approvals are dated on or after the document they approve.
    """
    d = books.docs
    m = books.master
    code = str(TYPE_CODES[d.type[i]])
    num = doc_number(code, i)
    kind = PARTNER_KIND[d.type[i]]
    p = int(d.partner[i])
    partner = (m.vendor_name[p] if kind == "vendor" else m.customer_name[p]) if p >= 0 else ""
    pid = (m.vendor_id(p) if kind == "vendor" else m.customer_id(p)) if p >= 0 else ""
    parent = doc_number(str(TYPE_CODES[d.type[d.parent[i]]]), d.parent[i]) if d.parent[i] >= 0 else ""
    date = md.iso(d.doc_date[i])
    lines = [f"{DOC_TYPES[d.type[i]].name.capitalize()} {num}", f"Document date: {date}"]
    if d.post_date[i] >= 0 and POSTS[d.type[i]]:
        lines.append(f"Posting date: {md.iso(d.post_date[i])}")
    if partner:
        lines.append(f"{'Vendor' if kind == 'vendor' else 'Customer'}: {partner} ({pid})")
    if parent:
        lines.append(f"Reference document: {parent}")
    if d.ext_ref[i] >= 0 and code in ("VI", "VN"):
        lines.append(f"Vendor invoice number: {int(d.ext_ref[i])}")
    if d.quantity[i] > 0:
        lines.append(f"Quantity: {int(d.quantity[i]):,} units")
    if d.account[i] >= 0 and code not in ("YC",):
        a = ACCOUNTS[int(d.account[i])]
        lines.append(f"Account: {a.code} {a.name}")
    purpose = _purpose(code, int(d.ext_ref[i]))
    if purpose:
        lines.append(f"Purpose: {purpose}")
    if d.service_month[i] > 0:
        y, mo = divmod(int(d.service_month[i]), 100)
        lines.append(f"For: {md.MONTH_NAMES[mo - 1]} {y}")
    amt, tax, var, wh = (int(d.amount[i]), int(d.tax[i]), int(d.variance[i]), int(d.withheld[i]))
    if code == "VI":
        lines.append(f"Goods received value at order price: {_money(amt)}; price difference: {_money(var)}; "
                     f"invoice total: {_money(amt + var)}")
    elif code == "CI":
        lines.append(f"Net: {_money(amt)}; sales tax: {_money(tax)}; total due: {_money(amt + tax)}")
    elif code == "PR":
        lines.append(f"Gross wages: {_money(amt)}; employer payroll taxes: {_money(tax)}; employee withholdings: "
                     f"{_money(wh)}; net pay: {_money(amt - wh)}; total payroll cost: {_money(amt + tax)}")
    elif code == "YC":
        lines.append(f"Net result closed to retained earnings: {_money(amt)} ({'profit' if amt > 0 else 'loss'})")
    else:
        lines.append(f"Amount: {_money(amt)}" + (" (a release)" if amt < 0 and code == "AL" else ""))
    if d.due_date[i] >= 0:
        lines.append(f"Due date: {md.iso(d.due_date[i])}")
    if d.value_date[i] >= 0:
        lines.append(f"Bank value date: {md.iso(d.value_date[i])} ({md.BANK_NAME}, account {md.BANK_ACCOUNT})")
    prep = md.USERS[int(d.preparer[i])]
    lines.append(f"Prepared by: {prep.name} ({prep.user_id})")
    if d.approver[i] >= 0:
        a = md.USERS[int(d.approver[i])]
        lines.append(f"Approved by: {a.name} ({a.user_id}, {a.role}) on {md.iso(d.approved_on[i])}")
    title = f"{DOC_TYPES[d.type[i]].name.capitalize()} {num}" + (f" - {partner}" if partner else "")
    return {"doc_id": num, "doc_type": DOC_TYPES[d.type[i]].name, "title": title, "date": date, "body": "\n".join(lines)}
