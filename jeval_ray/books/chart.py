"""The chart of accounts of Northwind Components Inc., defined once for every process.

Each account has a type (asset, liability, equity, revenue, expense), a normal balance side
(+1 debit, -1 credit) and, for contra accounts, the account it offsets: the allowance for
doubtful accounts offsets trade receivables and accumulated depreciation offsets property, plant
and equipment, so both carry a credit balance under an asset heading. Processes never name an
account number: they name a *role* (``"ap"``, ``"cash"``, ``"grir"`` …) and the chart maps it.
Control accounts (receivables and payables) may only be posted by the document types listed
here; ``posting.py`` refuses a template that breaks this at import time.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Account:
    code: str
    name: str
    type: str  # asset | liability | equity | revenue | expense
    role: str  # the name processes use
    normal: int  # +1 debit, -1 credit
    contra_of: str = ""  # the parent account of a contra account
    control_for: tuple[str, ...] = ()  # document types allowed to post a control account

    @property
    def balance_sheet(self) -> bool:
        return self.type in ("asset", "liability", "equity")


_D, _C = 1, -1
ACCOUNTS: tuple[Account, ...] = (
    Account("1000", "Cash - Operating Account", "asset", "cash", _D),
    Account("1100", "Accounts Receivable - Trade", "asset", "ar", _D, control_for=("CI", "CR", "WO")),
    Account("1190", "Allowance for Doubtful Accounts", "asset", "allowance", _C, contra_of="1100"),
    Account("1200", "Inventory - Raw Materials", "asset", "inventory_raw", _D),
    Account("1210", "Inventory - Finished Goods", "asset", "inventory_fg", _D),
    Account("1300", "Prepaid Expenses", "asset", "prepaid", _D),
    Account("1500", "Property, Plant and Equipment", "asset", "ppe", _D),
    Account("1590", "Accumulated Depreciation", "asset", "accumulated_depreciation", _C, contra_of="1500"),
    Account("2000", "Accounts Payable - Trade", "liability", "ap", _C, control_for=("VI", "VN", "VP")),
    Account("2050", "GR/IR Clearing", "liability", "grir", _C),
    Account("2100", "Accrued Liabilities", "liability", "accrued", _C),
    Account("2200", "Accrued Payroll", "liability", "accrued_payroll", _C),
    Account("2210", "Payroll Taxes Payable", "liability", "payroll_tax_payable", _C),
    Account("2300", "Sales Tax Payable", "liability", "sales_tax", _C),
    Account("2500", "Deferred Revenue", "liability", "deferred_revenue", _C),
    Account("3000", "Common Stock", "equity", "common_stock", _C),
    Account("3100", "Retained Earnings", "equity", "retained_earnings", _C),
    Account("4000", "Revenue - Product Sales", "revenue", "revenue_product", _C),
    Account("4100", "Revenue - Services", "revenue", "revenue_service", _C),
    Account("4900", "Other Income", "revenue", "other_income", _C),
    Account("5000", "Cost of Goods Sold", "expense", "cogs", _D),
    Account("5100", "Purchase Price Variance", "expense", "price_variance", _D),
    Account("5300", "Freight and Logistics", "expense", "freight", _D),
    Account("6000", "Salaries and Wages", "expense", "wages", _D),
    Account("6050", "Payroll Tax Expense", "expense", "payroll_tax_expense", _D),
    Account("6100", "Rent Expense", "expense", "rent", _D),
    Account("6200", "Utilities", "expense", "utilities", _D),
    Account("6300", "Travel and Entertainment", "expense", "travel", _D),
    Account("6400", "Consulting and Professional Fees", "expense", "professional_fees", _D),
    Account("6500", "Bad Debt Expense", "expense", "bad_debt", _D),
    Account("6600", "Repairs and Maintenance", "expense", "maintenance", _D),
    Account("6700", "Marketing and Advertising", "expense", "marketing", _D),
    Account("6800", "Depreciation Expense", "expense", "depreciation", _D),
    Account("6900", "Office Supplies", "expense", "office_supplies", _D),
    Account("6950", "Bank Charges", "expense", "bank_charges", _D),
    Account("7000", "Insurance Expense", "expense", "insurance", _D),
    Account("7100", "IT and Software", "expense", "software", _D),
)

#: account index (position in ``ACCOUNTS``) by role and by code; processes use the indices
ROLE = {a.role: i for i, a in enumerate(ACCOUNTS)}
CODE = {a.code: i for i, a in enumerate(ACCOUNTS)}
assert len(ROLE) == len(ACCOUNTS) and len(CODE) == len(ACCOUNTS)

CODES = np.array([a.code for a in ACCOUNTS])
NORMAL = np.array([a.normal for a in ACCOUNTS], dtype=np.int64)
IS_BALANCE_SHEET = np.array([a.balance_sheet for a in ACCOUNTS])
IS_PROFIT_AND_LOSS = ~IS_BALANCE_SHEET
#: contra account index -> parent account index
CONTRA = {i: CODE[a.contra_of] for i, a in enumerate(ACCOUNTS) if a.contra_of}
#: control account index -> document types allowed to post it
CONTROL = {i: a.control_for for i, a in enumerate(ACCOUNTS) if a.control_for}


def idx(role: str) -> int:
    """The account index of a role; a wrong role name fails loudly."""
    return ROLE[role]


def accounts_table_rows() -> list[dict]:
    """The chart as master-data rows (what a tool shows)."""
    return [{"account": a.code, "name": a.name, "type": a.type, "normal_balance": "debit" if a.normal > 0 else "credit",
             "contra_of": a.contra_of or None, "control_account": bool(a.control_for), "status": "active",
             "opened": "2015-01-01", "closed": None} for a in ACCOUNTS]
