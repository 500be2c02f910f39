"""Resolution: which rules and limits apply to a check. Pure functions over hand-built snapshots."""

import pytest

from apps.engine import CheckItem
from apps.limits.resolution import ip_in_network, resolve
from apps.limits.snapshot import CustomerConfig, LimitConfig, OverrideConfig, RuleConfig, Snapshot

NOW = 1_700_000_000_000


def limit(name="daily", plan=None, match=(), quantity=10, burst=None) -> LimitConfig:
    return LimitConfig(
        name=name, operation="Op", algorithm="fixed_window", quantity=quantity, period_s=60, calendar_period=None,
        burst=burst, unit="requests", key_by=("customer",), match=match, mode="enforce", on_store_failure="open",
        plan=plan,
    )  # fmt: skip


def override(limit_name="daily", quantity=100, resource="", match=(), unlimited=False, starts=None, ends=None):
    return OverrideConfig(limit_name, resource, match, quantity, None, unlimited, starts, ends)


def rule(action="deny", customer=None, ip="", prefix=None, operation=None, expires=None) -> RuleConfig:
    return RuleConfig(action, customer, ip, prefix, operation, expires)


def snapshot(limits=(), overrides=(), rules=(), customers=None) -> Snapshot:
    customers = customers or {"acct-1": CustomerConfig("acct-1", "pro", "Europe/Berlin", True)}
    return Snapshot(
        version=1, built_at=0.0, customers=customers, limits_by_operation={"Op": tuple(limits)},
        overrides_by_customer={"acct-1": tuple(overrides)}, rules=tuple(rules),
    )  # fmt: skip


def target(**kwargs) -> CheckItem:
    return CheckItem(**{"customer": "acct-1", "operation": "Op", **kwargs})


def test_limits_for_everyone_and_for_the_customers_plan_apply_but_not_other_plans() -> None:
    result = resolve(
        snapshot([limit("all"), limit("pro", plan="pro"), limit("free", plan="free")]), target(), now_ms=NOW
    )

    assert [item.name for item in result.limits] == ["all", "pro"]
    assert result.timezone == "Europe/Berlin"


def test_an_unknown_customer_gets_only_the_limits_for_everyone() -> None:
    result = resolve(snapshot([limit("all"), limit("pro", plan="pro")]), target(customer="new"), now_ms=NOW)

    assert [item.name for item in result.limits] == ["all"]
    assert result.customer is None
    assert result.timezone == "UTC"


def test_a_limit_applies_only_when_its_attributes_match() -> None:
    scoped = limit("uniform", match=(("ScalingType", "UniformScaling"),))

    assert resolve(snapshot([scoped]), target(attributes={"ScalingType": "UniformScaling"}), now_ms=NOW).limits
    assert not resolve(snapshot([scoped]), target(attributes={"ScalingType": "Other"}), now_ms=NOW).limits
    assert not resolve(snapshot([scoped]), target(), now_ms=NOW).limits


def test_an_override_changes_the_quantity_only_while_it_is_in_force() -> None:
    timed = override(quantity=50, starts=NOW - 1000, ends=NOW + 1000)
    config = snapshot([limit()], [timed])

    assert resolve(config, target(), now_ms=NOW).limits[0].quantity == 50
    assert resolve(config, target(), now_ms=NOW - 1001).limits[0].quantity == 10
    assert resolve(config, target(), now_ms=NOW + 1000).limits[0].quantity == 10


def test_an_unlimited_override_removes_the_limit() -> None:
    assert resolve(snapshot([limit()], [override(unlimited=True, quantity=None)]), target(), now_ms=NOW).limits == ()


def test_the_most_specific_override_wins() -> None:
    config = snapshot([limit()], [override(quantity=20), override(quantity=30, resource="stream-1")])

    assert resolve(config, target(resource="stream-1"), now_ms=NOW).limits[0].quantity == 30
    assert resolve(config, target(resource="stream-2"), now_ms=NOW).limits[0].quantity == 20


def test_a_deny_rule_wins_over_an_allow_rule() -> None:
    config = snapshot([limit()], rules=[rule("allow", customer="acct-1"), rule("deny", ip="203.0.113.0/24")])

    assert resolve(config, target(ip="203.0.113.9"), now_ms=NOW).action == "deny"
    allowed = resolve(config, target(ip="198.51.100.1"), now_ms=NOW)
    assert allowed.action == "allow"
    assert allowed.limits == ()


def test_rules_honour_operation_key_and_expiry() -> None:
    config = snapshot([limit()], rules=[rule(prefix="qp_1", operation="Op", expires=NOW + 1)])

    assert resolve(config, target(), now_ms=NOW, api_key_prefix="qp_1").action == "deny"
    assert resolve(config, target(), now_ms=NOW, api_key_prefix="qp_2").action is None
    assert resolve(config, target(operation="Other"), now_ms=NOW, api_key_prefix="qp_1").action is None
    assert resolve(config, target(), now_ms=NOW + 1, api_key_prefix="qp_1").action is None


def test_an_inactive_customer_is_denied() -> None:
    customers = {"acct-1": CustomerConfig("acct-1", None, "UTC", False)}

    assert resolve(snapshot([limit()], customers=customers), target(), now_ms=NOW).action == "deny"


@pytest.mark.parametrize(
    ("ip", "network", "inside"),
    [
        ("203.0.113.7", "203.0.113.0/24", True),
        ("203.0.114.7", "203.0.113.0/24", False),
        ("2001:db8::5", "2001:db8::/32", True),
        ("2001:db9::5", "2001:db8::/32", False),
        ("::ffff:203.0.113.7", "203.0.113.0/24", True),
        ("203.0.113.7", "2001:db8::/32", False),
        ("203.0.113.7", "203.0.113.7", True),
        ("not an ip", "203.0.113.0/24", False),
        ("", "203.0.113.0/24", False),
    ],
)
def test_ip_rules_match_cidrs_for_ipv4_and_ipv6(ip, network, inside) -> None:
    assert ip_in_network(ip, network) is inside
