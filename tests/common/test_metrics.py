"""The metric functions the hot path calls: what they count, and how they keep label sets small."""

from __future__ import annotations

import pytest
from prometheus_client import REGISTRY
from redis.exceptions import BusyLoadingError, NoScriptError, OutOfMemoryError, ReadOnlyError, RedisError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from apps.common import metrics
from apps.common.metrics import (
    OTHER,
    LabelCap,
    check_timed,
    decision_counted,
    decision_recorded,
    operation_label,
    redis_error_kind,
    redis_error_recorded,
)


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_a_known_operation_keeps_its_name_as_label() -> None:
    assert operation_label("PutRecords", {"PutRecords": (), "ModifyShardCount": ()}) == "PutRecords"


def test_an_operation_missing_from_the_config_is_labelled_other() -> None:
    assert operation_label("put-records-typo", frozenset({"PutRecords"})) == OTHER


def test_the_label_cap_admits_names_up_to_its_size_then_answers_other() -> None:
    cap = LabelCap(2)

    admitted = [cap.admit(name) for name in ("a", "b", "c", "a", "d", "b")]

    assert admitted == ["a", "b", OTHER, "a", OTHER, "b"]


def test_decision_recorded_counts_the_decision_its_shadow_denial_its_degradation_and_its_time() -> None:
    operation = "CountedOperation"
    before = {
        "ok": value("quota_decisions_total", operation=operation, outcome="OK"),
        "shadow": value("quota_shadow_denials_total", operation=operation),
        "degraded": value("quota_degraded_decisions_total", operation=operation),
        "timed": value("quota_check_seconds_count", endpoint="unit-check"),
        "fast": value("quota_check_seconds_bucket", endpoint="unit-check", le="0.004"),
    }

    decision_recorded(
        operation=operation, outcome="OK", shadow_denied=True, degraded=True, seconds=0.003, endpoint="unit-check"
    )
    decision_recorded(
        operation=operation, outcome="OK", shadow_denied=False, degraded=False, seconds=0.2, endpoint="unit-check"
    )

    assert value("quota_decisions_total", operation=operation, outcome="OK") - before["ok"] == 2
    assert value("quota_shadow_denials_total", operation=operation) - before["shadow"] == 1
    assert value("quota_degraded_decisions_total", operation=operation) - before["degraded"] == 1
    assert value("quota_check_seconds_count", endpoint="unit-check") - before["timed"] == 2
    assert value("quota_check_seconds_bucket", endpoint="unit-check", le="0.004") - before["fast"] == 1


def test_each_outcome_is_counted_under_its_own_label() -> None:
    operation = "OutcomeOperation"
    before = {code: value("quota_decisions_total", operation=operation, outcome=code) for code in metrics.OUTCOMES}

    decision_counted(operation=operation, outcome="OVER_LIMIT")
    decision_counted(operation=operation, outcome="OVER_LIMIT")
    decision_counted(operation=operation, outcome="DENIED")

    moved = {code: value("quota_decisions_total", operation=operation, outcome=code) - before[code] for code in before}
    assert moved == {"OK": 0, "OVER_LIMIT": 2, "COST_EXCEEDS_LIMIT": 0, "DENIED": 1, "BATCH_REJECTED": 0}


def test_an_unknown_outcome_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="Unknown decision outcome"):
        decision_counted(operation="AnyOperation", outcome="MAYBE")


def test_raw_operation_names_past_the_cap_are_counted_as_other(monkeypatch) -> None:
    monkeypatch.setattr(metrics, "_operation_cap", LabelCap(1))
    before_other = value("quota_decisions_total", operation=OTHER, outcome="DENIED")

    decision_counted(operation="FirstRawName", outcome="DENIED", shadow_denied=True)
    decision_counted(operation="SecondRawName", outcome="DENIED", shadow_denied=True)

    assert value("quota_decisions_total", operation="FirstRawName", outcome="DENIED") == 1
    assert value("quota_decisions_total", operation="SecondRawName", outcome="DENIED") == 0
    assert value("quota_shadow_denials_total", operation="SecondRawName") == 0
    assert value("quota_decisions_total", operation=OTHER, outcome="DENIED") - before_other == 1
    assert "SecondRawName" not in {operation for operation, _ in metrics._decision_children}


def test_check_timed_observes_one_request_without_counting_a_decision() -> None:
    before_count = value("quota_check_seconds_count", endpoint="unit-batch")
    before_sum = value("quota_check_seconds_sum", endpoint="unit-batch")

    check_timed(endpoint="unit-batch", seconds=0.025)

    assert value("quota_check_seconds_count", endpoint="unit-batch") - before_count == 1
    assert value("quota_check_seconds_sum", endpoint="unit-batch") - before_sum == pytest.approx(0.025)


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (RedisTimeoutError("slow"), "timeout"),
        (RedisConnectionError("refused"), "connection"),
        (BusyLoadingError("loading"), "connection"),
        (OutOfMemoryError("OOM command not allowed"), "oom"),
        (ReadOnlyError("READONLY replica"), "readonly"),
        (NoScriptError("NOSCRIPT"), "response"),
        (RedisError("anything else"), OTHER),
    ],
)
def test_redis_errors_map_to_a_small_fixed_set_of_kinds(error: RedisError, kind: str) -> None:
    assert redis_error_kind(error) == kind


def test_redis_error_recorded_counts_by_kind_and_folds_unknown_kinds_into_other() -> None:
    before = {kind: value("quota_redis_errors_total", kind=kind) for kind in ("timeout", OTHER)}

    redis_error_recorded("timeout")
    redis_error_recorded("timeout")
    redis_error_recorded("made-up-kind")

    assert value("quota_redis_errors_total", kind="timeout") - before["timeout"] == 2
    assert value("quota_redis_errors_total", kind=OTHER) - before[OTHER] == 1
    assert value("quota_redis_errors_total", kind="made-up-kind") == 0


def test_quarantined_rows_are_counted_per_writer() -> None:
    before = value("quota_rows_quarantined_total", writer="test-writer")

    metrics.rows_quarantined_count(writer="test-writer", count=2)

    assert value("quota_rows_quarantined_total", writer="test-writer") == before + 2
