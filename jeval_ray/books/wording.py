"""How a document reads: ``render`` words a document as a text body that agrees with its entry
(amounts, dates, partner, approver).

It reads the close's and the sales process's vocabularies (top-side purposes, allowance parts,
states), so it sits above them and above ``documents`` (which every process builds on).
"""

from __future__ import annotations

from jeval_ray.books import close, master as md, sales
from jeval_ray.books.chart import ACCOUNTS
from jeval_ray.books.documents import DOC_TYPES, PARTNER_KIND, POSTS, TYPE_CODES, doc_number


def _money(cents: int) -> str:
    return f"USD {cents / 100:,.2f}"


def _purpose(code: str, ext_ref: int) -> str:
    """What a close document is for (top-side adjustments, allowance parts, tax returns by state)."""
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


__all__ = ["render"]
