"""Absolute timestamps for glog prefixes, which carry no year and no time zone.

``V1206 15:18:15.925000`` is month 12, day 06, local time of the machine that
wrote the log. The same file also holds epoch timestamps (chromium ``ts`` in
µs, ``compilation_metrics.start_time`` in s). One pair (glog time, epoch time)
of the same record fixes both the year and the UTC offset: the year is the one
that puts the glog date within a day of the epoch date, and the offset is the
difference rounded to 15 minutes. Rows are therefore stamped at flush time,
once the file has revealed its year (tlparse assumes the current year: a
December log read in January lands in the wrong year).

A month that goes backwards (December → January) inside one file bumps the
year. Without any epoch time in the file, the year is taken from the file's
modification time and the offset is assumed to be 0 (UTC).
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone

_DAY_US = 86_400_000_000
_QUARTER_US = 900_000_000
_EPOCH_ORD = date(1970, 1, 1).toordinal()
_TIME = re.compile(r"(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?$")


def time_of_day_us(text: str) -> int | None:
    """``HH:MM:SS[.fraction]`` (a log line's local time) as µs since midnight; None if it is not one.
    A fraction finer than µs is cut to µs."""
    m = _TIME.match(text)
    if m is None:
        return None
    hh, mi, ss, frac = m.groups()
    if int(hh) > 23 or int(mi) > 59 or int(ss) > 60:
        return None
    return ((int(hh) * 60 + int(mi)) * 60 + int(ss)) * 1_000_000 + int(
        (frac or "0")[:6].ljust(6, "0")
    )


class TimeBase:
    __slots__ = ("year", "offset_us", "bump", "_last_mmdd", "_days", "fallback_year", "approximate")

    def __init__(self, mtime_s: float | None = None):
        self.year: int | None = None  # year of the first record (bump 0)
        self.offset_us = 0  # local - utc
        self.bump = 0  # years passed since the first record (Dec -> Jan)
        self._last_mmdd = 0
        self._days: dict[int, int | None] = {}
        self.fallback_year = (
            datetime.fromtimestamp(mtime_s, tz=timezone.utc).year if mtime_s else None
        )
        self.approximate = False

    @property
    def calibrated(self) -> bool:
        return self.year is not None

    def key(self, mmdd: int) -> int:
        """The row key to store for a record: bumps the year on a Dec → Jan wrap."""
        if mmdd < self._last_mmdd - 600:  # e.g. 1231 -> 0101
            self.bump += 1
        self._last_mmdd = mmdd
        return self.bump * 10000 + mmdd

    def observe(self, key: int, tod_us: int, epoch_us: float) -> None:
        """Calibrate from one record whose glog time and epoch time are known."""
        if self.year is not None or not epoch_us or epoch_us != epoch_us:
            return
        bump, mmdd = divmod(key, 10000)
        try:
            utc_year = datetime.fromtimestamp(epoch_us / 1e6, tz=timezone.utc).year
        except (OverflowError, OSError, ValueError):
            return  # not a time (a damaged or hostile value): wait for another record
        if not 1 < utc_year < 9999:
            return
        for y in (utc_year, utc_year - 1, utc_year + 1):
            local = self._local_us(y, mmdd, tod_us)
            if local is not None and abs(local - epoch_us) < 1.5 * _DAY_US:
                self.year = y - bump
                self.offset_us = round((local - epoch_us) / _QUARTER_US) * _QUARTER_US
                self._days.clear()
                return

    def fallback(self, first_key: int) -> None:
        """No epoch time seen: use the file's mtime year, assume UTC."""
        if self.year is None:
            self.year = self.fallback_year or datetime.now(timezone.utc).year
            self.approximate = True

    def fallback_from_mtime(self, mmdd: int, mtime_s: float | None) -> None:
        """A text capture (no epoch time, ever): the year of its first line is its file's mtime year, or
        the year before when that date lies after the mtime (a December log last written in January)."""
        if self.year is not None:
            return
        self.fallback(0)
        if mtime_s:
            mt = datetime.fromtimestamp(mtime_s, tz=timezone.utc).date()
            try:
                if date(mt.year, mmdd // 100, mmdd % 100) > mt + timedelta(days=1):
                    self.year = mt.year - 1
            except ValueError:
                pass

    @staticmethod
    def _local_us(year: int, mmdd: int, tod_us: int) -> int | None:
        try:
            d = date(year, mmdd // 100, mmdd % 100)
        except (ValueError, OverflowError):
            return None
        return (d.toordinal() - _EPOCH_ORD) * _DAY_US + tod_us

    def to_utc(self, key: int, tod_us: int) -> int | None:
        """Epoch µs (UTC) of a row key + time of day; None if the date is impossible."""
        day = self._days.get(key, -1)
        if day == -1:
            bump, mmdd = divmod(key, 10000)
            start = self._local_us(self.year + bump, mmdd, 0) if self.year is not None else None
            day = None if start is None else start - self.offset_us
            self._days[key] = day
        return None if day is None else day + tod_us
