"""Frequencies inferred from dates, the dates after a series, and gaps named by row."""

from datetime import datetime, timedelta, timezone

import pytest

from transduce.data.calendar import format_dates, infer_frequency, next_dates
from transduce.errors import UserError


def dates(*texts):
    return [datetime.fromisoformat(t) for t in texts]


def after(texts, count=3):
    series = dates(*texts)
    frequency = infer_frequency(series)
    return frequency.name, format_dates(next_dates(series, count, frequency))


@pytest.mark.parametrize(
    "texts, name, future",
    [
        (
            ["2021-12-31 22:00", "2021-12-31 23:00"],
            "hourly",
            ["2022-01-01 00:00:00", "2022-01-01 01:00:00", "2022-01-01 02:00:00"],
        ),
        (
            ["2021-01-01 00:00", "2021-01-01 00:15", "2021-01-01 00:30"],
            "every 15 minutes",
            ["2021-01-01 00:45:00", "2021-01-01 01:00:00", "2021-01-01 01:15:00"],
        ),
        (
            ["2021-02-26", "2021-02-27", "2021-02-28"],
            "daily",
            ["2021-03-01", "2021-03-02", "2021-03-03"],
        ),
        (
            ["2021-12-16", "2021-12-17", "2021-12-20", "2021-12-21"],
            "business days",
            ["2021-12-22", "2021-12-23", "2021-12-24"],
        ),
        (
            ["2021-12-22", "2021-12-23", "2021-12-24"],
            "daily",  # no weekend seen: plain days
            ["2021-12-25", "2021-12-26", "2021-12-27"],
        ),
        (
            ["2021-12-09", "2021-12-10", "2021-12-13"],
            "business days",
            ["2021-12-14", "2021-12-15", "2021-12-16"],
        ),
        (["2021-12-19", "2021-12-26"], "weekly", ["2022-01-02", "2022-01-09", "2022-01-16"]),
        (
            ["2021-10-01", "2021-11-01", "2021-12-01"],
            "monthly (month starts)",
            ["2022-01-01", "2022-02-01", "2022-03-01"],
        ),
        (
            ["2021-10-31", "2021-11-30", "2021-12-31"],
            "monthly (month ends)",
            ["2022-01-31", "2022-02-28", "2022-03-31"],
        ),
        (
            ["2021-11-15", "2021-12-15"],
            "monthly (day 15)",
            ["2022-01-15", "2022-02-15", "2022-03-15"],
        ),
        (
            ["2021-12-30", "2022-01-30", "2022-02-28", "2022-03-30"],
            "monthly (day 30)",
            ["2022-04-30", "2022-05-30", "2022-06-30"],
        ),
        (
            ["2021-04-01", "2021-07-01", "2021-10-01"],
            "quarterly (month starts)",
            ["2022-01-01", "2022-04-01", "2022-07-01"],
        ),
        (
            ["2021-06-30", "2021-09-30", "2021-12-31"],
            "quarterly (month ends)",
            ["2022-03-31", "2022-06-30", "2022-09-30"],
        ),
        (
            ["2020-01-01", "2021-01-01"],
            "yearly (month starts)",
            ["2022-01-01", "2023-01-01", "2024-01-01"],
        ),
    ],
)
def test_the_dates_after_a_series_follow_its_calendar(texts, name, future):
    assert after(texts) == (name, future)


def test_the_issues_monthly_example_gets_month_starts():
    """Today's fixed 30-day step gave 2021-12-31, 2022-01-30, 2022-03-01."""
    assert after(["2021-10-01", "2021-11-01", "2021-12-01"])[1] == [
        "2022-01-01",
        "2022-02-01",
        "2022-03-01",
    ]


def test_a_gap_is_an_error_naming_its_row():
    series = dates("2021-01-01 00:00", "2021-01-01 01:00", "2021-01-01 03:00", "2021-01-01 04:00")
    with pytest.raises(
        UserError,
        match=r"data.csv:4: date 2021-01-01 03:00:00 follows "
        r"2021-01-01 01:00:00, but the series is hourly",
    ):
        infer_frequency(series, "data.csv", lines=[2, 3, 4, 5])
    with pytest.raises(UserError, match="row 3"):
        infer_frequency(series, "data.csv")
    with pytest.raises(UserError, match="but the series is monthly"):
        infer_frequency(dates("2021-01-01", "2021-02-01", "2021-04-01", "2021-05-01"))
    # a stray mid-month date among month starts is the row named, not the one after it
    stray = dates("2021-01-01", "2021-02-01", "2021-03-15", "2021-04-01", "2021-05-01")
    with pytest.raises(UserError, match=r"row 3: date 2021-03-15 follows 2021-02-01, .*month st"):
        infer_frequency(stray, "data.csv")
    with pytest.raises(UserError, match="business days"):  # a holiday on Thursday
        infer_frequency(dates("2021-12-20", "2021-12-21", "2021-12-22", "2021-12-24", "2021-12-27"))


def test_time_zones_keep_midnight_for_days_and_absolute_hours():
    cet, cest = timezone(timedelta(hours=1)), timezone(timedelta(hours=2))
    days = [
        datetime(2021, 3, 27, tzinfo=cet),
        datetime(2021, 3, 28, tzinfo=cet),
        datetime(2021, 3, 29, tzinfo=cest),
    ]  # summer time starts on the 28th
    frequency = infer_frequency(days)
    assert frequency.name == "daily"
    assert next_dates(days, 1, frequency) == [datetime(2021, 3, 30, tzinfo=cest)]
    hours = [datetime(2021, 3, 28, 1, tzinfo=cet), datetime(2021, 3, 28, 3, tzinfo=cest)]
    frequency = infer_frequency(hours)  # one hour apart in absolute time
    assert frequency.name == "hourly"
    assert format_dates(next_dates(hours, 1, frequency)) == ["2021-03-28 04:00:00+02:00"]


@pytest.mark.parametrize(
    "texts, unit",
    [
        (["2021-12-31 22:00", "2021-12-31 23:00"], "hours"),
        (["2021-01-01 00:00", "2021-01-01 00:15", "2021-01-01 00:30"], "steps"),
        (["2021-02-26", "2021-02-27"], "days"),
        (["2021-12-16", "2021-12-17", "2021-12-20"], "business days"),
        (["2021-12-05", "2021-12-12"], "weeks"),
        (["2021-01-31", "2021-02-28", "2021-03-31"], "months"),
        (["2021-03-31", "2021-06-30", "2021-09-30"], "quarters"),
        (["2020-01-01", "2021-01-01"], "years"),
    ],
)
def test_a_frequency_names_its_steps(texts, unit):
    assert infer_frequency(dates(*texts)).unit == unit


def test_dates_print_as_given():
    assert format_dates(dates("2021-12-01")) == ["2021-12-01"]
    assert format_dates(dates("2021-12-01", "2021-12-01 13:00")) == [
        "2021-12-01 00:00:00",
        "2021-12-01 13:00:00",
    ]
    # as a date of the file writes them: separator, minutes or seconds, fraction, UTC as Z
    hours = dates("2021-12-01 13:00+00:00", "2021-12-01 13:00:30+00:00")
    assert format_dates(hours, "2021-11-30T23:00Z") == [
        "2021-12-01T13:00Z",
        "2021-12-01T13:00:30Z",
    ]  # seconds kept where there are some
    assert format_dates(hours, "2021-11-30 23:00:00.000+00:00") == [
        "2021-12-01 13:00:00.000+00:00",
        "2021-12-01 13:00:30.000+00:00",
    ]
    assert format_dates(hours, "2021/11/30 23:00") == [  # not ISO: the default
        "2021-12-01 13:00:00+00:00",
        "2021-12-01 13:00:30+00:00",
    ]
    assert format_dates(dates("2021-12-01"), "2021-11-30T00:00:00") == ["2021-12-01"]


def test_too_few_dates_and_the_year_9999():
    with pytest.raises(UserError, match="at least two dates"):
        infer_frequency(dates("2021-01-01"))
    series = dates("9999-12-30", "9999-12-31")
    with pytest.raises(UserError, match="past the year 9999"):
        next_dates(series, 2, infer_frequency(series))
    series = dates("9999-11-01", "9999-12-01")
    with pytest.raises(UserError, match="past the year 9999"):
        next_dates(series, 2, infer_frequency(series))
