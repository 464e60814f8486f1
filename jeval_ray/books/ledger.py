"""The books: projections of the documents into a ledger, trial balances, subledgers and bank.

``project`` is the single place where documents become books. It takes documents, their journal
lines (from ``posting.post``), the state of the books when the window opens (``Opening``) and a
window of days, and derives everything else: entry numbers, the trial balance per period, the AP
and AR open items and agings, and the bank statements with their reconciliation. The whole year
and a task's slice of it are the same projection with different documents and openings, which
is why a slice's books are consistent on their own.

``Books`` holds the result as numpy arrays and exposes Arrow tables (built on first use).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from jeval_ray.books import _np, assets, chart, close, master as md, posting, prepaids, subledgers
from jeval_ray.books.bank import BankState, Statements, statements
from jeval_ray.books.documents import POSTS, TYPE, TYPE_CODES, DocTable
from jeval_ray.books.wording import render

#: accounts whose opening balance is the sum of the prior-year documents still open (open items)
OPEN_ITEM_ROLES = ("ar", "ap", "grir", "accrued", "accrued_payroll", "payroll_tax_payable", "sales_tax",
                   "deferred_revenue")
ENTRY_NO_BASE = 1_000_000_001
#: business processes and the document types they own (a slice may keep a subset of processes)
PROCESSES = {
    "purchasing": ("PO", "GR", "VI", "VN", "VP"),
    "sales": ("SO", "SH", "CI", "CR", "WO", "RR"),
    "payroll": ("PR", "PN", "PT"),
    "assets": ("DP",),
    "prepaids": ("PA",),
    "accruals": ("AC", "RV"),
    "production": ("MF",),
    "bank": ("BC", "BI"),
    "close": ("AL", "TX", "TS", "YC"),
}
assert sorted(c for v in PROCESSES.values() for c in v) == sorted(TYPE_CODES.tolist())


@dataclass(frozen=True, eq=False)
class Opening:
    """The books when a window opens: balances per account, open AP/AR items, the bank's position."""

    balances: np.ndarray  # cents per account (+ debit)
    ap: tuple[np.ndarray, np.ndarray]  # (invoice ids, open amounts)
    ar: tuple[np.ndarray, np.ndarray]
    bank: BankState


@dataclass(frozen=True, eq=False)
class Books:
    """One company's books over a window of days (the year, or a task's slice of it)."""

    master: md.Master
    docs: DocTable
    lines: posting.Lines  # the window's journal lines, grouped by entry in entry-number order
    entry_no: np.ndarray  # per document: its journal entry number, -1 when it has no entry in the window
    opening: Opening
    start: int
    end: int
    period_ends: np.ndarray  # the days the trial balance, subledgers and bank are struck at
    period_of_line: np.ndarray  # fiscal period of each line (1-12, 13 for the closing entry)
    register: assets.Register
    schedule: prepaids.Schedule
    ap_open: subledgers.OpenItems
    ar_open: subledgers.OpenItems
    bank: Statements
    items: posting.Items
    _arrow: dict = field(default_factory=dict, repr=False, compare=False)

    # ----------------------------------------------------------------------------- numbers
    @property
    def n_entries(self) -> int:
        return int((self.entry_no >= 0).sum())

    def balances_at(self, day: int, include_closing: bool = False) -> np.ndarray:
        """Balance of every account at the end of ``day`` (cents, + debit)."""
        if not include_closing:
            k = np.searchsorted(self.period_ends, day)
            if k < len(self.period_ends) and self.period_ends[k] == day:
                return self.period_end_balances()[k]
        post = self.docs.post_date[self.lines.doc]
        ok = post <= day
        if not include_closing:
            ok &= self.period_of_line != 13
        return self.opening.balances + np.bincount(self.lines.account[ok], weights=self.lines.value[ok],
                                                   minlength=len(chart.ACCOUNTS)).astype(np.int64)

    def period_end_balances(self) -> np.ndarray:
        """Balances (before the closing entry) at each of ``period_ends``: one row per period end."""
        if "period_end_balances" not in self._arrow:
            na = len(chart.ACCOUNTS)
            ok = self.period_of_line != 13
            k = np.searchsorted(self.period_ends, self.docs.post_date[self.lines.doc[ok]])
            mov = np.bincount(k * na + self.lines.account[ok], weights=self.lines.value[ok],
                              minlength=len(self.period_ends) * na).astype(np.int64).reshape(len(self.period_ends), na)
            self._arrow["period_end_balances"] = self.opening.balances + np.cumsum(mov, axis=0)
        return self._arrow["period_end_balances"]

    def trial_balance_cents(self) -> dict[str, np.ndarray]:
        """Per period (rows) and account (columns): opening, debits, credits, closing."""
        periods = _np.unique(self.period_of_line) if len(self.period_of_line) else np.zeros(0, np.int64)
        na = len(chart.ACCOUNTS)
        dr = np.zeros((len(periods), na), dtype=np.int64)
        cr = np.zeros((len(periods), na), dtype=np.int64)
        pi = np.searchsorted(periods, self.period_of_line)
        key = pi * na + self.lines.account
        v = self.lines.value
        dr.ravel()[:] = np.bincount(key, weights=np.where(v > 0, v, 0), minlength=len(periods) * na)
        cr.ravel()[:] = np.bincount(key, weights=np.where(v < 0, -v, 0), minlength=len(periods) * na)
        closing = self.opening.balances + np.cumsum(dr - cr, axis=0)
        opening = np.vstack([self.opening.balances, closing[:-1]]) if len(periods) else closing
        return {"period": periods, "opening": opening, "debit": dr, "credit": cr, "closing": closing}

    def slice(self, start: str | int | None = None, end: str | int | None = None,
              processes: tuple[str, ...] | None = None) -> "Books":
        """The books of a window of days and/or a mix of processes, consistent on their own.

        The slice keeps the documents of the chosen processes posted in the window; its opening
        balances, open items and bank position are the year's at the day before the window.
        """
        s = md.day(start) if isinstance(start, str) else int(start if start is not None else self.start)
        e = md.day(end) if isinstance(end, str) else int(end if end is not None else self.end)
        if not (self.start <= s <= e <= self.end):
            raise ValueError(f"slice window {md.iso(s)}..{md.iso(e)} must lie within {md.iso(self.start)}.."
                             f"{md.iso(self.end)}; pass start/end inside the year")
        unknown = set(processes or ()) - set(PROCESSES)
        if unknown:
            raise ValueError(f"unknown processes {sorted(unknown)}; choose from {sorted(PROCESSES)}")
        codes = [c for p in (processes or tuple(PROCESSES)) for c in PROCESSES[p]]
        keep_doc = np.isin(self.docs.type, [TYPE[c] for c in codes])
        post = self.docs.post_date[self.lines.doc]
        keep = keep_doc[self.lines.doc] & (post >= s) & (post <= e)
        lines = posting.Lines(*(a[keep] for a in (self.lines.doc, self.lines.line_no, self.lines.account, self.lines.value)))
        return project(self.master, self.docs, lines, self.opening_at(s), s, e, self.register, self.schedule,
                       self.items, period_of_line=self.period_of_line[keep], entry_no=self.entry_no)

    def opening_at(self, s: int) -> Opening:
        """The state of these books at the start of day ``s``."""
        if s == self.start:
            return self.opening
        bal = self.balances_at(s - 1)
        ap = self.open_items_at("ap", s - 1)
        ar = self.open_items_at("ar", s - 1)
        v = self.bank
        before = v.line_value_date <= s - 1
        balance = int(self.opening.bank.balance + v.line_amount[before].sum())
        cash_docs, cash_amt = self.cash_documents()
        posted = self.docs.post_date[cash_docs] <= s - 1
        pend_all = np.concatenate([self.opening.bank.pending, cash_docs[posted]])
        amt_all = np.concatenate([self.opening.bank.pending_amount, cash_amt[posted]])
        still = self.docs.value_date[pend_all] >= s
        return Opening(bal, ap, ar, BankState(balance, pend_all[still], amt_all[still]))

    def open_items_at(self, side: str, day: int) -> tuple[np.ndarray, np.ndarray]:
        base = self.opening.ap if side == "ap" else self.opening.ar
        sel = _np.grouped_unique(self.lines.doc[self.docs.post_date[self.lines.doc] <= day])
        oi = subledgers.open_at(self.docs, side, sel, np.array([day]), base)
        return oi.item, oi.amount

    def cash_documents(self) -> tuple[np.ndarray, np.ndarray]:
        """The window's documents that move cash, with their signed effect (+ money in)."""
        on_cash = self.lines.account == chart.idx("cash")
        return self.lines.doc[on_cash], self.lines.value[on_cash]

    # ----------------------------------------------------------------------------- perturbation
    def perturb(self, add: dict | None = None, replace: dict[int, dict] | None = None) -> "Books":
        """New books with documents added or changed, re-projected through the same engine.

        ``add``: columns of new documents (``type`` as codes such as ``"VN"``, other columns as in
        ``documents.COLUMNS``; omitted columns default as in ``DocBuilder.add``); they get the ids
        ``len(self.docs)`` onwards, in order. ``replace``: ``{document id: {column: value}}``.
        Everything downstream (entries and their numbers, the closing entry, trial balances,
        subledgers, bank) is derived again, so a planted defect leaves the traces a real one would
        and breaks only the invariants it breaks. Perturb the year, then slice it.
        """
        from jeval_ray.books.documents import COLUMNS, DocBuilder

        if (self.start, self.end) != (md.YEAR_START, md.YEAR_END):
            raise ValueError("perturb the year's books, then take a slice of the result")
        cols = {c: a.copy() for c, a in self.docs.cols.items()}
        for i, changes in (replace or {}).items():
            for c, v in changes.items():
                if c not in cols:
                    raise KeyError(f"unknown document column {c!r}; columns are {COLUMNS}")
                cols[c][int(i)] = TYPE[v] if c == "type" else int(v)
        if add:
            codes = list(np.atleast_1d(add["type"]))
            b = DocBuilder()
            for k, code in enumerate(codes):
                b.add(str(code), 1, **{c: np.atleast_1d(v)[k] for c, v in add.items() if c != "type"})
            new = b.freeze()
            cols = {c: np.concatenate([cols[c], new.cols[c]]) for c in COLUMNS}
        docs = DocTable(cols)
        if ((docs.post_date < self.start) & (docs.post_date >= 0)).sum() != ((self.docs.post_date < self.start)
                                                                          & (self.docs.post_date >= 0)).sum():
            raise ValueError("a perturbation may not post into the prior year (the opening balances are fixed)")
        _, year = post_year(docs, self.start, self.end)
        docs, year, items = with_closing_entry(docs, year)
        return project(self.master, docs, year, self.opening, self.start, self.end, self.register, self.schedule,
                       items)

    # ----------------------------------------------------------------------------- documents
    def document(self, i: int) -> dict:
        """Document ``i`` worded as a support-pack item (see ``wording.render``)."""
        return render(self, int(i))

    # ----------------------------------------------------------------------------- Arrow tables
    def _cached(self, name: str, build) -> pa.Table:
        if name not in self._arrow:
            self._arrow[name] = build()
        return self._arrow[name]

    @property
    def journal(self) -> pa.Table:
        from jeval_ray.books import tables

        return self._cached("journal", lambda: tables.journal(self))

    @property
    def documents(self) -> pa.Table:
        from jeval_ray.books import tables

        return self._cached("documents", lambda: tables.documents(self))

    @property
    def trial_balance(self) -> pa.Table:
        from jeval_ray.books import tables

        return self._cached("trial_balance", lambda: tables.trial_balance(self))

    def master_tables(self) -> dict[str, pa.Table]:
        from jeval_ray.books import tables

        return self._cached("master", lambda: tables.master_tables(self))

    def subledger_tables(self) -> dict[str, pa.Table]:
        from jeval_ray.books import tables

        return self._cached("subledgers", lambda: tables.subledger_tables(self))

    def bank_tables(self) -> dict[str, pa.Table]:
        from jeval_ray.books import tables

        return self._cached("bank", lambda: tables.bank_tables(self))

    def fingerprint(self) -> str:
        """sha256 of every table's Arrow IPC bytes: equal books give equal fingerprints in any process."""
        h = hashlib.sha256()
        for name, t in sorted(self.tables().items()):
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, t.schema) as w:
                w.write_table(t)
            h.update(name.encode())
            h.update(sink.getvalue().to_pybytes())
        return h.hexdigest()

    def tables(self) -> dict[str, pa.Table]:
        """Every table of the books by name (journal, documents, trial balance, master, subledgers, bank)."""
        out = {"journal": self.journal, "documents": self.documents, "trial_balance": self.trial_balance}
        out.update(self.master_tables())
        out.update(self.subledger_tables())
        out.update(self.bank_tables())
        return out


def window_period_ends(start: int, end: int) -> np.ndarray:
    ends = md.MONTH_ENDS[(md.MONTH_ENDS >= start) & (md.MONTH_ENDS <= end)]
    if not len(ends) or ends[-1] != end:
        ends = np.append(ends, end)
    return ends.astype(np.int64)


def project(master: md.Master, docs: DocTable, lines: posting.Lines, opening: Opening, start: int, end: int,
            register: assets.Register, schedule: prepaids.Schedule, items: posting.Items, *,
            period_of_line: np.ndarray | None = None, entry_no: np.ndarray | None = None) -> Books:
    """Derive the books of the window ``[start, end]`` from documents, lines and an opening state."""
    if period_of_line is None:
        period_of_line = md.month_of(docs.post_date[lines.doc])
        period_of_line = np.where(docs.type[lines.doc] == TYPE["YC"], 13, period_of_line)
    if entry_no is None:
        first = np.concatenate([[True], lines.doc[1:] != lines.doc[:-1]]) if len(lines.doc) else np.zeros(0, bool)
        entry_no = np.full(len(docs), -1, dtype=np.int64)
        entry_no[lines.doc[first]] = ENTRY_NO_BASE + np.arange(int(first.sum()))
    else:
        kept = np.zeros(len(docs), dtype=bool)
        kept[lines.doc] = True
        entry_no = np.where(kept, entry_no, -1)
    ends = window_period_ends(start, end)
    selected = _np.grouped_unique(lines.doc)
    ap_open = subledgers.open_at(docs, "ap", selected, ends, opening.ap)
    ar_open = subledgers.open_at(docs, "ar", selected, ends, opening.ar)
    on_cash = lines.account == chart.idx("cash")
    bank = statements(docs, lines.doc[on_cash], lines.value[on_cash], opening.bank, ends, start)
    return Books(master=master, docs=docs, lines=lines, entry_no=entry_no, opening=opening, start=start, end=end,
                 period_ends=ends, period_of_line=period_of_line.astype(np.int64), register=register,
                 schedule=schedule, ap_open=ap_open, ar_open=ar_open, bank=bank, items=items)


def post_year(docs: DocTable, start: int = md.YEAR_START, end: int = md.YEAR_END) -> tuple[posting.Lines, posting.Lines]:
    """Post every document up to ``end``: (lines before ``start``, lines of the window)."""
    posted = np.flatnonzero(POSTS[docs.type] & (docs.post_date <= end) & (docs.post_date >= 0)
                            & (docs.type != TYPE["YC"]))
    prior = posted[docs.post_date[posted] < start]
    year = posted[docs.post_date[posted] >= start]
    return (posting.post(docs, posting.entry_order(docs, prior)),
            posting.post(docs, posting.entry_order(docs, year)))


def with_closing_entry(docs: DocTable, lines: posting.Lines) -> tuple[DocTable, posting.Lines, posting.Items]:
    """Append the year-end closing document and its entry (recorded last) to the year's books."""
    acct, values = close.closing_items(lines.account, lines.value)
    yc = int(docs.of("YC")[0])
    amount = docs.amount.copy()
    amount[yc] = int(values.sum())
    docs2 = docs.replace(amount=amount)
    items = posting.Items(doc=np.full(len(acct), yc, dtype=np.int64), account=acct.astype(np.int64), value=values)
    yl = posting.post(docs2, np.array([yc]), items)
    return docs2, posting.Lines(*(np.concatenate([a, b]) for a, b in
                                  ((lines.doc, yl.doc), (lines.line_no, yl.line_no), (lines.account, yl.account),
                                   (lines.value, yl.value)))), items


