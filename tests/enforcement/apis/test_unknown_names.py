"""Names no one configured: answered with a warning (or 404 for operations, if so set), never growing the
database past a daily budget per service, and never written by a read or a dry run (issue 13, finding 7)."""

import pytest
from prometheus_client import REGISTRY

from apps.customers.models import Customer
from apps.enforcement.decisions import unknown_names as names
from apps.enforcement.decisions.services import unknown_customers
from apps.enforcement.ledger.pending import decision_ledger
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_customer_waiting(db):
    # Within the test's transaction (after `db`), before and after it: the names a test leaves waiting are written
    # and rolled back with it, never committed, nor written into the next test (the same test, through the other
    # door, sends the same names and must find them new).
    unknown_customers.flush()
    yield
    unknown_customers.flush()


@pytest.fixture
def configured(db):
    CustomerFactory(external_id="known-1")
    return LimitFactory(name="reads", operation=OperationFactory(name="Read"), quantity=100, key_by=["customer"])


def check(api, customer="known-1", operation="Read", **fields):
    return api.post("/api/v1/check", {"customer": customer, "operation": operation, **fields}, format="json")


def redis_keys(redis_client, key_prefix) -> set[bytes]:
    return set(redis_client.scan_iter(match=f"{key_prefix}*"))


def test_known_names_answer_without_warnings(api, configured) -> None:
    assert check(api).json()["warnings"] == []


def test_an_unknown_operation_is_answered_with_no_limits_and_a_warning(api, configured) -> None:
    body = check(api, operation="Invented").json()

    assert (body["allowed"], body["limits"], body["warnings"]) == (True, [], ["unknown_operation"])


def test_an_operation_without_limits_is_known(api, configured) -> None:
    OperationFactory(name="Unlimited")

    assert check(api, operation="Unlimited").json()["warnings"] == []


def test_an_unknown_customer_gets_a_warning(api, configured) -> None:
    assert check(api, customer="stranger-1").json()["warnings"] == ["unknown_customer"]


def test_rejecting_unknown_operations_answers_404_and_moves_nothing(
    api, configured, settings, redis_client, key_prefix
) -> None:
    settings.QUOTA_UNKNOWN_OPERATIONS = "reject"
    before = redis_keys(redis_client, key_prefix)

    response = check(api, operation="Invented")

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "unknown_operation"
    assert redis_keys(redis_client, key_prefix) == before
    assert check(api).status_code == 200  # a configured operation is served as ever


def test_past_the_daily_budget_new_names_are_counted_together_as_other(api, engine, configured, settings) -> None:
    settings.QUOTA_NEW_NAMES_PER_SERVICE_DAY = 2
    over = (
        REGISTRY.get_sample_value("quota_new_names_over_budget_total", {"service": "control-plane", "kind": "customer"})
        or 0.0
    )

    answers = [check(api, customer=f"new-{index}").json() for index in range(4)]
    unknown_customers.flush()

    assert [a["warnings"] for a in answers] == [["unknown_customer"]] * 2 + [
        ["unknown_customer", "new_names_over_budget"]
    ] * 2
    assert check(api, customer="new-1").json()["warnings"] == ["unknown_customer"]  # admitted stays admitted
    assert set(Customer.objects.filter(external_id__startswith="new-").values_list("external_id", flat=True)) == {
        "new-0",
        "new-1",
    }
    assert not Customer.objects.filter(external_id=names.OTHER_NAME).exists()
    used = {row.customer: row.allowed for row in decision_ledger.pending_rows()}
    assert used == {"new-0": 1, "new-1": 2, names.OTHER_NAME: 2}
    assert (
        REGISTRY.get_sample_value("quota_new_names_over_budget_total", {"service": "control-plane", "kind": "customer"})
        == over + 2
    )


def test_dry_runs_and_read_outs_write_no_name(api, configured, redis_client, key_prefix) -> None:
    before = redis_keys(redis_client, key_prefix)

    dry = check(api, customer="ghost-1", operation="Ghostly", dry_run=True)
    read = api.get("/api/v1/customers/ghost-2/limits")
    unknown_customers.flush()

    assert dry.json()["warnings"] == ["unknown_operation", "unknown_customer"]
    assert read.status_code == 200
    assert redis_keys(redis_client, key_prefix) == before
    assert not Customer.objects.filter(external_id__in=["ghost-1", "ghost-2"]).exists()
