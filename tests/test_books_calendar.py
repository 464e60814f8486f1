"""The company calendar (``jeval_ray.books.calendar``): one owner of holidays, business days,
business hours, month ends and close dates, with a view per year."""

from __future__ import annotations

import numpy as np

from jeval_ray.books import calendar as cal, master as md
from jeval_ray.builder import _base


def test_holidays_have_a_view_per_year_and_the_calendar_knows_every_year():
    assert [d for d, _ in cal.holidays(2026)] == ["2026-01-01", "2026-01-19"]
    assert len(cal.holidays(2025)) == 11 and all(d.startswith("2025") for d, _ in cal.holidays(2025))
    assert cal.holidays() == cal.holidays(2024) + cal.holidays(2025) + cal.holidays(2026)
    assert (cal.holiday_dates(2025) == np.array([d for d, _ in cal.holidays(2025)], dtype="datetime64[D]")).all()
    # the master table lists the fiscal year's holidays and closes
    rows = cal.calendar_rows()
    assert [r["date"] for r in rows if r["kind"] == "holiday"] == [d for d, _ in cal.holidays(2025)]
    assert [(r["description"][-7:], r["date"]) for r in rows if r["kind"] == "period_close"] == \
        list(cal.month_close_dates())


def test_business_days_skip_weekends_and_every_year_s_holidays():
    fri = np.datetime64("2026-01-16")
    assert cal.business_offset(fri, 1) == np.datetime64("2026-01-20")  # Martin Luther King Jr. Day 2026
    assert cal.business_offset(np.datetime64("2025-12-31"), 1) == np.datetime64("2026-01-02")
    assert cal.business_offset(np.datetime64("2024-12-24"), 1) == np.datetime64("2024-12-26")
    # day numbers in, day numbers out; datetime64 in, datetime64 out
    assert cal.business_offset(cal.day("2026-01-16"), 1) == cal.day("2026-01-20")
    assert list(cal.business_offset(np.array([cal.day("2025-12-24")]), [1])) == [cal.day("2025-12-26")]
    days = cal.business_days(np.datetime64("2026-01-15"), np.datetime64("2026-01-21"))
    assert [str(d) for d in days] == ["2026-01-15", "2026-01-16", "2026-01-20", "2026-01-21"]
    assert cal.business_count(np.datetime64("2026-01-15"), np.datetime64("2026-01-21")) == 3
    assert not cal.is_business_day(np.datetime64("2025-07-04")) and cal.is_business_day(cal.day("2025-07-07"))
    assert [int(cal.weekday(np.datetime64(d))) for d in ("2025-12-29", "2026-01-01", "2026-01-04")] == [0, 3, 6]
    assert cal.WEEKDAY_NAMES[int(cal.weekday(cal.day("2025-12-25")))] == "Thursday"
    assert cal.is_weekend(np.array(["2026-01-03", "2026-01-05"], dtype="datetime64[D]")).tolist() == [True, False]


def test_month_ends_and_closes():
    assert cal.last_day_of_month(np.datetime64("2024-02-10")) == np.datetime64("2024-02-29")
    assert cal.last_day_of_month(np.array(["2025-12-01", "2025-11-30"], dtype="datetime64[D]")).tolist() == \
        [np.datetime64("2025-12-31").item(), np.datetime64("2025-11-30").item()]
    assert [cal.iso(d) for d in cal.MONTH_ENDS[[0, 1, 11]]] == ["2025-01-31", "2025-02-28", "2025-12-31"]
    closes = dict(cal.month_close_dates())
    assert closes["2025-12"] == "2026-01-09" == cal.iso(cal.YEAR_END_CLOSE)
    for m in range(11):  # the 5th business day after month end
        end = np.datetime64(cal.iso(cal.MONTH_ENDS[m]))
        close = np.datetime64(closes[f"2025-{m + 1:02d}"])
        assert cal.business_count(end + 1, close + 1) == 5 and cal.is_business_day(close)


def test_the_books_and_the_planting_layer_read_the_one_calendar():
    assert md.HOLIDAYS is cal.HOLIDAYS and md.close_dates is cal.close_dates and md.business_offset is cal.business_offset
    assert _base.month_close_dates is cal.month_close_dates and _base.business_days is cal.business_days
    assert _base.BUSINESS_HOURS == cal.BUSINESS_HOURS == (8 * 3600, 18 * 3600)
    assert cal.BUSINESS_HOURS[0] <= cal.OFFICE_HOURS[0] < cal.OFFICE_HOURS[1] <= cal.BUSINESS_HOURS[1]
