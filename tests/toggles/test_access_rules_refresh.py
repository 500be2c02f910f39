"""Allow/deny lists from the external source: `access_rules` in the toggles document, replaced as a set, kept by the
last-known-good file, enforced on /api/v1/check as soon as the refresh is committed. Real PostgreSQL and Redis."""

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from apps.limits.choices import RuleSource
from apps.limits.config_io import config_export, config_import
from apps.limits.models import AccessRule, RuleAction
from apps.limits.services import limits_purge_expired
from apps.limits.snapshot import config_version_current
from apps.limits.snapshot_holder import snapshot_holder
from apps.toggles.models import FeatureToggle
from apps.toggles.services import toggles_refresh
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("toggles_settings")]

AFTER_EXPIRY = dt.datetime(2026, 6, 1, tzinfo=dt.UTC)
RULES: list[dict[str, Any]] = [
    {"action": "deny", "ip": "203.0.113.0/24", "reason": "scraper"},
    {"action": "allow", "customer": "acct-vip", "operation": "ModifyShardCount", "reason": "load test"},
]


@pytest.fixture(autouse=True)
def configuration() -> None:
    LimitFactory(name="daily", operation=OperationFactory(name="ModifyShardCount"), quantity=2, key_by=["customer"])
    CustomerFactory(external_id="acct-1")
    CustomerFactory(external_id="acct-vip")


@pytest.fixture
def source_file(tmp_path: Path) -> Path:
    return tmp_path / "source" / "toggles.json"


@pytest.fixture
def lkg_path(settings) -> Path:  # type: ignore[no-untyped-def]
    return settings.QUOTA_TOGGLES_LKG_PATH


def write(path: Path, document: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def rules_state() -> list[tuple[str, str, str | None, str | None, str]]:
    """Every rule as (source, action, customer, ip, reason), sorted."""
    return sorted(
        (rule.source, rule.action, rule.customer and rule.customer.external_id, rule.ip or None, rule.reason)
        for rule in AccessRule.objects.select_related("customer")
    )


def rows() -> list[tuple[int, Any]]:
    return list(AccessRule.objects.order_by("pk").values_list("pk", "updated_at"))


def check(api, **fields):  # type: ignore[no-untyped-def]
    body = {"customer": "acct-1", "operation": "ModifyShardCount", "ip": "198.51.100.1", **fields}
    return api.post("/api/v1/check", body, format="json")


def published() -> bool:
    """What each worker's poller does every QUOTA_SNAPSHOT_POLL_S (0 in tests: no thread): rebuild if the version
    moved. True when it did."""
    return snapshot_holder().refresh()


# --- enforced on /api/v1/check ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_rules_from_a_file_source_are_enforced_on_check_right_after_the_refresh(api, source_file: Path) -> None:
    assert check(api, ip="203.0.113.9").status_code == 200  # the worker's snapshot, before the source has rules

    report = toggles_refresh(source=write(source_file, {"access_rules": RULES}))

    assert (report.fetched_ok, report.error, report.access_rules_created) == (True, None, 2)
    assert rules_state() == [
        (RuleSource.EXTERNAL, "allow", "acct-vip", None, "load test"),
        (RuleSource.EXTERNAL, "deny", None, "203.0.113.0/24", "scraper"),
    ]
    assert published()
    denied = check(api, ip="203.0.113.9")
    assert (denied.status_code, denied.json()["code"]) == (403, "DENIED")
    vip = [check(api, customer="acct-vip") for _ in range(4)]
    assert [(answer.status_code, answer.json()["limits"]) for answer in vip] == [(200, [])] * 4
    assert check(api).json()["limits"][0]["remaining"] == 0  # acct-1's first check was before the refresh


@pytest.mark.django_db(transaction=True)
def test_with_the_source_file_removed_the_last_known_good_keeps_the_rules_enforced(
    api, source_file: Path, lkg_path: Path
) -> None:
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))
    assert json.loads(lkg_path.read_text()) == {"access_rules": RULES}
    AccessRule.objects.filter(action="deny").delete()  # deleted in the admin, say: the source still lists it
    source_file.unlink()

    report = toggles_refresh(source=str(source_file))

    assert (report.fetched_ok, report.used_last_known_good) == (False, True)
    assert report.error == f"source: cannot read {source_file}: No such file or directory"
    assert report.access_rules_created == 1
    assert [rule[1:] for rule in rules_state()] == [
        ("allow", "acct-vip", None, "load test"),
        ("deny", None, "203.0.113.0/24", "scraper"),
    ]
    published()
    assert check(api, ip="203.0.113.9").status_code == 403
    assert check(api, customer="acct-vip").json()["limits"] == []


@pytest.mark.django_db(transaction=True)
def test_a_changed_source_replaces_its_set_and_leaves_the_admins_rules_alone(api, source_file: Path) -> None:
    own_deny = AccessRuleFactory(action=RuleAction.DENY, ip="192.0.2.0/24", reason="made in the admin")
    # The same matchers as a source rule: still the admin's, and kept when the source drops its own.
    own_twin = AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", reason="the admin's twin")
    admin_rows = sorted(AccessRule.objects.filter(pk__in=[own_deny.pk, own_twin.pk]).values_list("pk", "updated_at"))
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))
    changed = [
        {"action": "allow", "customer": "acct-vip", "operation": "ModifyShardCount", "reason": "contract"},
        {"action": "deny", "ip": "198.51.100.0/24", "reason": "new abuse"},
    ]

    report = toggles_refresh(source=write(source_file, {"access_rules": changed}))

    assert (report.access_rules_created, report.access_rules_updated, report.access_rules_deleted) == (1, 1, 1)
    assert rules_state() == [
        (RuleSource.ADMIN, "deny", None, "192.0.2.0/24", "made in the admin"),
        (RuleSource.ADMIN, "deny", None, "203.0.113.0/24", "the admin's twin"),
        (RuleSource.EXTERNAL, "allow", "acct-vip", None, "contract"),
        (RuleSource.EXTERNAL, "deny", None, "198.51.100.0/24", "new abuse"),
    ]
    assert sorted(AccessRule.objects.filter(source=RuleSource.ADMIN).values_list("pk", "updated_at")) == admin_rows
    published()
    assert check(api, ip="198.51.100.7").status_code == 403
    assert check(api, ip="192.0.2.7").status_code == 403


def test_an_empty_list_removes_the_sources_rules_and_a_missing_key_leaves_them(source_file: Path) -> None:
    AccessRuleFactory(action=RuleAction.DENY, ip="192.0.2.0/24", reason="made in the admin")
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))

    toggles_refresh(source=write(source_file, {"toggles": []}))
    assert len(rules_state()) == 3

    report = toggles_refresh(source=write(source_file, {"access_rules": []}))
    assert report.access_rules_deleted == 2
    assert rules_state() == [(RuleSource.ADMIN, "deny", None, "192.0.2.0/24", "made in the admin")]


# --- invalid documents change nothing -----------------------------------------------------------


@pytest.mark.parametrize(
    ("entries", "error"),
    [
        (
            [{"action": "deny", "ip": "203.0.113.0/33"}],
            "access_rules[0] (action: deny, ip: 203.0.113.0/33): ip: “203.0.113.0/33” is not an IP address or CIDR "
            "block",
        ),
        (
            [{"action": "deny", "customer": "nobody"}],
            "access_rules[0] (action: deny, customer: nobody): customer: unknown customer “nobody”: neither the "
            "customers section nor the database has it",
        ),
        (
            [{"action": "block", "ip": "192.0.2.1"}],
            "access_rules[0] (action: block, ip: 192.0.2.1): action: “block” is not one of allow, deny",
        ),
        (
            [{"action": "deny", "ip": "192.0.2.1", "colour": "red"}],
            "access_rules[0] (action: deny, ip: 192.0.2.1): colour: unknown key; the keys are action, customer, ip, "
            "api_key_prefix, operation, expires, reason",
        ),
        (
            [{"action": "deny", "reason": "matches nothing"}],
            "access_rules[0] (action: deny): A rule must match a customer, an IP or CIDR, or an API key.",
        ),
        (
            [{"action": "deny", "ip": "192.0.2.1"}, {"action": "deny", "ip": "192.0.2.1"}],
            "access_rules[1] (action: deny, ip: 192.0.2.1): the same entry as access_rules[0]",
        ),
        ({"action": "deny"}, "access_rules: must be a list ([] for none), not a mapping"),
    ],
)
@pytest.mark.django_db(transaction=True)
def test_an_invalid_document_changes_nothing_and_says_why(
    source_file: Path, lkg_path: Path, entries: Any, error: str
) -> None:
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))
    state, stamps, version, good = rules_state(), rows(), config_version_current(), lkg_path.read_text()

    report = toggles_refresh(
        source=write(source_file, {"toggles": [{"name": "x", "enabled": True}], "access_rules": entries})
    )

    assert report.error.startswith(f"source: {error}")
    assert not report.fetched_ok
    assert not report.changed  # the last-known-good file, applied instead, is what is already there
    assert (rules_state(), rows(), config_version_current()) == (state, stamps, version)
    assert not FeatureToggle.objects.exists()  # the whole document is refused, not only its rules
    assert lkg_path.read_text() == good


# --- publishing, and the other doors ------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_unchanged_list_writes_nothing_and_a_change_moves_the_config_version(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))
    stamps, version = rows(), config_version_current()

    assert not toggles_refresh(source=write(source_file, {"access_rules": RULES})).changed
    assert (rows(), config_version_current()) == (stamps, version)

    toggles_refresh(source=write(source_file, {"access_rules": RULES[:1]}))
    assert config_version_current() > version


def test_a_yaml_import_and_export_leave_the_sources_rules_to_the_source(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, {"access_rules": RULES}))
    yaml_rule = {"action": "deny", "ip": "192.0.2.0/24", "reason": "from YAML"}

    report = config_import(document={"access_rules": [yaml_rule, RULES[0]]}, prune=True)

    assert report.sections["access_rules"].deleted == []
    assert [(rule[0], rule[3]) for rule in rules_state()] == [
        (RuleSource.ADMIN, "192.0.2.0/24"),
        (RuleSource.ADMIN, "203.0.113.0/24"),
        (RuleSource.EXTERNAL, None),
        (RuleSource.EXTERNAL, "203.0.113.0/24"),
    ]
    assert [rule["ip"] for rule in config_export()["access_rules"]] == ["192.0.2.0/24", "203.0.113.0/24"]


def test_the_expiry_purge_leaves_expired_rules_of_the_source_to_the_source(source_file: Path) -> None:
    expired = [{"action": "deny", "ip": "203.0.113.0/24", "expires": "2026-01-01T00:00:00Z"}]
    toggles_refresh(source=write(source_file, {"access_rules": expired}))
    AccessRuleFactory(action=RuleAction.DENY, ip="192.0.2.0/24", expires="2026-01-01T00:00:00Z")

    purged = limits_purge_expired(now=AFTER_EXPIRY)

    assert purged["access_rules"] == 1
    assert [rule[0] for rule in rules_state()] == [RuleSource.EXTERNAL]
    report = toggles_refresh(source=str(source_file))
    assert not report.changed  # nothing to put back, nothing republished
