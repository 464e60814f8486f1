"""The one posting engine: declarative templates that balance by construction, control accounts guarded."""

from __future__ import annotations

import numpy as np
import pytest

from jeval_ray.books import chart, master as md, posting
from jeval_ray.books.documents import DocBuilder


def _lines(doc_kwargs: list[tuple[str, dict]]):
    b = DocBuilder()
    for code, kw in doc_kwargs:
        b.add(code, 1, post_date=md.YEAR_START, entry_date=md.YEAR_START, entry_time=0, preparer=0, **kw)
    docs = b.freeze()
    return posting.post(docs, np.arange(len(docs)))


def _as_rows(lines) -> list[tuple[int, int, str, int]]:
    return [(int(d), int(n), chart.ACCOUNTS[a].code, int(v)) for d, n, a, v in
            zip(lines.doc, lines.line_no, lines.account, lines.value)]


def test_a_matched_invoice_with_a_price_variance_has_three_lines():
    rows = _as_rows(_lines([("VI", {"amount": 100_000, "variance": -1_234})]))
    assert rows == [(0, 1, "2050", 100_000), (0, 2, "5100", -1_234), (0, 3, "2000", -98_766)]


def test_a_customer_invoice_carries_its_sales_tax_and_drops_zero_lines():
    rows = _as_rows(_lines([("CI", {"amount": 50_000, "tax": 3_625, "account": chart.idx("revenue_product")}),
                            ("CI", {"amount": 20_000, "tax": 0, "account": chart.idx("revenue_product")})]))
    assert rows == [(0, 1, "1100", 53_625), (0, 2, "4000", -50_000), (0, 3, "2300", -3_625),
                    (1, 1, "1100", 20_000), (1, 2, "4000", -20_000)]


def test_a_payroll_journal_has_four_lines_that_balance():
    rows = _as_rows(_lines([("PR", {"amount": 1_000_000, "tax": 76_500, "withheld": 230_000})]))
    assert rows == [(0, 1, "6000", 1_000_000), (0, 2, "6050", 76_500), (0, 3, "2200", -770_000),
                    (0, 4, "2210", -306_500)]
    assert sum(r[3] for r in rows) == 0


def test_every_template_balances_for_any_amounts():
    rng = np.random.default_rng(0)
    b = DocBuilder()
    codes = [c for c in posting.TEMPLATES if c != "YC"]
    for code in codes:
        account = chart.idx("utilities") if code not in ("CI",) else chart.idx("revenue_service")
        b.add(code, 50, post_date=md.YEAR_START, entry_date=md.YEAR_START, entry_time=0, preparer=0, account=account,
              amount=rng.integers(-10**9, 10**9, 50), tax=rng.integers(0, 10**7, 50),
              variance=rng.integers(-10**6, 10**6, 50), withheld=rng.integers(0, 10**8, 50))
    docs = b.freeze()
    lines = posting.post(docs, np.arange(len(docs)))
    assert (posting.entry_sums(lines) == 0).all()


def test_an_unbalanced_or_control_breaking_template_is_refused():
    bad = dict(posting.TEMPLATES)
    bad["VN"] = (("@account", +1, {"amount": 1}), ("ap", -1, {"amount": 1, "tax": 1}))
    with pytest.raises(AssertionError, match="does not balance"):
        posting.check_templates(bad)
    bad = dict(posting.TEMPLATES)
    bad["AC"] = (("ap", +1, {"amount": 1}), ("accrued", -1, {"amount": 1}))
    with pytest.raises(AssertionError, match="control account 2000"):
        posting.check_templates(bad)


def test_a_document_cannot_name_a_control_account_for_its_open_line():
    with pytest.raises(ValueError, match="control"):
        _lines([("AC", {"amount": 100, "account": chart.idx("ar")})])


def test_itemised_lines_must_add_up_to_the_document():
    b = DocBuilder()
    b.add("YC", 1, post_date=md.YEAR_END, entry_date=md.YEAR_END, entry_time=0, preparer=0, amount=500)
    docs = b.freeze()
    items = posting.Items(doc=np.array([0, 0]), account=np.array([chart.idx("revenue_product"), chart.idx("cogs")]),
                          value=np.array([1_000, -400]))
    with pytest.raises(ValueError, match="do not add up"):
        posting.post(docs, np.array([0]), items)
    ok = posting.Items(doc=items.doc, account=items.account, value=np.array([1_000, -500]))
    rows = _as_rows(posting.post(docs, np.array([0]), ok))
    assert rows == [(0, 1, "4000", 1_000), (0, 2, "5000", -500), (0, 3, "3100", -500)]


def test_contra_accounts_and_normal_sides_are_defined_once():
    assert chart.ACCOUNTS[chart.CODE["1190"]].contra_of == "1100"
    assert chart.ACCOUNTS[chart.CODE["1590"]].contra_of == "1500"
    assert chart.NORMAL[chart.CODE["1190"]] == -1 and chart.NORMAL[chart.CODE["1100"]] == 1
    assert set(chart.CONTROL) == {chart.idx("ar"), chart.idx("ap")}


def test_the_documented_templates_are_the_engine_s():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "books.md").read_text()
    assert posting.templates_markdown() in doc
