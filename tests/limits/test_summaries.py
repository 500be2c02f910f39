"""Plain-language limit summaries, built from unsaved limits: no database needed."""

import pytest

from apps.limits.models import Algorithm, Limit
from apps.limits.summaries import limit_summary, period_phrase


def _limit(**fields: object) -> Limit:
    defaults: dict[str, object] = {
        "algorithm": "fixed_window",
        "quantity": 10,
        "period_seconds": 60,
        "key_by": ["customer"],
        "match": {},
        "mode": "enforce",
    }
    return Limit(**{**defaults, **fields})


@pytest.mark.parametrize(
    ("fields", "summary"),
    [
        pytest.param(
            {"algorithm": Algorithm.CALENDAR, "period_seconds": None, "calendar_period": "day",
             "key_by": ["customer", "resource"]},
            "10 requests per day per customer+resource, calendar, enforce",
            id="calendar",
        ),
        pytest.param(
            {"algorithm": "token_bucket", "quantity": 1000, "period_seconds": 1, "burst": 2000,
             "unit": "records", "key_by": ["customer", "resource"]},
            "1000 records per second per customer+resource, token bucket (burst 2000), enforce",
            id="token-bucket",
        ),
        pytest.param(
            {"algorithm": "leaky_bucket", "quantity": 50, "period_seconds": 300, "mode": "disabled"},
            "50 requests per 5 minutes per customer, leaky bucket (burst 50), disabled",
            id="leaky-bucket-burst-defaults-to-quantity",
        ),
        pytest.param(
            {"quantity": 100, "key_by": ["ip"], "mode": "shadow"},
            "100 requests per minute per ip, fixed window, shadow",
            id="fixed-window",
        ),
        pytest.param(
            {"algorithm": "sliding_window", "quantity": 600, "period_seconds": 3600, "key_by": []},
            "600 requests per hour (global), sliding window, enforce",
            id="sliding-window-global",
        ),
        pytest.param(
            {"algorithm": "sliding_log", "quantity": 3, "period_seconds": 90, "key_by": ["attr:stream"]},
            "3 requests per 90 seconds per attr:stream, sliding log, enforce",
            id="sliding-log",
        ),
        pytest.param(
            {"algorithm": Algorithm.CONCURRENCY, "quantity": 5, "period_seconds": 300},
            "5 concurrent leases per customer (leases up to 300 s), enforce",
            id="concurrency",
        ),
    ],
)  # fmt: skip
def test_each_algorithm_reads_as_one_plain_line(fields, summary) -> None:
    assert limit_summary(_limit(**fields)) == summary


def test_a_calendar_month_is_named_as_a_month() -> None:
    limit = _limit(algorithm=Algorithm.CALENDAR, period_seconds=None, calendar_period="month", quantity=1_000_000)
    assert limit_summary(limit) == "1000000 requests per month per customer, calendar, enforce"


def test_match_conditions_say_when_the_limit_applies() -> None:
    limit = _limit(match={"ScalingType": "UniformScaling", "tier": "gold"})
    assert limit_summary(limit) == (
        "10 requests per minute per customer when ScalingType=UniformScaling and tier=gold, fixed window, enforce"
    )


def test_a_single_unit_is_not_pluralised() -> None:
    assert (
        limit_summary(_limit(quantity=1, period_seconds=1))
        == "1 request per second per customer, fixed window, enforce"
    )
    concurrency = _limit(algorithm=Algorithm.CONCURRENCY, quantity=1, period_seconds=30)
    assert limit_summary(concurrency) == "1 concurrent lease per customer (leases up to 30 s), enforce"


def test_an_unfinished_limit_still_gets_a_summary() -> None:
    assert (
        limit_summary(_limit(period_seconds=None))
        == "10 requests per period not set per customer, fixed window, enforce"
    )


@pytest.mark.parametrize(
    ("seconds", "phrase"),
    [
        (1, "per second"),
        (60, "per minute"),
        (3600, "per hour"),
        (86400, "per day"),
        (604800, "per week"),
        (90, "per 90 seconds"),
        (300, "per 5 minutes"),
        (5400, "per 90 minutes"),
        (7200, "per 2 hours"),
        (172800, "per 2 days"),
        (1209600, "per 2 weeks"),
        (86401, "per 86401 seconds"),
    ],
)
def test_periods_are_named_in_the_largest_whole_unit(seconds, phrase) -> None:
    assert period_phrase(seconds) == phrase
