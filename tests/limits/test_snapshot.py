import datetime as dt

import pytest
from django.utils import timezone

from apps.apikeys.services import api_key_create
from apps.limits.models import Mode
from apps.limits.snapshot import config_version_current, snapshot_build
from apps.limits.snapshot_file import snapshot_from_json, snapshot_load, snapshot_save, snapshot_to_json
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory
from tests.toggles.factories import FeatureToggleFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def configuration():
    plan = PlanFactory(name="pro")
    customer = CustomerFactory(external_id="acct-1", plan=plan, timezone="Europe/Berlin")
    operation = OperationFactory(name="PutRecords")
    limit = LimitFactory(name="records", operation=operation, unit="records", key_by=["customer", "resource"])
    LimitFactory(name="off", operation=operation, mode=Mode.DISABLED)
    OverrideFactory(
        customer=customer, limit=limit, quantity=50, starts=dt.datetime(2026, 1, 1, tzinfo=dt.UTC), match={"a": "b"}
    )
    AccessRuleFactory(ip="198.51.100.0/24", operation=operation)
    service = ServiceFactory(name="svc")
    service.operations.add(operation)
    issued = api_key_create(service=service, customer=customer)
    FeatureToggleFactory(name="new-ui", enabled=True, payload={"pct": 10})
    return issued


def test_it_indexes_the_configuration_the_way_a_check_looks_it_up(configuration) -> None:
    snapshot = snapshot_build()

    assert snapshot.customers["acct-1"].plan == "pro"
    assert snapshot.customers["acct-1"].timezone == "Europe/Berlin"
    assert [limit.name for limit in snapshot.limits_by_operation["PutRecords"]] == ["records"]
    assert snapshot.overrides_by_customer["acct-1"][0].quantity == 50
    assert snapshot.overrides_by_customer["acct-1"][0].starts_ms == 1767225600000
    assert snapshot.rules[0].ip == "198.51.100.0/24"
    key = snapshot.keys_by_prefix[configuration.api_key.prefix]
    assert (key.customer, key.service, key.operations) == ("acct-1", "svc", ("PutRecords",))
    assert snapshot.toggles["new-ui"].payload == {"pct": 10}


def test_revoked_keys_are_left_out(configuration) -> None:
    configuration.api_key.revoked_at = timezone.now()
    configuration.api_key.save()

    assert configuration.api_key.prefix not in snapshot_build().keys_by_prefix


def test_the_json_form_reads_back_to_an_equal_snapshot(configuration, tmp_path) -> None:
    snapshot = snapshot_build()

    assert snapshot_from_json(snapshot_to_json(snapshot)) == snapshot
    snapshot_save(snapshot, tmp_path / "lkg" / "snapshot.json")
    assert snapshot_load(tmp_path / "lkg" / "snapshot.json") == snapshot


def test_a_committed_change_bumps_the_version(django_capture_on_commit_callbacks) -> None:
    before = config_version_current()

    with django_capture_on_commit_callbacks(execute=True):
        LimitFactory()

    assert config_version_current() > before


def test_recording_when_a_key_was_last_used_does_not_bump_the_version(
    configuration, django_capture_on_commit_callbacks
) -> None:
    before = config_version_current()

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        configuration.api_key.last_used_at = timezone.now()
        configuration.api_key.save(update_fields=["last_used_at"])

    assert callbacks == []
    assert config_version_current() == before
