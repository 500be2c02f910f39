"""Bad limits and checks fail before anything is counted."""

from __future__ import annotations

import pytest

from apps.engine import CheckItem, InvalidCheck, LimitSpec, MemoryStore
from apps.engine.store.base import Store


@pytest.mark.parametrize(
    "arguments",
    [
        {"algorithm": "leaky", "quantity": 1, "period_s": 1},
        {"algorithm": "fixed_window", "quantity": -1, "period_s": 1},
        {"algorithm": "fixed_window", "quantity": 1},
        {"algorithm": "fixed_window", "quantity": 1, "period_s": 0},
        {"algorithm": "calendar", "quantity": 1, "calendar_period": "year"},
        {"algorithm": "token_bucket", "quantity": 0, "period_s": 1},
        {"algorithm": "token_bucket", "quantity": 1, "period_s": 86_400, "burst": 10**12},
        {"algorithm": "fixed_window", "quantity": 1, "period_s": 1, "burst": 5},
        {"algorithm": "fixed_window", "quantity": 1, "period_s": 1, "key_by": ("account",)},
        {"algorithm": "fixed_window", "quantity": 1, "period_s": 1, "key_by": ("ip", "ip")},
        {"algorithm": "fixed_window", "quantity": 1, "period_s": 1, "key_by": ("attr:",)},
    ],
)
def test_an_invalid_limit_is_refused(arguments: dict[str, object]) -> None:
    with pytest.raises(InvalidCheck):
        LimitSpec("l", **arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "arguments",
    [
        {"customer": "", "operation": "Op"},
        {"customer": "c", "operation": ""},
        {"customer": "c", "operation": "Op", "costs": {"records": -1}},
        {"customer": "c", "operation": "Op", "costs": {"records": 1.5}},
        {"customer": "c", "operation": "Op", "costs": {"records": 2**53}},
        {"customer": "c", "operation": "Op", "request_id": ""},
    ],
)
def test_an_invalid_check_is_refused(arguments: dict[str, object]) -> None:
    with pytest.raises(InvalidCheck):
        CheckItem(**arguments)  # type: ignore[arg-type]


def test_limits_of_one_check_need_distinct_names(store: Store) -> None:
    limit = LimitSpec("l", "fixed_window", 1, period_s=1)
    with pytest.raises(InvalidCheck):
        store.check(CheckItem("c", "Op"), [limit, limit])


def test_unknown_batch_modes_and_time_zones_are_refused(store: Store) -> None:
    limit = LimitSpec("l", "calendar", 1, calendar_period="day")
    with pytest.raises(InvalidCheck):
        store.check_batch([(CheckItem("c", "Op"), [limit])], "some")  # type: ignore[arg-type]
    with pytest.raises(InvalidCheck):
        store.check(CheckItem("c", "Op", timezone="Mars/Olympus"), [limit])
    assert store.usage_minutes() == []


def test_a_key_prefix_cannot_hold_a_hash_tag() -> None:
    with pytest.raises(InvalidCheck):
        MemoryStore("quota{x}")
