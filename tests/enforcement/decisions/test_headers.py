from dataclasses import dataclass

from apps.enforcement.decisions.headers import most_restrictive, ratelimit_headers, retry_after_header


@dataclass
class Result:
    name: str
    limit: int
    remaining: int
    reset_ms: int
    unit: str = "requests"
    shadow: bool = False
    over: bool = False
    algorithm: str = "fixed_window"


def test_the_headers_describe_the_limit_closest_to_empty_in_structured_field_syntax() -> None:
    results = [Result("per-minute", 100, 90, 30_000), Result("daily", 10, 3, 3_600_000)]

    headers = ratelimit_headers(results, {"per-minute": 60, "daily": 86400})

    assert headers == {"RateLimit-Policy": '"daily";q=10;w=86400', "RateLimit": '"daily";r=3;t=3600'}


def test_a_refusing_limit_wins_over_a_fuller_one_and_reset_rounds_up() -> None:
    results = [Result("bytes", 1048576, 0, 1, unit="bytes", over=True), Result("records", 1000, 0, 900)]

    headers = ratelimit_headers(results, {"bytes": 1, "records": 1})

    assert headers["RateLimit-Policy"] == '"bytes";q=1048576;w=1;qu="content-bytes"'
    assert headers["RateLimit"] == '"bytes";r=0;t=1'


def test_a_limit_on_the_leases_held_counts_concurrent_requests() -> None:
    results = [Result("open-sessions", 5, 0, 0, over=True, algorithm="concurrency")]

    headers = ratelimit_headers(results, {"open-sessions": 0})

    assert headers["RateLimit-Policy"] == '"open-sessions";q=5;w=0;qu="concurrent-requests"'


def test_shadow_limits_never_drive_the_headers() -> None:
    assert most_restrictive([Result("shadowed", 10, 0, 10, shadow=True, over=True)]) is None
    assert ratelimit_headers([Result("shadowed", 10, 0, 10, shadow=True)], {}) == {}


def test_retry_after_is_whole_seconds_rounded_up_and_absent_when_not_needed() -> None:
    assert retry_after_header(1) == {"Retry-After": "1"}
    assert retry_after_header(1000) == {"Retry-After": "1"}
    assert retry_after_header(1001) == {"Retry-After": "2"}
    assert retry_after_header(0) == {}
    assert retry_after_header(None) == {}
