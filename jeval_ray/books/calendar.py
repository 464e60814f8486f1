"""The company calendar, defined once: public holidays, business days, business hours, month ends
and period close dates.

The books' processes, the planting layer and every task read the calendar from here; it imports
nothing of the package. The fiscal year is calendar 2025, but the books run from October 2024 (the
opening open items) to the year-end close in January 2026, so the calendar knows the holidays of
every year it covers, and the business-day helpers count all of them. ``holidays(year)`` names one
year's view (the ``calendar`` master table lists the fiscal year's holidays and close dates).

Dates are integer day numbers (days since 1970-01-01) in the books' hot path and ``datetime64[D]``
in the planting layer; ``day()`` and ``iso()`` convert, and the business-day helpers take either
and give back the kind they were given.
"""

from __future__ import annotations

import functools

import numpy as np


def day(iso_date: str) -> int:
    """ISO date -> day number."""
    return int(np.datetime64(iso_date, "D").astype(np.int64))


def iso(d) -> str:
    """Day number -> ISO date."""
    return str(np.datetime64(int(d), "D"))


FISCAL_YEAR = 2025
YEAR_START = day("2025-01-01")
YEAR_END = day("2025-12-31")
#: the simulation starts here, so opening open items (invoices, receipts, accruals) are real documents
SIM_START = day("2024-10-01")
YEAR_END_CLOSE = day("2026-01-09")

#: the company's public holidays, every year the books cover (ISO date, name)
HOLIDAYS = (
    ("2024-10-14", "Columbus Day"), ("2024-11-11", "Veterans Day"), ("2024-11-28", "Thanksgiving Day"),
    ("2024-12-25", "Christmas Day"),
    ("2025-01-01", "New Year's Day"), ("2025-01-20", "Martin Luther King Jr. Day"), ("2025-02-17", "Presidents' Day"),
    ("2025-05-26", "Memorial Day"), ("2025-06-19", "Juneteenth"), ("2025-07-04", "Independence Day"),
    ("2025-09-01", "Labor Day"), ("2025-10-13", "Columbus Day"), ("2025-11-11", "Veterans Day"),
    ("2025-11-27", "Thanksgiving Day"), ("2025-12-25", "Christmas Day"),
    ("2026-01-01", "New Year's Day"), ("2026-01-19", "Martin Luther King Jr. Day"),
)


def holidays(year: int | None = None) -> tuple[tuple[str, str], ...]:
    """The public holidays (ISO date, name) of ``year``; of every year the calendar covers when None."""
    return HOLIDAYS if year is None else tuple(h for h in HOLIDAYS if int(h[0][:4]) == int(year))


def holiday_dates(year: int | None = None) -> np.ndarray:
    """``holidays(year)`` as a ``datetime64[D]`` array, for numpy's business-day functions."""
    return np.array([d for d, _ in holidays(year)], dtype="datetime64[D]")


#: every year's holidays as ``datetime64[D]``
HOLIDAY_DATES = holiday_dates()
#: numpy's business-day calendar of the company: Monday to Friday, not on any year's holidays
BUSINESS_CALENDAR = np.busdaycalendar(holidays=HOLIDAY_DATES)

#: the posting window of manual journal entries (seconds after midnight, [start, end))
BUSINESS_HOURS = (8 * 3600, 18 * 3600)
#: when people key entries in the books (08:30-17:30), inside the posting window
OFFICE_HOURS = (8 * 3600 + 1800, 17 * 3600 + 1800)

MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December")


WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _as_days(days) -> tuple[np.ndarray, bool]:
    """``days`` as ``datetime64[D]``, and whether they were given as datetime64."""
    a = np.asarray(days)
    if np.issubdtype(a.dtype, np.datetime64):
        return a.astype("datetime64[D]"), True
    return a.astype(np.int64).astype("datetime64[D]"), False


def weekday(days) -> np.ndarray:
    """Day of the week of each day (day numbers or datetime64): 0 = Monday ... 6 = Sunday."""
    d, _ = _as_days(days)
    return ((d.astype(np.int64) + 3) % 7)[()]  # 1970-01-01 was a Thursday


def is_weekend(days) -> np.ndarray:
    """Whether each day is a Saturday or a Sunday."""
    return weekday(days) >= 5


def is_business_day(days) -> np.ndarray:
    """Whether each day (day numbers or datetime64) is a business day of the company."""
    d, _ = _as_days(days)
    return np.is_busday(d, busdaycal=BUSINESS_CALENDAR)[()]


def business_offset(days, offset, roll: str = "forward"):
    """``offset`` business days from each day (rolled to a business day first, as ``roll`` says);
    day numbers for day numbers, ``datetime64[D]`` for datetime64."""
    d, dated = _as_days(days)
    out = np.busday_offset(d, offset, roll=roll, busdaycal=BUSINESS_CALENDAR)
    return (out if dated else out.astype(np.int64))[()]


def business_count(start, end) -> np.ndarray:
    """The number of business days in [start, end) for each pair (datetime64)."""
    return np.busday_count(np.asarray(start, dtype="datetime64[D]"), np.asarray(end, dtype="datetime64[D]"),
                           busdaycal=BUSINESS_CALENDAR)[()]


def business_days(start, end) -> np.ndarray:
    """The business days in [start, end], as ``datetime64[D]``."""
    days = np.arange(np.datetime64(start, "D"), np.datetime64(end, "D") + 1, dtype="datetime64[D]")
    return days[np.is_busday(days, busdaycal=BUSINESS_CALENDAR)]


# ------------------------------------------------------------------------------- months and closes
def month_start(year: int, month: int) -> int:
    return day(f"{year + (month - 1) // 12}-{(month - 1) % 12 + 1:02d}-01")


def month_end(year: int, month: int) -> int:
    return month_start(year, month + 1) - 1


def last_day_of_month(d) -> np.datetime64:
    """The last calendar day of the month of ``d`` (a date or datetime64, scalar or array)."""
    return ((np.asarray(d, dtype="datetime64[D]").astype("datetime64[M]") + 1).astype("datetime64[D]") - 1)[()]


def first_day_of(months) -> np.ndarray:
    """Day number of the first day of each month, months counted as ``12 * year + month - 1``."""
    m = np.asarray(months, dtype=np.int64) - 1970 * 12
    return m.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)


def last_day_of(months) -> np.ndarray:
    """Day number of the last day of each month (months as for ``first_day_of``)."""
    return first_day_of(np.asarray(months, dtype=np.int64) + 1) - 1


#: first and last day of the 12 fiscal months (index 0 = January 2025)
MONTH_STARTS = np.array([month_start(FISCAL_YEAR, m) for m in range(1, 13)], dtype=np.int64)
MONTH_ENDS = np.array([month_end(FISCAL_YEAR, m) for m in range(1, 13)], dtype=np.int64)


def month_of(days) -> np.ndarray:
    """Fiscal month 1-12 of 2025 day numbers (0 before the year, 13 after it)."""
    return np.searchsorted(MONTH_STARTS, np.asarray(days), side="right")


def fiscal_month_code(days) -> np.ndarray:
    """yyyymm of day numbers (e.g. 202503)."""
    m = np.asarray(days, dtype=np.int64).astype("datetime64[D]").astype("datetime64[M]").astype(np.int64)
    return (1970 + m // 12) * 100 + m % 12 + 1


@functools.cache
def close_dates() -> tuple[int, ...]:
    """Close date of each month: the 5th business day after month end; the year end closes on 2026-01-09."""
    out = [int(business_offset(MONTH_ENDS[m] + 1, 4)) for m in range(11)]
    return tuple(out + [YEAR_END_CLOSE])


@functools.cache
def month_close_dates() -> tuple[tuple[str, str], ...]:
    """(period, close date) as ISO text: the close calendar of the fiscal year."""
    return tuple((f"{FISCAL_YEAR}-{m + 1:02d}", iso(c)) for m, c in enumerate(close_dates()))


def calendar_rows() -> list[dict]:
    """The ``calendar`` master table: the fiscal year's holidays and period closes."""
    rows = [{"date": d, "kind": "holiday", "description": nm} for d, nm in holidays(FISCAL_YEAR)]
    rows += [{"date": iso(c), "kind": "period_close", "description": f"close of period {FISCAL_YEAR}-{m + 1:02d}"}
             for m, c in enumerate(close_dates())]
    return sorted(rows, key=lambda r: (r["date"], r["kind"]))
