"""Reading the platform's traffic: every customer's checks per time bucket, for the whole platform and grouped by
operation (or by service, once usage rows record it), from the same minute / hour / day tables as a customer's page.

Pure reading and arithmetic; apps/console/traffic_page.py turns it into charts, tables and the live JSON.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.db.models import Sum

from apps.usage.models import UsageMinute
from apps.usage.selectors import USAGE_RANGES, USAGE_TABLES
from apps.usage.vocabulary import REPORTED as COUNTERS
from apps.usage.vocabulary import checks as row_checks

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
STEPS = {"minute": dt.timedelta(minutes=1), "hour": dt.timedelta(hours=1), "day": dt.timedelta(days=1)}
# A custom range reads minutes up to CUSTOM_MINUTES_UP_TO, hours up to CUSTOM_HOURS_UP_TO, days beyond: a chart of
# at most a few hundred points, read from a table that keeps that far back (minutes are purged first).
CUSTOM_MINUTES_UP_TO = dt.timedelta(hours=6)
CUSTOM_HOURS_UP_TO = dt.timedelta(days=14)
CUSTOM_LONGEST = dt.timedelta(days=3 * 366)
# Smallest first: a rate is shown per second when the busiest bucket reaches 1 per second, otherwise per minute, ...
RATE_UNITS = (("second", 1), ("minute", 60), ("hour", 3600), ("day", 86400))
# How the per-service section names checks made without a service key (the admin's session, usage of before).
NO_SERVICE = "(no service)"


class RangeInvalid(ValueError):
    """A custom range the page cannot show; the message is a sentence for the page."""


@dataclass(frozen=True, slots=True)
class TrafficWindow:
    """[start, end) in buckets of `granularity`; `key` is hour, day, 30d or custom."""

    key: str
    label: str
    granularity: str
    start: dt.datetime
    end: dt.datetime

    @property
    def step(self) -> dt.timedelta:
        return STEPS[self.granularity]

    @property
    def buckets(self) -> list[dt.datetime]:
        count = (self.end - self.start) // self.step
        return [self.start + self.step * index for index in range(count)]

    @property
    def live(self) -> bool:
        """Whether the range ends now (a preset), so refreshing it can show newer minutes."""
        return self.key != "custom"


Lines = dict[str, list[int]]  # counter -> one count per bucket


@dataclass(frozen=True, slots=True)
class Traffic:
    window: TrafficWindow
    platform: Lines
    groups: dict[str, Lines]  # operation (or service) -> its lines, busiest first

    def totals(self, lines: Lines) -> dict[str, int]:
        return totals(lines)


def totals(lines: Lines) -> dict[str, int]:
    """Each counter summed over the range."""
    return {counter: sum(values) for counter, values in lines.items()}


def preset_window(key: str, now: dt.datetime) -> TrafficWindow:
    """One of the customer page's ranges (hour, day, 30d), ending with the bucket `now` falls in."""
    usage_range = USAGE_RANGES[key]
    start, end = usage_range.bounds(now)
    return TrafficWindow(key, usage_range.label, usage_range.granularity, start, end)


def custom_window(start: dt.datetime, end: dt.datetime) -> TrafficWindow:
    """[start, end) widened to whole buckets of the granularity its length calls for; RangeInvalid otherwise."""
    if end <= start:
        raise RangeInvalid(f"The range ends ({end:%Y-%m-%d %H:%M}) before it starts ({start:%Y-%m-%d %H:%M}).")
    span = end - start
    if span > CUSTOM_LONGEST:
        raise RangeInvalid(f"A custom range covers at most {CUSTOM_LONGEST.days} days; this one {span.days}.")
    granularity = "minute" if span <= CUSTOM_MINUTES_UP_TO else "hour" if span <= CUSTOM_HOURS_UP_TO else "day"
    step = STEPS[granularity]
    first = start - (start - EPOCH) % step
    last = end + (-(end - EPOCH)) % step
    label = f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
    return TrafficWindow("custom", label, granularity, first, last)


def service_recorded() -> bool:
    """Whether usage rows carry the calling service (issue 18 item 6: they do since usage migration 0010)."""
    return any(field.name == "service" for field in UsageMinute._meta.get_fields())


def traffic_read(*, window: TrafficWindow, by: str = "operation") -> Traffic:
    """Every counter per bucket in `window`, summed over customers: for the platform, and per `by` value (for
    "service", checks made without one are NO_SERVICE's)."""
    rows = (
        USAGE_TABLES[window.granularity]
        .objects.filter(bucket__gte=window.start, bucket__lt=window.end)
        .values_list("bucket", by)
        .annotate(**{f"sum_{counter}": Sum(counter) for counter in COUNTERS})
        .order_by()
    )
    size = len(window.buckets)
    platform: Lines = {counter: [0] * size for counter in COUNTERS}
    groups: dict[str, Lines] = {}
    for bucket, name, *counts in rows:
        index = (bucket - window.start) // window.step
        name = name or (NO_SERVICE if by == "service" else name)
        lines = groups.setdefault(name, {counter: [0] * size for counter in COUNTERS})
        for counter, count in zip(COUNTERS, counts, strict=True):
            lines[counter][index] += count or 0
            platform[counter][index] += count or 0
    busiest = sorted(groups.items(), key=lambda item: (-checks(item[1]), item[0]))
    return Traffic(window, platform, dict(busiest))


def checks(lines: Lines) -> int:
    """Every check answered over the range (vocabulary.checks: each check is in exactly one counter)."""
    return row_checks(totals(lines))


def rate_unit(peak: int, step: dt.timedelta) -> tuple[str, int]:
    """The unit to show rates in: the smallest (per second first) in which the busiest bucket reaches 1, and never
    longer than a bucket. (name, seconds)."""
    step_s = int(step.total_seconds())
    for name, seconds in RATE_UNITS:
        if seconds >= step_s or peak * seconds >= step_s:
            return name, seconds
    return RATE_UNITS[-1]
