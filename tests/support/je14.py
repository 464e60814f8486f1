"""Readers of a JE-14 world as the agent sees it (the ledger, the calendar, the release memos and
aging reports), shared by the task's tests and its key audit."""

from __future__ import annotations

import re


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


def shortfall(w, memo_id: str, report_id: str) -> tuple[float, float, float, float]:
    """(held, open amount of the covered invoices at the period end, release, shortfall) from the documents."""
    held, inv, release = memo_terms(w, memo_id)
    still = open_items(w, report_id)
    required = round(sum(still.get(i, 0.0) for i in inv), 2)
    return held, required, release, round(required - (held - release), 2)
