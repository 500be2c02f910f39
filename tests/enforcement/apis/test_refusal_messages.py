"""A refusal says why, in its code and in words: over a limit for now, or a cost that can never fit."""

import pytest

from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def ten_records(db):
    return LimitFactory(
        name="records", operation=OperationFactory(name="Put"), algorithm="fixed_window",
        unit="records", quantity=10, period_seconds=60, key_by=["customer"],
    )  # fmt: skip


def put(api, records: int):
    return api.post("/api/v1/check", {"customer": "acct-1", "operation": "Put", "costs": {"records": records}},
                    format="json")  # fmt: skip


def test_a_cost_above_the_capacity_is_cost_exceeds_limit_without_retry_after(api, ten_records) -> None:
    response = put(api, 11)

    assert response.status_code == 429
    body = response.json()
    assert (body["code"], body["retry_after_ms"]) == ("COST_EXCEEDS_LIMIT", None)
    assert "can ever admit" in body["message"]
    assert "records" in body["message"]
    assert "Retry-After" not in response
    assert put(api, 10).status_code == 200  # and it consumed nothing


def test_over_the_limit_for_now_is_over_limit_with_a_message(api, ten_records) -> None:
    assert put(api, 8).status_code == 200

    response = put(api, 5)

    body = response.json()
    assert (response.status_code, body["code"]) == (429, "OVER_LIMIT")
    assert body["retry_after_ms"] > 0
    assert "retry after" in body["message"]
    assert "Retry-After" in response


def test_an_admitted_check_has_no_message(api, ten_records) -> None:
    assert put(api, 1).json()["message"] is None
