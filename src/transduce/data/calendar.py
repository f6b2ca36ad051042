"""A series' calendar: its frequency, inferred from its dates, and the dates that follow it.

Frequencies: a fixed step (every 15 minutes, hourly, daily, weekly, ...), business days
(Monday to Friday), monthly, quarterly and yearly (on month starts, month ends, or one day of
the month). The dates after a series are stepped by pandas' offsets; the inference is this
module's own, so that a gap is an error naming its row (``pandas.infer_freq`` only says
that there is none). Steps of a day or more are calendar steps, counted on the wall clock, so a
daily series in a time zone with summer time stays at midnight; shorter steps are absolute
time. A series whose dates skip a step has a gap, which is an error naming its row: a
forecast after it would otherwise be dated on a step the series does not have.
"""

from __future__ import annotations

import calendar
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

from transduce.errors import UserError

DAY = timedelta(days=1)
# The named frequencies: (adjective, what a count of their steps is called).
MONTHLY = {1: ("monthly", "months"), 3: ("quarterly", "quarters"), 12: ("yearly", "years")}
NAMED_STEPS = {
    timedelta(hours=1): ("hourly", "hours"),
    DAY: ("daily", "days"),
    7 * DAY: ("weekly", "weeks"),
}


@dataclass(frozen=True)
class Frequency:
    """How a series steps. ``step``: a fixed step (``months`` 0); ``months``: 1, 3 or 12 for
    calendar months, with ``anchor`` "start" (the 1st), "end" (the last day) or a day of the
    month (an int, clamped to short months); ``business``: Monday to Friday, one day apart."""

    step: timedelta | None = None
    months: int = 0
    anchor: str | int = "start"
    business: bool = False

    @property
    def name(self) -> str:
        if self.business:
            return "business days"
        if self.months:
            where = {"start": "month starts", "end": "month ends"}.get(
                self.anchor, f"day {self.anchor}"
            )  # type: ignore[arg-type]
            return f"{MONTHLY[self.months][0]} ({where})"
        return _step_name(self.step)

    @property
    def offset(self):
        """The pandas offset that steps it: calendar months on their anchor day (``day``
        past a short month's end is its last), business days, whole days on the wall clock,
        and shorter steps in absolute time."""
        import pandas as pd

        if self.months:
            day = {"start": 1, "end": 31}.get(self.anchor, self.anchor)
            return pd.DateOffset(months=self.months, day=day)
        if self.business:
            return pd.offsets.BDay()
        if self.step % DAY == timedelta(0):
            return pd.DateOffset(days=self.step // DAY)
        return pd.Timedelta(self.step)

    @property
    def unit(self) -> str:
        """What a count of steps is called: "hours", "business days", "quarters", ...;
        "steps" for a step without a name."""
        if self.business:
            return "business days"
        if self.months:
            return MONTHLY[self.months][1]
        return NAMED_STEPS[self.step][1] if self.step in NAMED_STEPS else "steps"


def _step_name(step: timedelta | None) -> str:
    if step in NAMED_STEPS:
        return NAMED_STEPS[step][0]
    seconds = int(step.total_seconds()) if step else 0
    for unit, size in (("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds and seconds % size == 0:
            return f"every {seconds // size} {unit}"
    return f"every {seconds} seconds"


def _wall(date: datetime) -> datetime:
    return date.replace(tzinfo=None)


def _months(a: datetime, b: datetime) -> int:
    return (b.year - a.year) * 12 + b.month - a.month


def _last_day(date: datetime) -> int:
    return calendar.monthrange(date.year, date.month)[1]


def infer_frequency(
    dates: Sequence[datetime], where: str = "the series", lines: Sequence[int] | None = None
) -> Frequency:
    """The frequency of strictly increasing ``dates``.

    Raises:
        UserError: fewer than two dates, or a gap or irregular step, naming the row
            (``where:LINE`` with ``lines``, the file's line of each date).
    """
    if len(dates) < 2:
        raise UserError(f"{where}: need at least two dates to know the series' time step")
    wall = [_wall(d) for d in dates]
    gaps = [b - a for a, b in zip(wall, wall[1:])]
    usual = Counter(gaps).most_common(1)[0][0]
    if usual >= 28 * DAY:
        return _monthly(dates, where, lines)
    if usual < DAY:  # absolute time: an hour is an hour across a clock change
        gaps = [b - a for a, b in zip(dates, dates[1:])]
        usual = Counter(gaps).most_common(1)[0][0]
    if usual == DAY and all(d.weekday() < 5 for d in dates) and any(g == 3 * DAY for g in gaps):
        for i, (a, g) in enumerate(zip(dates, gaps)):
            if g != (3 * DAY if a.weekday() == 4 else DAY):
                _gap(dates, lines, where, i + 1, "business days (Monday to Friday)")
        return Frequency(step=DAY, business=True)
    for i, g in enumerate(gaps):
        if g != usual:
            _gap(dates, lines, where, i + 1, _step_name(usual))
    return Frequency(step=usual)


def _monthly(dates: Sequence[datetime], where: str, lines) -> Frequency:
    steps = [_months(a, b) for a, b in zip(dates, dates[1:])]
    months = Counter(steps).most_common(1)[0][0]
    if months not in MONTHLY:
        raise UserError(
            f"{where}: the dates step by {months} months; supported calendar "
            "steps are 1 (monthly), 3 (quarterly) and 12 (yearly) months"
        )
    # the anchor most dates keep (month starts first, then ends, then the latest day,
    # which short months clamp), so that a stray date is the one named
    anchors: list[str | int] = ["start", "end", *sorted({d.day for d in dates}, reverse=True)]
    anchor = max(anchors, key=lambda a: sum(d.day == _day(d, a) for d in dates))
    name = Frequency(months=months, anchor=anchor).name
    for i, (step, date) in enumerate(zip(steps, dates[1:])):
        if step != months or date.day != _day(date, anchor) or date.time() != dates[0].time():
            _gap(dates, lines, where, i + 1, name)
    return Frequency(months=months, anchor=anchor)


def _day(date: datetime, anchor: str | int) -> int:
    if anchor == "start":
        return 1
    if anchor == "end":
        return _last_day(date)
    return min(int(anchor), _last_day(date))


def _gap(dates, lines, where: str, i: int, name: str) -> None:
    line = f"{where}:{lines[i]}" if lines else f"{where}, row {i + 1}"
    raise UserError(
        f"{line}: date {format_dates([dates[i]])[0]} follows "
        f"{format_dates([dates[i - 1]])[0]}, but the series is {name}; fill "
        "the gap (or drop the rows before it) so that every step is present"
    )


def next_dates(dates: Sequence[datetime], count: int, frequency: Frequency) -> list[datetime]:
    """The ``count`` dates after the last of ``dates`` at ``frequency``, stepped by its
    pandas offset (:attr:`Frequency.offset`; a time zone and the time of day are kept)."""
    import pandas as pd  # here: the translation commands never need it

    last = dates[-1]
    try:
        following = pd.date_range(last, periods=count + 1, freq=frequency.offset, unit="us")
        return [d.to_pydatetime() for d in following[1:]]
    except (OverflowError, ValueError, pd.errors.OutOfBoundsDatetime):
        raise UserError(
            f"the {count} dates after {last} go past the year 9999, the last "
            "date Python can hold; check the file's dates"
        ) from None


def format_dates(dates: Sequence[datetime], like: str = "") -> list[str]:
    """Dates as text: ``2021-12-01`` when every one is a midnight without a time zone
    (daily and longer steps); else ISO 8601 written as ``like`` (a date as the series' file
    writes it) is: ``T`` or a space before the time, minutes or seconds (and as many digits
    of a fraction), ``Z`` for UTC. Without an ISO ``like``, ``2021-12-01 13:00:00`` (with
    its offset, if any). A date that style would round is written whole."""
    if all(d.tzinfo is None and d.time() == datetime.min.time() for d in dates):
        return [d.date().isoformat() for d in dates]
    sep, timespec, zulu = _iso_style(like)
    out = []
    for d in dates:
        text = d.isoformat(sep=sep, timespec=timespec)
        if datetime.fromisoformat(text) != d:  # seconds where the file writes minutes
            text = d.isoformat(sep=sep)
        if zulu and text.endswith("+00:00"):
            text = text[:-6] + "Z"
        out.append(text)
    return out


ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}([T ])\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?")


def _iso_style(like: str) -> tuple[str, str, bool]:
    """The separator, ``timespec`` and whether UTC is ``Z``, of an ISO 8601 date and time."""
    match = ISO_TIME.fullmatch(like.strip())
    if not match:
        return " ", "auto", False
    sep, seconds, fraction, zone = match.groups()
    if fraction:
        timespec = "milliseconds" if len(fraction) == 4 else "microseconds"
    else:
        timespec = "seconds" if seconds else "minutes"
    return sep, timespec, zone == "Z"
