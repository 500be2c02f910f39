"""Export writes what import reads, and importing an export changes nothing."""

import pytest

from apps.apikeys.models import ApiKey
from apps.limits.config_io import config_export, config_import, config_yaml_dump, config_yaml_load
from apps.limits.models import AccessRule, Limit, Operation
from tests.customers.factories import CustomerFactory
from tests.limits.config_io.helpers import build_varied_config, import_text, row_state
from tests.limits.factories import AccessRuleFactory, LimitFactory

pytestmark = pytest.mark.django_db

DESIGN_KEY_ORDER = {
    "operations": ["name", "description"],
    "plans": ["name", "description"],
    "customers": ["id", "name", "plan", "timezone", "active"],
    "limits": [
        "name",
        "description",
        "operation",
        "algorithm",
        "limit",
        "period",
        "burst",
        "unit",
        "key_by",
        "match",
        "mode",
        "on_store_failure",
        "sync_ms",
        "audit",
        "plan",
    ],
    "overrides": [
        "customer",
        "limit",
        "resource",
        "match",
        "quantity",
        "burst",
        "unlimited",
        "starts",
        "ends",
        "reason",
    ],
    "access_rules": ["action", "customer", "ip", "api_key_prefix", "operation", "expires", "reason"],
    "services": ["name", "description", "operations"],
}


def test_importing_an_export_reports_no_changes_and_changes_no_row() -> None:
    build_varied_config()
    before = row_state()

    report = config_import(document=config_yaml_load(config_yaml_dump(config_export())))

    assert report.lines() == ["no changes"]
    assert row_state() == before


def test_importing_an_export_with_prune_deletes_nothing() -> None:
    build_varied_config()
    before = row_state()

    report = config_import(document=config_yaml_load(config_yaml_dump(config_export())), prune=True)

    assert not report.changed
    assert row_state() == before


def test_an_export_imported_into_an_empty_database_exports_the_same_text() -> None:
    build_varied_config()
    ApiKey.objects.all().delete()  # keys are not in the file, so rules naming them could not come back
    exported = config_yaml_dump(config_export())
    for section in ("services", "access_rules", "overrides", "limits", "customers", "plans", "operations"):
        config_import(document={section: []}, prune=True)
    assert Operation.objects.count() == 0

    import_text(exported)

    assert config_yaml_dump(config_export()) == exported


def test_export_writes_every_section_and_every_key_in_the_design_order() -> None:
    build_varied_config()

    document = config_export()

    assert list(document) == list(DESIGN_KEY_ORDER)
    for section, keys in DESIGN_KEY_ORDER.items():
        assert document[section], section
        assert all(list(entry) == keys for entry in document[section]), section


def test_export_is_sorted_by_identity_whatever_the_creation_order() -> None:
    LimitFactory(name="b-limit")
    LimitFactory(name="a-limit")
    AccessRuleFactory(ip="198.51.100.0/24")
    AccessRuleFactory(ip="192.0.2.0/24")

    document = config_export()

    assert [entry["name"] for entry in document["limits"]] == ["a-limit", "b-limit"]
    assert [entry["ip"] for entry in document["access_rules"]] == ["192.0.2.0/24", "198.51.100.0/24"]


def test_export_names_a_period_when_its_seconds_equal_one_and_writes_seconds_otherwise() -> None:
    LimitFactory(name="per-minute", period_seconds=60)
    LimitFactory(name="per-ninety", period_seconds=90)

    periods = {entry["name"]: entry["period"] for entry in config_export()["limits"]}

    assert periods == {"per-minute": "minute", "per-ninety": 90}


def test_export_yaml_writes_small_lists_and_maps_in_flow_style_like_the_design() -> None:
    LimitFactory(name="flowing", key_by=["customer", "resource"], match={"ScalingType": "UniformScaling"})

    text = config_yaml_dump(config_export())

    assert "  - name: flowing\n" in text
    assert "    key_by: [customer, resource]\n" in text
    assert "    match: {ScalingType: UniformScaling}\n" in text
    assert "plans: []\n" in text


def test_a_rule_saved_with_an_unnormalized_ip_is_matched_by_its_normalized_form() -> None:
    rule = AccessRuleFactory(ip="203.0.113.7/24")  # saved without clean(), so not normalized
    before = row_state()

    report = import_text("access_rules: [{action: deny, ip: 203.0.113.0/24}]")

    assert not report.changed
    assert row_state() == before
    assert AccessRule.objects.get().pk == rule.pk
    assert Limit.objects.count() == 0


def test_text_that_looks_like_other_yaml_values_survives_the_round_trip() -> None:
    tricky = {"a": "x, y", "b": "k: v", "c": "#not-a-comment", "d": "", "e": "yes", "f": "null", "g": "0123"}
    LimitFactory(name="tricky", match=tricky, description="line one\nline two: “quoted”")
    CustomerFactory(external_id="123456789012", name="on", timezone="UTC")
    before = row_state()

    report = import_text(config_yaml_dump(config_export()))

    assert not report.changed
    assert row_state() == before
    assert config_yaml_load(config_yaml_dump(config_export()))["limits"][0]["match"] == tricky
