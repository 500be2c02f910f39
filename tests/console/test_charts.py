"""The chart builders are pure: their SVG is parsed here, no browser needed."""

import datetime as dt
import xml.etree.ElementTree as ET

import pytest

from apps.console.charts import Bar, Series, axis_top, bar_chart_svg, bucket_labels, line_chart_svg, nice_ceiling

SVG = "{http://www.w3.org/2000/svg}"


def parse(markup) -> ET.Element:
    return ET.fromstring(str(markup))  # noqa: S314 - our own markup, built by the code under test


def _chart(**overrides):
    arguments = {
        "title": "PutRecords, last hour",
        "x_labels": ["10:00", "10:01", "10:02", "10:03"],
        "series": [
            Series("allowed", "allowed", "#1b7837", [5, 10, 0, 20]),
            Series("denied", "denied", "#c51b7d", [0, 1, 0, 3]),
        ],
        "y_label": "checks per minute",
        "x_label": "time (UTC)",
    }
    return parse(line_chart_svg(**{**arguments, **overrides}))


@pytest.mark.parametrize(
    ("value", "expected"), [(0, 1), (1, 1), (3, 5), (7, 10), (11, 20), (24, 25), (26, 50), (999, 1000), (1001, 2000)]
)
def test_nice_ceiling_rounds_up_to_1_2_2_5_or_5_times_a_power_of_ten(value, expected) -> None:
    assert nice_ceiling(value) == expected


@pytest.mark.parametrize(("peak", "top"), [(0, 4), (3, 4), (5, 8), (20, 20), (21, 40), (100, 100), (101, 200)])
def test_the_axis_top_is_four_round_steps_at_or_above_the_peak(peak, top) -> None:
    assert axis_top(peak) == top


def test_a_line_chart_draws_one_polyline_per_series_with_its_total() -> None:
    svg = _chart()

    lines = {line.get("data-series"): line for line in svg.iter(f"{SVG}polyline")}

    assert set(lines) == {"allowed", "denied"}
    assert lines["allowed"].get("data-total") == "35"
    assert len(lines["allowed"].get("points").split()) == 4


def test_the_highest_point_reaches_the_top_of_the_axis_and_zero_the_bottom() -> None:
    svg = _chart()
    points = [tuple(map(float, pair.split(","))) for pair in next(svg.iter(f"{SVG}polyline")).get("points").split()]
    ys = [y for _, y in points]
    tick_texts = [text.text for text in svg.iter(f"{SVG}text") if text.get("class") == "y-tick"]

    assert tick_texts == ["0", "5", "10", "15", "20"]
    assert min(ys) < max(ys)
    assert points[3][1] == min(ys), "20 is the peak: the highest point"
    assert points[2][1] == max(ys), "0 sits on the axis"


def test_a_chart_has_a_title_a_legend_and_labelled_axes_for_every_reader() -> None:
    svg = _chart()
    texts = [text.text for text in svg.iter(f"{SVG}text")]

    assert svg.get("role") == "img"
    assert svg.find(f"{SVG}title").text == "PutRecords, last hour"
    assert "checks per minute" in texts
    assert "time (UTC)" in texts
    assert {"allowed", "denied"} <= set(texts)
    assert {"10:00", "10:02", "10:03"} <= set(texts)


def test_text_in_a_chart_is_escaped() -> None:
    svg = _chart(title="<script>alert(1)</script>")
    assert svg.find(f"{SVG}title").text == "<script>alert(1)</script>"
    assert not list(svg.iter("script"))
    assert not list(svg.iter(f"{SVG}script"))


def test_an_all_zero_chart_still_draws_flat_lines_on_the_axis() -> None:
    svg = _chart(series=[Series("allowed", "allowed", "#000", [0, 0, 0])], x_labels=["a", "b", "c"])
    line = next(svg.iter(f"{SVG}polyline"))
    assert line.get("data-total") == "0"
    assert len({pair.split(",")[1] for pair in line.get("points").split()}) == 1


def test_bars_are_as_long_as_their_values_and_say_them() -> None:
    bars = [Bar("acct-1", 40), Bar("acct-2", 10)]
    svg = parse(bar_chart_svg(title="Throttled", bars=bars, color="#c00", value_label="denied"))
    widths = {group.get("data-label"): float(group.find(f"{SVG}rect").get("width")) for group in svg.iter(f"{SVG}g")}
    assert widths["acct-1"] == pytest.approx(4 * widths["acct-2"])


def test_no_bars_is_a_sentence_not_an_empty_picture() -> None:
    assert "nothing to show" in str(bar_chart_svg(title="Throttled", bars=[], color="#c00", value_label="denied"))


def test_bucket_labels_are_times_for_minutes_and_dates_for_days() -> None:
    start = dt.datetime(2026, 3, 5, 9, 30, tzinfo=dt.UTC)
    assert bucket_labels([start], dt.timedelta(minutes=1)) == ["09:30"]
    assert bucket_labels([start], dt.timedelta(days=1)) == ["Mar 05"]


def test_a_legend_too_wide_for_one_row_wraps_and_the_chart_grows_to_make_room() -> None:
    labels = ["a long label for the first line", "a long label for the second", "a long label for the third"]
    series = [Series(f"s{n}", label, "#000", [1, 2]) for n, label in enumerate(labels)]

    one_row = _chart(series=series[:1], x_labels=["a", "b"])
    wrapped = _chart(series=series, x_labels=["a", "b"])

    legend_ys = sorted({float(text.get("y")) for text in wrapped.iter(f"{SVG}text") if text.text in labels})
    assert len(legend_ys) == 2, "two rows"
    height = float(one_row.get("viewBox").split()[3])
    assert float(wrapped.get("viewBox").split()[3]) == height + legend_ys[1] - legend_ys[0]
    shifted = next(group for group in wrapped.iter(f"{SVG}g") if group.get("transform"))
    assert shifted.get("transform") == f"translate(0 {legend_ys[1] - legend_ys[0]:g})"
    assert len(list(shifted.iter(f"{SVG}polyline"))) == 3, "the plot moves down below the legend"
