"""Import creates and updates by identity, reports what changed, and with --prune deletes the rest."""

import pytest

from apps.apikeys.models import Service
from apps.apikeys.services import api_key_create, api_key_revoke
from apps.customers.models import Customer
from apps.limits.config_io import config_export
from apps.limits.models import AccessRule, Limit, Operation, Override
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.config_io.helpers import STARTS, import_text, refusal, row_counts, row_state
from tests.limits.factories import CalendarLimitFactory, LimitFactory, OperationFactory, OverrideFactory

pytestmark = pytest.mark.django_db

MINIMAL = """
operations: [{name: Op}]
plans: [{name: free}]
customers: [{id: acct-1}]
limits: [{name: x, operation: Op, algorithm: fixed_window, limit: 10, period: 60}]
overrides: [{customer: acct-1, limit: x, quantity: 20}]
access_rules: [{action: deny, ip: 203.0.113.9/24}]
services: [{name: svc}]
"""


def test_it_creates_every_object_with_the_documented_defaults() -> None:
    import_text(MINIMAL)

    document = config_export()
    assert document["customers"] == [{"id": "acct-1", "name": "", "plan": None, "timezone": "UTC", "active": True}]
    assert document["limits"][0] | {"name": "x"} == {
        "name": "x",
        "description": "",
        "operation": "Op",
        "algorithm": "fixed_window",
        "limit": 10,
        "period": "minute",
        "burst": None,
        "unit": "requests",
        "key_by": ["customer", "resource"],
        "match": {},
        "mode": "enforce",
        "on_store_failure": "database",
        "sync_ms": None,
        "audit": False,
        "plan": None,
    }
    assert document["overrides"][0]["resource"] == ""
    assert document["overrides"][0]["unlimited"] is False
    assert document["access_rules"][0]["ip"] == "203.0.113.0/24"
    assert document["services"] == [{"name": "svc", "description": "", "operations": []}]


def test_it_reports_what_it_created_per_kind() -> None:
    report = import_text(MINIMAL)

    lines = report.lines()
    assert "operations: 1 created, 0 updated, 0 deleted" in lines
    assert "  created Op" in lines
    assert "  created customer: acct-1, limit: x" in lines
    assert "  created deny ip 203.0.113.0/24" in lines


def test_a_named_period_maps_to_seconds_and_a_calendar_period_to_the_calendar_field() -> None:
    import_text(
        """
operations: [{name: Op}]
limits:
  - {name: hourly, operation: Op, algorithm: sliding_log, limit: 1, period: hour}
  - {name: monthly, operation: Op, algorithm: calendar, limit: 1, period: month}
"""
    )

    hourly, monthly = Limit.objects.get(name="hourly"), Limit.objects.get(name="monthly")
    assert (hourly.period_seconds, hourly.calendar_period) == (3600, "")
    assert (monthly.period_seconds, monthly.calendar_period) == (None, "month")


def test_it_updates_by_name_and_reports_the_changed_fields_with_old_and_new_values() -> None:
    limit = LimitFactory(name="x", operation=OperationFactory(name="Op"), quantity=10, period_seconds=60)

    report = import_text(
        "limits: [{name: x, operation: Op, algorithm: fixed_window, limit: 20, period: hour, key_by: [customer]}]"
    )

    assert report.lines() == [
        "limits: 0 created, 1 updated, 0 deleted",
        "  updated x: limit 10 → 20, period minute → hour",
    ]
    limit.refresh_from_db()
    assert (limit.quantity, limit.period_seconds) == (20, 3600)
    assert Limit.objects.count() == 1


def test_it_saves_only_the_entries_that_changed() -> None:
    operation = OperationFactory(name="Op")
    LimitFactory(name="same", operation=operation, key_by=["customer"])
    LimitFactory(name="changed", operation=operation, key_by=["customer"])
    before = row_state()

    import_text(
        """
limits:
  - {name: same, operation: Op, algorithm: fixed_window, limit: 10, period: 60, key_by: [customer]}
  - {name: changed, operation: Op, algorithm: fixed_window, limit: 10, period: 60, key_by: [ip]}
"""
    )

    after = row_state()
    changed = {key for key in before if before[key] != after[key]}
    assert changed == {("limits.Limit", Limit.objects.get(name="changed").pk)}


def test_a_services_operations_are_replaced_by_the_list_in_the_file() -> None:
    service = ServiceFactory(name="svc")
    service.operations.set([OperationFactory(name="A"), OperationFactory(name="B")])

    report = import_text("services: [{name: svc, operations: [C, B]}]\noperations: [{name: C}]")

    assert sorted(service.operations.values_list("name", flat=True)) == ["B", "C"]
    assert "  updated svc: operations [A, B] → [B, C]" in report.lines()


def test_overrides_are_told_apart_by_customer_limit_resource_and_start() -> None:
    text = """
overrides:
  - {customer: acct-1, limit: x, quantity: 5}
  - {customer: acct-1, limit: x, resource: stream-1, quantity: 6}
  - {customer: acct-1, limit: x, resource: stream-1, starts: "2030-01-01T01:00:00+01:00", quantity: 7}
"""
    OverrideFactory(customer=CustomerFactory(external_id="acct-1"), limit=LimitFactory(name="x"), quantity=1)

    report = import_text(text)

    assert report.lines()[0] == "overrides: 2 created, 1 updated, 0 deleted"
    assert Override.objects.get(resource="stream-1", starts=STARTS).quantity == 7
    assert not import_text(text).changed


def test_dry_run_writes_nothing_but_reports_the_changes() -> None:
    LimitFactory(name="x", operation=OperationFactory(name="Op"), quantity=10)
    before = row_state()

    report = import_text(MINIMAL, dry_run=True)

    assert report.lines()[0] == "Dry run: nothing was written. The import would make these changes:"
    assert "limits: 0 created, 1 updated, 0 deleted" in report.lines()
    assert "operations: 0 created, 0 updated, 0 deleted" in report.lines()
    assert "customers: 1 created, 0 updated, 0 deleted" in report.lines()
    assert row_state() == before


def test_dry_run_says_so_when_there_is_nothing_to_change() -> None:
    import_text(MINIMAL)

    assert import_text(MINIMAL, dry_run=True).lines() == ["Dry run: nothing was written.", "no changes"]


def test_dry_run_still_refuses_an_invalid_file() -> None:
    message = refusal("customers: [{id: acct-1, timezone: Nowhere}]", dry_run=True)

    assert "customers[0] (id: acct-1): timezone:" in message


def test_prune_deletes_what_the_file_does_not_name_in_the_sections_it_has() -> None:
    import_text(MINIMAL)
    import_text(
        "operations: [{name: Gone}]\n"
        "limits: [{name: gone, operation: Gone, algorithm: calendar, limit: 1, period: day}]"
    )

    report = import_text(MINIMAL, prune=True)

    assert set(Operation.objects.values_list("name", flat=True)) == {"Op"}
    assert set(Limit.objects.values_list("name", flat=True)) == {"x"}
    assert "  deleted gone" in report.lines()
    assert "operations: 0 created, 0 updated, 1 deleted" in report.lines()


def test_prune_leaves_sections_absent_from_the_file_untouched() -> None:
    import_text(MINIMAL)
    before = row_counts()

    report = import_text("plans: []", prune=True)

    assert report.lines() == ["plans: 0 created, 0 updated, 1 deleted", "  deleted free"]
    assert row_counts() == before | {"customers.Plan": 0}


def test_prune_reports_rows_the_database_deleted_with_an_object() -> None:
    limit = CalendarLimitFactory(name="gone", operation=OperationFactory(name="Op"))
    OverrideFactory.create_batch(2, limit=limit)

    report = import_text("limits: []", prune=True)

    assert "  also deleted with gone: 2 overrides" in report.lines()
    assert Override.objects.count() == 0


def test_prune_refuses_to_delete_an_operation_that_a_limit_outside_the_file_still_uses() -> None:
    LimitFactory(name="keeps-it", operation=OperationFactory(name="Used"))

    message = refusal("operations: []", prune=True)

    assert "operations: cannot delete Used: still used by limits keeps-it" in message
    assert Operation.objects.filter(name="Used").exists()


def test_prune_refuses_to_delete_a_customer_with_active_api_keys() -> None:
    customer = CustomerFactory(external_id="acct-keyed")
    api_key_create(service=ServiceFactory(), customer=customer)

    message = refusal("customers: []", prune=True)

    assert "customers: cannot delete acct-keyed: it still has active API keys; revoke them first" in message
    assert Customer.objects.filter(pk=customer.pk).exists()


def test_prune_deletes_a_service_whose_keys_are_all_revoked() -> None:
    service = ServiceFactory(name="retired")
    api_key_revoke(api_key=api_key_create(service=service).api_key)

    import_text("services: []", prune=True)

    assert not Service.objects.filter(name="retired").exists()


def test_with_prune_a_reference_must_name_an_entry_of_the_file_when_its_section_is_there() -> None:
    OperationFactory(name="OnlyInDatabase")

    message = refusal(
        "operations: []\nlimits: [{name: x, operation: OnlyInDatabase, algorithm: fixed_window, limit: 1, period: 1}]",
        prune=True,
    )

    assert "unknown operation “OnlyInDatabase”: with --prune, the operations section must list it" in message


def test_prune_keeps_one_rule_of_an_identity_and_deletes_its_duplicates() -> None:
    import_text("access_rules: [{action: deny, ip: 192.0.2.1, reason: first}]")
    first = AccessRule.objects.get()
    AccessRule.objects.create(action="deny", ip="192.0.2.1", reason="copy")

    import_text("access_rules: [{action: deny, ip: 192.0.2.1, reason: first}]", prune=True)

    assert list(AccessRule.objects.values_list("pk", flat=True)) == [first.pk]


def test_sync_ms_on_an_algorithm_hybrid_counting_cannot_count_is_refused_by_name() -> None:
    message = refusal(
        "operations: [{name: Op}]\n"
        "limits: [{name: bucket, operation: Op, algorithm: token_bucket, limit: 5, period: second, sync_ms: 100}]"
    )

    assert "limits[0] (name: bucket): sync_ms:" in message
    assert "fixed window, calendar and sliding window limits only" in message


def test_sync_ms_on_a_window_limit_is_imported_and_exported() -> None:
    import_text(
        "operations: [{name: Op}]\n"
        "limits: [{name: hot, operation: Op, algorithm: fixed_window, limit: 500, period: minute, sync_ms: 100}]"
    )

    assert Limit.objects.get(name="hot").sync_ms == 100
    assert config_export()["limits"][0]["sync_ms"] == 100
