"""Documents are the source of truth and every table tells the same story as the entries.

Read through Arrow (and DuckDB, as a tool would): the journal keeps the world ledger's columns,
each entry balances in the table too, descriptions name the month and partner of their own
document, rendered bodies state the entry's figures and an approval dated after what it approves,
and every bank statement carries the company's one account.
"""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pytest

from jeval_ray.books import master as md, simulate_year
from jeval_ray.books.tables import plain

LEDGER_COLUMNS = ("entry_id", "line_no", "company", "account", "debit", "credit", "currency", "document_date",
                  "posting_date", "entry_timestamp", "preparer", "approver", "source", "document_type",
                  "description", "reference", "vendor_id")


@pytest.fixture(scope="module")
def books():
    return simulate_year(4, 3_000)


def test_the_journal_keeps_the_ledger_columns_and_balances_per_entry(books):
    j = plain(books.journal)
    assert j.column_names[:len(LEDGER_COLUMNS)] == list(LEDGER_COLUMNS)
    con = duckdb.connect()
    con.register("j", j)
    off = con.execute("select count(*) from (select entry_id, round(sum(debit) - sum(credit), 2) d from j "
                      "group by entry_id) where d <> 0").fetchone()[0]
    assert off == 0
    assert con.execute("select count(distinct entry_id) from j").fetchone()[0] == books.n_entries
    # manual entries carry an approver, automated ones come from system users
    bad = con.execute("select count(*) from j where source = 'manual' and approver = ''").fetchone()[0]
    assert bad == 0
    assert set(con.execute("select distinct preparer from j where source = 'automated'").fetchnumpy()["preparer"]) <= {
        "SYS_BATCH", "SYS_INTERFACE", "SYS_PAYROLL"}


def test_descriptions_move_with_their_dates_and_partners(books):
    j = plain(books.journal).to_pandas()
    month_words = {m: i + 1 for i, m in enumerate(md.MONTH_NAMES)}
    for code in ("DP", "PA", "AC", "BC", "MF"):
        rows = j[(j.document_type == code) & (j.line_no == 1)]
        assert len(rows), code
        for desc, post in zip(rows.description, rows.posting_date):
            m = re.search(r"(" + "|".join(md.MONTH_NAMES) + r") (\d{4})", desc)
            assert m and (month_words[m.group(1)], int(m.group(2))) == (post.month, post.year), (code, desc, post)
    vendors = dict(zip(*[plain(books.master_tables()["vendors"]).column(c).to_pylist() for c in ("vendor_id", "name")]))
    vi = j[(j.document_type.isin(["VI", "VN", "VP"])) & (j.line_no == 1)]
    assert all(vendors[v] in desc for v, desc in zip(vi.vendor_id, vi.description))


def test_a_rendered_document_states_its_entry_and_a_later_approval(books):
    d = books.docs
    j = plain(books.journal).to_pandas()
    for code in ("VI", "VN", "CI", "PR", "AC"):
        ids = d.of(code)
        i = int(ids[(books.entry_no[ids] >= 0)][len(ids) // 3])
        doc = books.document(i)
        entry = j[j.entry_id == str(books.entry_no[i])]
        assert doc["doc_id"] == entry.reference.iloc[0]
        total = f"{entry.debit.sum():,.2f}"
        assert total in doc["body"], (code, total, doc["body"])
        if d.approver[i] >= 0:
            approved = re.search(r"on (\d{4}-\d\d-\d\d)", doc["body"].split("Approved by")[1]).group(1)
            assert approved >= md.iso(d.doc_date[i])
            assert md.USERS[int(d.approver[i])].user_id == entry.approver.iloc[0]


def test_documents_cover_every_entry_and_their_chains(books):
    docs = plain(books.documents)
    ids = set(docs.column("document_id").to_pylist())
    j = plain(books.journal)
    assert set(j.column("reference").to_pylist()) <= ids
    parents = {p for p in j.column("parent_document").to_pylist() if p}
    assert parents <= ids


def test_bank_statements_carry_the_one_company_account_and_tie(books):
    t = books.bank_tables()
    for name in ("bank_statements", "bank_statement_lines"):
        assert set(plain(t[name]).column("account_number").to_pylist()) == {md.BANK_ACCOUNT}
    rec = t["bank_reconciliation"].to_pandas()
    diff = rec.book_balance + rec.outstanding_payments - rec.deposits_in_transit - rec.bank_balance
    assert np.allclose(diff, 0, atol=0.005)
    st = t["bank_statements"].to_pandas()
    assert np.allclose(st.opening_balance + st.credits - st.debits, st.closing_balance, atol=0.005)
    # a ledger payment is a statement line with the same reference
    lines = set(plain(t["bank_statement_lines"]).column("reference").to_pylist())
    vp = plain(books.journal).to_pandas().query("document_type == 'VP'").reference
    items = set(plain(t["bank_reconciling_items"]).column("document_id").to_pylist())
    assert set(vp) <= lines | items


def test_agings_tie_to_the_trial_balance_as_tables(books):
    tb = books.trial_balance.to_pandas()
    ag = books.subledger_tables()
    for side, code, sign in (("ap", "2000", -1), ("ar", "1100", 1)):
        aging = ag[f"{side}_aging"].to_pandas()
        dec = aging[aging.as_of == aging.as_of.max()]
        closing = tb[(tb.account == code) & (tb.fiscal_period == 12)].closing_cents.iloc[0]
        assert round(dec.total.sum() * 100) == sign * closing


@pytest.mark.parametrize("seed,size", [(4, 3_000), (11, 100), (2, 30_000)])
def test_descriptions_are_the_same_texts_built_per_slot_or_per_type(seed, size):
    """``descriptions`` builds texts per slot for few documents and per document type for many
    (a speed choice); both ways give the same text for every document of a year, in order."""
    from jeval_ray.books import tables

    b = simulate_year(seed, size)
    docs = np.flatnonzero(b.entry_no >= 0)
    for ids in (docs, docs[::-1], b.bank.line_doc, docs[:1]):
        assert tables._descriptions_by_slot(b, ids).equals(tables._descriptions_by_type(b, ids))
    assert len(set(b.docs.type[docs].tolist())) >= 20  # nearly every document type's template is exercised
