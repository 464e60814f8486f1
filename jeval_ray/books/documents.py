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
at once) and freezes them into a ``DocTable``. How a document reads (its text body) is
``jeval_ray.books.wording``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np



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
