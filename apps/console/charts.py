"""Charts as inline SVG, built by pure functions: no JavaScript, no CDN, readable without a browser.

The platform is self-hosted, often on a closed network, so the admin draws its own pictures. Every chart
carries a <title> and <desc> for screen readers and sits beside a table with the same numbers.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

from apps.usage.vocabulary import COUNTERS, SESSION_MS

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 34, 40
BAR_HEIGHT, BAR_GAP, BAR_LABEL_WIDTH = 18, 6, 160
Y_TICKS = 4


@dataclass(frozen=True, slots=True)
class Series:
    """One line of a chart: `key` names it in markup (data-series), `label` in the legend."""

    key: str
    label: str
    color: str
    values: Sequence[float]  # whole counts, or seconds held to the millisecond
    dashed: bool = False


# Session time (seconds the customer's leases were held, measured from their lifetimes) is not a count of checks:
# it gets a chart of its own, under the checks chart, with its own axis. Its line is keyed by the usage field it
# draws, as the counters' lines are.
SESSION_TIME_STYLE = (SESSION_MS, "session time (seconds leases were held)", "#01665e")
LEGEND_ROW = 16


def counter_series(
    lines: Mapping[str, Sequence[int]], *, always: Collection[str], scale: Callable[[int], float] | None = None
) -> list[Series]:
    """A line per reported usage counter in `lines`, as the vocabulary names and colours it (apps/usage/vocabulary.py),
    dashed when it counts a part of the checks again; those in `always` are drawn even when all zero, the others
    only when not. `scale` turns each count into what is plotted (a rate), else the counts are."""
    return [
        Series(
            counter.name,
            counter.label,
            counter.colour,
            [scale(n) for n in lines[counter.name]] if scale else lines[counter.name],
            dashed=counter.part,
        )
        for counter in COUNTERS
        if counter.reported and counter.name in lines and (counter.name in always or any(lines[counter.name]))
    ]


def nice_ceiling(value: float) -> int:
    """The smallest whole 1, 2, 2.5 or 5 × 10^k at or above `value`: a round step for an axis (1 for ≤ 1)."""
    if value <= 1:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if step * power >= value and (step * power) % 1 == 0:
            return int(step * power)
    raise AssertionError("unreachable: 10 × power is always enough")


def number_text(value: float, *, grouped: bool = True) -> str:
    """A count as it is ('1,234'), seconds to the millisecond without trailing zeros ('12.5', '0.001')."""
    if isinstance(value, int):
        return f"{value:,}" if grouped else str(value)
    text = f"{value:,.3f}" if grouped else f"{value:.3f}"
    return text.rstrip("0").rstrip(".")


def axis_top(peak: float) -> int:
    """The top of a y axis showing `peak`: Y_TICKS round steps (at least 1 each)."""
    return nice_ceiling(peak / Y_TICKS) * Y_TICKS


def _x(index: int, count: int) -> float:
    span = WIDTH - LEFT - RIGHT
    return LEFT + (span * index / (count - 1) if count > 1 else span / 2)


def _y(value: float, top: int) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - value / top)


def _legend(series: Sequence[Series]) -> tuple[str, int]:
    """The legend's markup, and how far it reaches below its first row: items wrap onto new rows."""
    parts, x, y = [], LEFT, 0
    for line in series:
        width = 30 + 7 * len(line.label)
        if x > LEFT and x + width > WIDTH - RIGHT:
            x, y = LEFT, y + LEGEND_ROW
        dash = ' stroke-dasharray="5 3"' if line.dashed else ""
        parts.append(
            f'<g class="legend-item"><line x1="{x}" y1="{14 + y}" x2="{x + 18}" y2="{14 + y}" stroke="{line.color}" '
            f'stroke-width="3"{dash}/><text x="{x + 22}" y="{18 + y}">{escape(line.label)}</text></g>'
        )
        x += width
    return "".join(parts), y


def _y_axis(top: int, unit_label: str) -> str:
    parts = []
    for tick in range(Y_TICKS + 1):
        value = top * tick // Y_TICKS
        y = _y(value, top)
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text class="y-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{value:,}</text>'
        )
    middle = (TOP + HEIGHT - BOTTOM) / 2
    parts.append(
        f'<text class="axis-label" x="12" y="{middle:.1f}" transform="rotate(-90 12 {middle:.1f})" '
        f'text-anchor="middle">{escape(unit_label)}</text>'
    )
    return "".join(parts)


def _x_axis(labels: Sequence[str], axis_label: str) -> str:
    count = len(labels)
    base = HEIGHT - BOTTOM
    parts = [f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#888"/>']
    for index in sorted({0, count // 2, count - 1}) if count else []:
        # The end labels lean inwards so they are never cut off at the chart's edges.
        anchor = "start" if index == 0 and count > 1 else "end" if index == count - 1 and count > 1 else "middle"
        parts.append(
            f'<text class="x-tick" x="{_x(index, count):.1f}" y="{base + 16}" text-anchor="{anchor}">'
            f"{escape(labels[index])}</text>"
        )
    parts.append(
        f'<text class="axis-label" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" y="{HEIGHT - 4}" text-anchor="middle">'
        f"{escape(axis_label)}</text>"
    )
    return "".join(parts)


def _polyline(line: Series, top: int) -> str:
    count = len(line.values)
    points = " ".join(f"{_x(i, count):.1f},{_y(v, top):.1f}" for i, v in enumerate(line.values))
    dash = ' stroke-dasharray="5 3"' if line.dashed else ""
    total = number_text(sum(line.values), grouped=False)
    return (
        f'<polyline data-series="{escape(line.key)}" data-total="{total}" fill="none" '
        f'stroke="{line.color}" stroke-width="2"{dash} points="{points}"/>'
    )


def line_chart_svg(
    *, title: str, x_labels: Sequence[str], series: Sequence[Series], y_label: str, x_label: str, description: str = ""
) -> SafeString:
    """An SVG line chart: one polyline per series over `x_labels`, with a legend and labelled axes.

    Each polyline says its series and total in data-series / data-total, so tests (and scrapers) can
    read what was drawn.
    """
    top = axis_top(max((max(line.values, default=0) for line in series), default=0))
    slug = "".join(char if char.isalnum() else "-" for char in title.lower())
    totals = ", ".join(f"{line.label}: {number_text(sum(line.values))}" for line in series)
    legend, extra = _legend(series)
    plot = "".join([_y_axis(top, y_label), _x_axis(x_labels, x_label), *(_polyline(line, top) for line in series)])
    body = "".join(
        [
            f"<title id='{slug}-title'>{escape(title)}</title>",
            f"<desc id='{slug}-desc'>{escape(description or totals)}</desc>",
            legend,
            f'<g transform="translate(0 {extra})">{plot}</g>' if extra else plot,
        ]
    )
    return mark_safe(  # noqa: S308 - every text above went through escape(); numbers are formatted here
        f'<svg class="usage-chart" role="img" aria-labelledby="{slug}-title {slug}-desc" '
        f'viewBox="0 0 {WIDTH} {HEIGHT + extra}" width="100%" preserveAspectRatio="xMidYMid meet" '
        f'xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">{body}</svg>'
    )


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: int
    note: str = ""


def bar_chart_svg(*, title: str, bars: Sequence[Bar], color: str, value_label: str) -> SafeString:
    """Horizontal bars, longest first as given, each labelled with its name and value (empty: a sentence)."""
    if not bars:
        return mark_safe(f'<p class="chart-empty">{escape(title)}: nothing to show.</p>')  # noqa: S308 - escaped
    top = max(bar.value for bar in bars) or 1
    span = WIDTH - BAR_LABEL_WIDTH - 190  # room for the value and its note after the longest bar
    height = TOP + len(bars) * (BAR_HEIGHT + BAR_GAP)
    rows = []
    for index, bar in enumerate(bars):
        y = TOP + index * (BAR_HEIGHT + BAR_GAP)
        length = max(1.0, span * bar.value / top) if bar.value else 0.0
        note = f" ({escape(bar.note)})" if bar.note else ""
        rows.append(
            f'<g class="bar" data-label="{escape(bar.label)}" data-value="{bar.value}">'
            f'<text x="{BAR_LABEL_WIDTH - 6}" y="{y + 13}" text-anchor="end">{escape(bar.label)}</text>'
            f'<rect x="{BAR_LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{BAR_HEIGHT}" fill="{color}"/>'
            f'<text x="{BAR_LABEL_WIDTH + length + 6:.1f}" y="{y + 13}">{bar.value:,}{note}</text></g>'
        )
    slug = "".join(char if char.isalnum() else "-" for char in title.lower())
    return mark_safe(  # noqa: S308 - every text went through escape()
        f'<svg class="bar-chart" role="img" aria-labelledby="{slug}-title" viewBox="0 0 {WIDTH} {height}" '
        f'width="100%" xmlns="http://www.w3.org/2000/svg" font-size="11" font-family="sans-serif">'
        f"<title id='{slug}-title'>{escape(title)}</title>"
        f'<text x="{BAR_LABEL_WIDTH}" y="18" font-weight="bold">{escape(value_label)}</text>{"".join(rows)}</svg>'
    )


def bucket_labels(buckets: Sequence[dt.datetime], step: dt.timedelta) -> list[str]:
    """Axis labels for bucket starts: times for minutes and hours, dates for days (UTC)."""
    if step >= dt.timedelta(days=1):
        return [f"{bucket:%b %d}" for bucket in buckets]
    return [f"{bucket:%H:%M}" for bucket in buckets]
