"""Arrow tables of the books: what a tool shows (journal, documents, master data, subledgers, bank).

The journal has the columns of the current world ledger (``entry_id`` … ``vendor_id``) plus the
document it comes from, its parent, the customer, the fiscal period and exact amounts in cents.
Strings are built in Arrow, per document type, once per entry; per-line string columns are
dictionary-encoded over those per-entry strings (repeating an entry's text on its lines costs
nothing), and low-cardinality columns (accounts, users, partners, types) are dictionary-encoded
too. ``plain(table)`` casts every dictionary column to plain strings for a consumer that wants them.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from jeval_ray.books import _np, chart, close, master as md, sales, subledgers
from jeval_ray.books.assets import FIRST_MONTH
from jeval_ray.books.documents import DOC_TYPES, MANUAL, PARTNER_KIND, POSTS, TYPE, TYPE_CODES

# description of each document type's entry: literal text and {field} names
DESCRIPTIONS = {
    "GR": "Goods receipt {num} PO {parent} {partner}",
    "VI": "Invoice {ext} {partner} PO {parent}",
    "VN": "Invoice {ext} {partner} - {what}",
    "VP": "Payment run {partner} invoice {parent}",
    "SH": "Goods issue {num} order {parent} {partner}",
    "CI": "Billing {num} {partner} ref {parent}",
    "CR": "Customer receipt {partner} invoice {parent}",
    "WO": "Write-off uncollectible invoice {parent} {partner}",
    "AL": "Allowance for doubtful accounts {what} {month} {partner}",
    "TX": "Sales tax return {what} {month}",
    "PR": "Payroll {month} pay date {post}",
    "PN": "Net pay transfer payroll {parent}",
    "PT": "Payroll tax deposit payroll {parent}",
    "DP": "Depreciation run {month}",
    "PA": "Prepaid insurance amortisation {month} {partner}",
    "AC": "Accrual {month} {what} {partner}",
    "RV": "Reversal of accrual {parent} {month} {partner}",
    "MF": "Production issue raw materials to finished goods {month}",
    "BC": "Bank charges {month}",
    "BI": "Bank interest {month}",
    "RR": "Deferred revenue release {month} {partner}",
    "TS": "{what}",
    "YC": "Year-end closing FY2025 to retained earnings",
}
_FIELD = re.compile(r"(\{\w+\})")


def _dict_strings(codes: np.ndarray, values: list[str]) -> pa.Array:
    """Dictionary-encoded strings: ``values[codes]`` without materialising a string per row."""
    return pa.DictionaryArray.from_arrays(pa.array(np.asarray(codes).astype(np.int32)), pa.array(values, pa.string()))


def _plain(codes: np.ndarray, values: list[str]) -> pa.Array:
    """``values[codes]`` as plain strings."""
    return pa.array(values, pa.string()).take(pa.array(np.asarray(codes).astype(np.int32)))


def plain(table: pa.Table) -> pa.Table:
    """The table with every dictionary-encoded column cast to its value type."""
    cols = [c.cast(c.type.value_type) if pa.types.is_dictionary(c.type) else c for c in table.columns]
    return pa.table(cols, names=table.column_names)


def doc_numbers(docs, ids: np.ndarray) -> pa.Array:
    """``VI-0001234`` for each id (empty string for -1)."""
    ids = np.asarray(ids)
    ok = ids >= 0
    safe = np.where(ok, ids, 0)
    prefix = _plain(docs.type[safe], [f"{c}-" for c in TYPE_CODES])
    num = pc.utf8_lpad(pa.array(safe).cast(pa.string()), 7, "0")
    out = pc.binary_join_element_wise(prefix, num, "")
    return pc.if_else(pa.array(ok), out, pa.scalar(""))


def _partner_values(books, kind: str, what: str) -> list[str]:
    m = books.master
    if kind == "any":
        return [""] + _partner_values(books, "vendor", what)[1:] + _partner_values(books, "customer", what)[1:]
    if what == "name":
        return [""] + (m.vendor_name if kind == "vendor" else m.customer_name)
    n = m.n_vendors if kind == "vendor" else m.n_customers
    return [""] + [m.vendor_id(i) if kind == "vendor" else m.customer_id(i) for i in range(n)]


def _partner_codes(books, ids: np.ndarray, kind: str) -> np.ndarray:
    """Index into ``_partner_values`` (0 = none) of each document's partner."""
    d = books.docs
    p = d.partner[ids]
    k = PARTNER_KIND[d.type[ids]]
    if kind == "any":
        nv = books.master.n_vendors
        return np.where(p < 0, 0, np.where(k == "vendor", p + 1, np.where(k == "customer", nv + p + 1, 0)))
    return np.where((k == kind) & (p >= 0), p + 1, 0)


def _partner(books, ids: np.ndarray, kind: str, what: str = "name", dictionary: bool = True) -> pa.Array:
    make = _dict_strings if dictionary else _plain
    return make(_partner_codes(books, ids, kind), _partner_values(books, kind, what))


def _month_text(codes: np.ndarray, dictionary: bool = False) -> pa.Array:
    u, inv = _np.unique_inverse(codes)
    words = [f"{md.MONTH_NAMES[c % 100 - 1]} {c // 100}" if c > 0 else "" for c in u.tolist()]
    return (_dict_strings if dictionary else _plain)(inv, words)


def _what(books, ids: np.ndarray) -> pa.Array:
    d = books.docs
    acct = d.account[ids]
    text = _plain(np.maximum(acct, 0), [a.name.lower() for a in chart.ACCOUNTS])
    t = d.type[ids]
    ext = d.ext_ref[ids]
    specials = [
        (t == TYPE["TS"], [p for p, _ in close.TOP_SIDE]),
        (t == TYPE["AL"], list(close.ALLOWANCE_PARTS)),
        (t == TYPE["TX"], list(sales.STATES)),
    ]
    for mask, words in specials:
        if mask.any():
            text = pc.if_else(pa.array(mask), _plain(np.clip(ext, 0, len(words) - 1), words), text)
    return text


def _field_makers(books) -> dict:
    """The ``{field}`` values of ``DESCRIPTIONS``: a function of document ids per field, each a plain string array."""
    d = books.docs
    return {
        "num": lambda x: doc_numbers(d, x),
        "parent": lambda x: doc_numbers(d, d.parent[x]),
        "partner": lambda x: _partner(books, x, "any", dictionary=False),
        "ext": lambda x: pa.array(d.ext_ref[x]).cast(pa.string()),
        "month": lambda x: _month_text(np.where(d.service_month[x] > 0, d.service_month[x],
                                                md.fiscal_month_code(np.maximum(d.post_date[x], 0)))),
        "post": lambda x: pa.array(d.post_date[x].astype("datetime64[D]")).cast(pa.string()),
        "what": lambda x: _what(books, x),
    }


_FIELDS = ["num", "parent", "partner", "ext", "month", "post", "what"]


def _template_slots() -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """``DESCRIPTIONS`` as slots: (fields, field of slot j of type k or -1, literal of slot j of type
    k (an index into the literals, ``""`` first), whether type k's text is trimmed)."""
    literals = [""]
    parts = {TYPE[code]: [p for p in _FIELD.split(text) if p] for code, text in DESCRIPTIONS.items()}
    width = max(len(p) for p in parts.values())
    field = np.full((width, len(TYPE_CODES)), -1, dtype=np.int64)
    literal = np.zeros((width, len(TYPE_CODES)), dtype=np.int64)
    for k, ps in parts.items():
        for j, p in enumerate(ps):
            if p.startswith("{"):
                field[j, k] = _FIELDS.index(p[1:-1])
            else:
                if p not in literals:
                    literals.append(p)
                literal[j, k] = literals.index(p)
    trim = np.zeros(len(TYPE_CODES), dtype=bool)
    for code, text in DESCRIPTIONS.items():
        trim[TYPE[code]] = "{partner}" in text or "{what}" in text
    return literals, field, literal, trim


_LITERALS, _SLOT_FIELD, _SLOT_LITERAL, _TRIM = _template_slots()


#: from this many documents on, ``descriptions`` builds texts per document type (below, per slot):
#: per slot is 3.5x faster for a 400-entry year, even at 20,000 entries and 2.4x slower for a million
#: (``python bench/bench_env.py --descriptions``, bench/RESULTS.md)
BY_TYPE_FROM = 20_000


def descriptions(books, ids: np.ndarray) -> pa.Array:
    """The entry text of each document in ``ids``, worded from its own fields (``DESCRIPTIONS``).
    Two ways to the same texts, chosen by size (``tests/test_books_documents.py`` compares them)."""
    ids = np.asarray(ids)
    if not len(ids):
        return pa.array([], pa.string())
    return (_descriptions_by_type if len(ids) >= BY_TYPE_FROM else _descriptions_by_slot)(books, ids)


def _descriptions_by_slot(books, ids: np.ndarray) -> pa.Array:
    """``descriptions`` for few documents. Each field (document number, parent, partner …) is
    computed once for the documents whose text uses it, and slot ``j`` of every text (a literal
    or a field) is one take from the literals and those fields; the slots are then joined: a
    fixed number of Arrow calls whatever the mix of document types."""
    n = len(ids)
    make = _field_makers(books)
    t = books.docs.type[ids]
    slot_field = _SLOT_FIELD[:, t]  # (slots, n)
    pool = [pa.array(_LITERALS, pa.string())]
    offset = len(_LITERALS)
    pos = np.zeros((len(_FIELDS), n), dtype=np.int64)  # where row i's value of each field sits in the pool
    for f, name in enumerate(_FIELDS):
        rows = np.flatnonzero((slot_field == f).any(axis=0))
        if len(rows):
            pool.append(make[name](ids[rows]))
            pos[f, rows] = offset + np.arange(len(rows))
            offset += len(rows)
    values = pa.concat_arrays(pool)
    cols = np.arange(n)
    slots = [values.take(pa.array(np.where(slot_field[j] >= 0, pos[np.maximum(slot_field[j], 0), cols],
                                           _SLOT_LITERAL[j, t])))
             for j in range(len(_SLOT_FIELD))]
    joined = pc.binary_join_element_wise(*slots, "")
    trim = _TRIM[t]
    if not trim.any():
        return joined
    return pc.if_else(pa.array(trim), pc.utf8_trim_whitespace(joined), joined)


def _descriptions_by_type(books, ids: np.ndarray) -> pa.Array:
    """``descriptions`` for many documents: each type's texts joined from its own fields, then put
    back in order (fewer values moved than taking every slot of every text)."""
    d = books.docs
    n = len(ids)
    fields = _field_makers(books)
    t = d.type[ids]
    order = np.argsort(t, kind="stable")
    ts = t[order]
    chunks = []
    for code, text in DESCRIPTIONS.items():
        k = TYPE[code]
        lo, hi = np.searchsorted(ts, k, "left"), np.searchsorted(ts, k, "right")
        if lo == hi:
            continue
        group = ids[order[lo:hi]]
        parts = [fields[p[1:-1]](group) if p.startswith("{") else pa.scalar(p) for p in _FIELD.split(text) if p]
        if len(parts) == 1:
            joined = parts[0] if isinstance(parts[0], pa.Array) else pa.array([parts[0].as_py()] * (hi - lo), pa.string())
        else:
            joined = pc.binary_join_element_wise(*parts, "")
        chunks.append(pc.utf8_trim_whitespace(joined) if "{partner}" in text or "{what}" in text else joined)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.arange(n)
    return pa.concat_arrays(chunks).take(pa.array(inverse))


def _dates(days: np.ndarray) -> pa.Array:
    days = np.asarray(days)
    return pa.array(days.astype("datetime64[D]"), pa.date32(), mask=days < 0)


def _users(idx: np.ndarray) -> pa.Array:
    return _dict_strings(np.asarray(idx) + 1, [""] + md.USER_IDS.tolist())


def journal(books) -> pa.Table:
    lines, d = books.lines, books.docs
    n = len(lines.doc)
    first = np.concatenate([[True], lines.doc[1:] != lines.doc[:-1]]) if n else np.zeros(0, bool)
    e_docs = lines.doc[first]
    rep = pa.array(np.cumsum(first) - 1)
    v = lines.value

    def per_entry(a: pa.Array) -> pa.Array:
        if pa.types.is_dictionary(a.type):
            return pa.DictionaryArray.from_arrays(a.indices.take(rep), a.dictionary)
        if pa.types.is_string(a.type):
            return pa.DictionaryArray.from_arrays(rep, a)
        return a.take(rep)

    ts = d.entry_date[e_docs] * 86_400 + d.entry_time[e_docs]
    t = d.type[e_docs]
    cols = {
        "entry_id": per_entry(pa.array(books.entry_no[e_docs]).cast(pa.string())),
        "line_no": pa.array(lines.line_no.astype(np.int32)),
        "company": _dict_strings(np.zeros(n, np.int32), [md.COMPANY]),
        "account": _dict_strings(lines.account, chart.CODES.tolist()),
        "debit": pa.array(np.where(v > 0, v, 0) / 100.0),
        "credit": pa.array(np.where(v < 0, -v, 0) / 100.0),
        "currency": _dict_strings(np.zeros(n, np.int32), [md.CURRENCY]),
        "document_date": per_entry(_dates(d.doc_date[e_docs])),
        "posting_date": per_entry(_dates(d.post_date[e_docs])),
        "entry_timestamp": per_entry(pa.array(ts.astype("datetime64[s]"), pa.timestamp("s"))),
        "preparer": per_entry(_users(d.preparer[e_docs])),
        "approver": per_entry(_users(d.approver[e_docs])),
        "source": per_entry(_dict_strings(np.where(MANUAL[t], 0, 1), ["manual", "automated"])),
        "document_type": per_entry(_dict_strings(t, TYPE_CODES.tolist())),
        "description": per_entry(descriptions(books, e_docs)),
        "reference": per_entry(doc_numbers(d, e_docs)),
        "vendor_id": per_entry(_partner(books, e_docs, "vendor", "id")),
        "customer_id": per_entry(_partner(books, e_docs, "customer", "id")),
        "parent_document": per_entry(doc_numbers(d, d.parent[e_docs])),
        "fiscal_period": pa.array(books.period_of_line.astype(np.int32)),
        "debit_cents": pa.array(np.where(v > 0, v, 0)),
        "credit_cents": pa.array(np.where(v < 0, -v, 0)),
    }
    return pa.table(cols)


def document_ids(books) -> np.ndarray:
    """The documents of these books: those with an entry in the window, the orders raised in it,
    and the parents of either (the chain an auditor follows back)."""
    d = books.docs
    posted = _np.grouped_unique(books.lines.doc)
    types = _np.unique(d.type[posted]) if len(posted) else np.zeros(0, np.int64)
    order_types = [TYPE[c] for c in ("PO", "SO")]
    wanted_orders = [x for x in order_types if (x == TYPE["PO"] and TYPE["GR"] in types) or
                     (x == TYPE["SO"] and TYPE["SH"] in types) or books.start == md.YEAR_START]
    orders = np.flatnonzero(np.isin(d.type, wanted_orders) & (d.doc_date >= books.start) & (d.doc_date <= books.end))
    ids = np.concatenate([posted, orders])
    parents = d.parent[ids]
    ids = np.concatenate([ids, parents[parents >= 0]])
    return _np.unique(ids)


def documents(books) -> pa.Table:
    d = books.docs
    ids = document_ids(books)
    m = books.master
    kind = PARTNER_KIND[d.type[ids]]
    acct = d.account[ids]
    svc = d.service_month[ids]
    money = {c: pa.array(d.cols[c][ids] / 100.0) for c in ("amount", "tax", "variance", "withheld")}
    return pa.table({
        "document_id": doc_numbers(d, ids),
        "document_type": _dict_strings(d.type[ids], TYPE_CODES.tolist()),
        "type_name": _dict_strings(d.type[ids], [t.name for t in DOC_TYPES]),
        "document_date": _dates(d.doc_date[ids]),
        "posting_date": _dates(np.where(POSTS[d.type[ids]], d.post_date[ids], -1)),
        "entry_date": _dates(d.entry_date[ids]),
        "due_date": _dates(d.due_date[ids]),
        "value_date": _dates(d.value_date[ids]),
        "partner_id": _partner(books, ids, "any", "id"),
        "partner_name": _partner(books, ids, "any"),
        **money,
        "gross": pa.array(d.gross()[ids] / 100.0),
        "quantity": pa.array(d.quantity[ids]),
        "account": _dict_strings(acct + 1, [""] + chart.CODES.tolist()),
        "preparer": _users(d.preparer[ids]),
        "approver": _users(d.approver[ids]),
        "approved_on": _dates(d.approved_on[ids]),
        "parent_document": doc_numbers(d, d.parent[ids]),
        "external_reference": pa.array(np.where(np.isin(d.type[ids], [TYPE["VI"], TYPE["VN"]]), d.ext_ref[ids], -1)),
        "service_month": _month_text(np.maximum(svc, 0), dictionary=True),
        "entry_id": pc.if_else(pa.array(books.entry_no[ids] >= 0), pa.array(books.entry_no[ids]).cast(pa.string()),
                               pa.scalar(None, pa.string())),
        "partner_kind": _dict_strings(np.searchsorted(np.array(["", "customer", "vendor"]), kind),
                                      ["", "customer", "vendor"]),
        "vendor_bank_account": _dict_strings(_partner_codes(books, ids, "vendor"), [""] + m.vendor_bank),
    })


def trial_balance(books) -> pa.Table:
    tb = books.trial_balance_cents()
    np_, na = len(tb["period"]), len(chart.ACCOUNTS)
    period = np.repeat(tb["period"], na)
    acct = np.tile(np.arange(na), np_)
    out = {"fiscal_period": pa.array(period.astype(np.int32)), "account": _dict_strings(acct, chart.CODES.tolist()),
           "name": _dict_strings(acct, [a.name for a in chart.ACCOUNTS])}
    for k in ("opening", "debit", "credit", "closing"):
        out[k] = pa.array(tb[k].ravel() / 100.0)
        out[f"{k}_cents"] = pa.array(tb[k].ravel())
    return pa.table(out)


def master_tables(books) -> dict[str, pa.Table]:
    m = books.master
    r = books.register
    s = books.schedule
    last = FIRST_MONTH + int(md.month_of(np.array([books.end]))[0]) - 1
    users = [{"user_id": u.user_id, "name": u.name, "role": u.role, "department": u.department,
              "approval_limit": u.approval_limit_cents / 100, "kind": u.kind, "posting_rights": ",".join(u.posts),
              "posting_allowed": bool(u.posts), "status": "active"} for u in md.USERS]
    cat = m.vendor_category
    states = sales.customer_states(m)
    return {
        "accounts": pa.Table.from_pylist(chart.accounts_table_rows()),
        "users": pa.Table.from_pylist(users),
        "vendors": pa.table({
            "vendor_id": [m.vendor_id(i) for i in range(m.n_vendors)], "name": m.vendor_name,
            "category": [md.CATEGORIES[c].name for c in cat.tolist()],
            "default_account": [chart.ACCOUNTS[chart.idx(md.CATEGORIES[c].account)].code for c in cat.tolist()],
            "payment_terms_days": m.vendor_terms, "bank_account": m.vendor_bank,
            "created_on": pa.array(m.vendor_created.astype("datetime64[D]"), pa.date32()),
            "status": ["active"] * m.n_vendors}),
        "customers": pa.table({
            "customer_id": [m.customer_id(i) for i in range(m.n_customers)], "name": m.customer_name,
            "ship_to_state": [sales.STATES[s_] for s_ in states.tolist()], "payment_terms_days": m.customer_terms,
            "credit_limit": m.customer_credit_limit / 100.0}),
        "calendar": pa.Table.from_pylist(md.calendar_rows()),
        "fixed_assets": pa.table({
            "asset_id": [f"FA-{i + 1:05d}" for i in range(len(r.cost))],
            "asset_class": [md.ASSET_CLASSES[c][0] for c in r.asset_class.tolist()],
            "acquired_on": _dates(r.acquired), "useful_life_months": r.life, "cost": r.cost / 100.0,
            "accumulated_depreciation": r.accumulated(last) / 100.0,
            "net_book_value": (r.cost - r.accumulated(last)) / 100.0,
            "receipt_document": doc_numbers(books.docs, r.receipt)}),
        "prepaid_schedule": pa.table({
            "invoice_document": doc_numbers(books.docs, s.invoice),
            "vendor_id": [m.vendor_id(v) for v in s.vendor.tolist()],
            "first_month": [f"{(x + 1970 * 12) // 12}-{(x + 1970 * 12) % 12 + 1:02d}" for x in s.first_month.tolist()],
            "months": np.full(len(s.premium), 12), "premium": s.premium / 100.0,
            "unamortised_at_end": np.where(s.posted <= books.end, s.remaining(last), 0) / 100.0}),
    }


def subledger_tables(books) -> dict[str, pa.Table]:
    out = {}
    d = books.docs
    m = books.master
    for side, oi, kind in (("ap", books.ap_open, "vendor"), ("ar", books.ar_open, "customer")):
        ids_of = (lambda p: [m.vendor_id(i) for i in p]) if kind == "vendor" else (lambda p: [m.customer_id(i) for i in p])
        out[f"{side}_open_items"] = pa.table({
            "as_of": _dates(oi.at), f"{kind}_id": ids_of(oi.partner.tolist()), "document_id": doc_numbers(d, oi.item),
            "document_date": _dates(d.doc_date[oi.item]), "due_date": _dates(oi.due), "open_amount": oi.amount / 100.0,
            "days_past_due": oi.days_past_due, "bucket": _dict_strings(oi.bucket, list(subledgers.BUCKETS))})
        ag = subledgers.aging(oi)
        cols = {"as_of": _dates(ag["at"]), f"{kind}_id": ids_of(ag["partner"].tolist())}
        for b in (*subledgers.BUCKETS, "total"):
            cols[b] = pa.array(ag[b] / 100.0)
        out[f"{side}_aging"] = pa.table(cols)
    return out


def bank_tables(books) -> dict[str, pa.Table]:
    v = books.bank
    d = books.docs
    cash = chart.idx("cash")
    book = np.array([books.balances_at(int(e))[cash] for e in v.month_end], dtype=np.int64)
    outs = np.array([v.recon_amount[(v.recon_at == e) & (v.recon_amount < 0)].sum() for e in v.month_end], dtype=np.int64)
    dit = np.array([v.recon_amount[(v.recon_at == e) & (v.recon_amount > 0)].sum() for e in v.month_end], dtype=np.int64)
    month_of_line = np.searchsorted(v.month_end, v.line_value_date)
    return {
        "bank_statements": pa.table({
            "statement_date": _dates(v.month_end), "bank": [md.BANK_NAME] * len(v.month_end),
            "account_number": [md.BANK_ACCOUNT] * len(v.month_end), "opening_balance": v.opening / 100.0,
            "credits": np.bincount(month_of_line, weights=np.maximum(v.line_amount, 0), minlength=len(v.month_end)) / 100.0,
            "debits": np.bincount(month_of_line, weights=np.maximum(-v.line_amount, 0), minlength=len(v.month_end)) / 100.0,
            "closing_balance": v.closing / 100.0}),
        "bank_statement_lines": pa.table({
            "statement_date": _dates(v.month_end[np.minimum(month_of_line, len(v.month_end) - 1)]),
            "account_number": _dict_strings(np.zeros(len(v.line_doc), np.int32), [md.BANK_ACCOUNT]),
            "value_date": _dates(v.line_value_date), "amount": v.line_amount / 100.0,
            "reference": doc_numbers(d, v.line_doc), "text": descriptions(books, v.line_doc)}),
        "bank_reconciliation": pa.table({
            "as_of": _dates(v.month_end), "book_balance": book / 100.0, "outstanding_payments": -outs / 100.0,
            "deposits_in_transit": dit / 100.0, "bank_balance": v.closing / 100.0}),
        "bank_reconciling_items": pa.table({
            "as_of": _dates(v.recon_at), "document_id": doc_numbers(d, v.recon_doc),
            "posting_date": _dates(d.post_date[v.recon_doc]), "value_date": _dates(d.value_date[v.recon_doc]),
            "amount": v.recon_amount / 100.0,
            "kind": _dict_strings((v.recon_amount > 0).astype(np.int64), ["outstanding payment", "deposit in transit"])}),
    }
