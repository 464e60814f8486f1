"""Readers of a JE-14 world as the agent sees it (the ledger, the calendar, the release memos, the aging
report and the receipts listing), shared by the task's tests and its key audit. They read the text
with their own expressions, not the task's forms."""

from __future__ import annotations

import re

RECEIPTS_TITLE = re.compile(r"Cash receipts after the year end (\d{4}-\d\d-\d\d) to (\d{4}-\d\d-\d\d) ")


def entries(w) -> dict[str, dict]:
    """Entry headers with their main debit and credit accounts and amount."""
    out: dict[str, dict] = {}
    for r in w.ledger.to_pylist():
        e = out.setdefault(r["entry_id"], {**r, "dr": None, "cr": None, "amount": 0.0})
        if r["debit"]:
            e["dr"], e["amount"] = r["account"], e["amount"] + r["debit"]
        if r["credit"]:
            e["cr"] = r["account"]
    return out


def closes(w) -> dict[str, str]:
    cal = w.master["calendar"].to_pylist()
    return {r["description"].split()[-1]: r["date"] for r in cal if r["kind"] == "period_close"}


def after_close(e: dict, close: dict[str, str]) -> bool:
    return e["entry_timestamp"].date().isoformat() > close[e["posting_date"].isoformat()[:7]]


def memo_terms(w, memo_id: str) -> tuple[float, list[str], float]:
    """(reserve held, invoices covered, release) as the release memo states them."""
    body = w.document(memo_id).body
    held = float(re.search(r"held before this entry: USD ([\d,]+\.\d\d)", body).group(1).replace(",", ""))
    inv = [s.strip() for s in re.search(r"disputed invoices ([A-Z0-9\-, ]+) \(provided by", body).group(1).split(",")]
    release = float(re.search(r"releases USD ([\d,]+\.\d\d)", body).group(1).replace(",", ""))
    return held, inv, release


def open_items(w, report_id: str) -> dict[str, float]:
    out = {}
    for line in w.document(report_id).body.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 6 and re.fullmatch(r"CI-\d+", cells[0]):
            out[cells[0]] = float(cells[5].replace(",", ""))
    return out


def receipts_doc(w):
    """The receipts listing (the one document titled as such)."""
    docs = [d for d in w.documents if RECEIPTS_TITLE.match(d.title)]
    assert len(docs) == 1, [d.title for d in docs]
    return docs[0]


def fieldwork_window(w) -> tuple[str, str]:
    """(first day, end of fieldwork) of the receipts listing, from its title."""
    m = RECEIPTS_TITLE.match(receipts_doc(w).title)
    return m.group(1), m.group(2)


def receipts(w) -> list[tuple[str, str, str, str, float]]:
    """(receipt, date, customer, invoice, amount) of every line of the receipts listing."""
    out = []
    for line in receipts_doc(w).body.splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 5 and re.fullmatch(r"CR-\d+", cells[0]):
            out.append((cells[0], cells[1], cells[2], cells[3], float(cells[4].replace(",", ""))))
    return out


def shortfall(w, memo_id: str, report_id: str) -> tuple[float, float, float, float, float, float]:
    """(held, open amount of the covered invoices at the period end, received on them after it up to the
    end of fieldwork, unpaid, release, shortfall) from the documents."""
    held, inv, release = memo_terms(w, memo_id)
    still = open_items(w, report_id)
    period_end = w.document(report_id).date
    required = round(sum(still.get(i, 0.0) for i in inv), 2)
    got = round(sum(a for _r, d, _c, i, a in receipts(w) if i in inv and i in still and d > period_end), 2)
    unpaid = round(required - got, 2)
    return held, required, got, unpaid, release, round(unpaid - (held - release), 2)
