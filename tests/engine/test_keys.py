"""Key layout: unambiguous components, hash tags, and lease ids that cannot be bent to another key."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine import CheckItem, KeyLayout, LimitSpec, lease_owner
from apps.engine.keys import limit_name_of

LAYOUT = KeyLayout("quota")
SCOPED = LimitSpec("lim", "fixed_window", 1, period_s=1, key_by=("customer", "resource", "attr:Type", "ip"))
TEXT = st.text(alphabet=st.sampled_from(":{}%=.-_ aé\n|/,"), max_size=6)


@settings(max_examples=300, deadline=None)
@given(first=st.tuples(TEXT, TEXT, TEXT | st.none(), TEXT), second=st.tuples(TEXT, TEXT, TEXT | st.none(), TEXT))
def test_different_components_never_share_a_counter(
    first: tuple[str, str, str | None, str], second: tuple[str, str, str | None, str]
) -> None:
    def key(parts: tuple[str, str, str | None, str]) -> str:
        customer, resource, attribute, ip = parts
        attributes = {} if attribute is None else {"Type": attribute}
        return LAYOUT.counter_keys(SCOPED, CheckItem(customer or "c", "Op", resource, attributes, ip=ip))[0]

    def normal(parts: tuple[str, str, str | None, str]) -> tuple[str, str, str | None, str]:
        return (parts[0] or "c", *parts[1:])

    assert (key(first) == key(second)) == (normal(first) == normal(second))


def test_each_key_has_one_hash_tag_per_customer_or_its_own_for_global_and_ip_limits() -> None:
    check = CheckItem("a}{b", "Op", ip="10.0.0.1")
    customer_key = LAYOUT.counter_keys(SCOPED, check)[0]
    ip_key = LAYOUT.counter_keys(LimitSpec("per-ip", "fixed_window", 1, period_s=1, key_by=("ip",)), check)[0]
    global_key = LAYOUT.counter_keys(LimitSpec("all", "fixed_window", 1, period_s=1), check)[0]
    tags = [key[key.index("{") + 1 : key.index("}")] for key in (customer_key, ip_key, global_key)]
    assert tags == ["c=a%7D%7Bb", "i=10.0.0.1", "n=all"]
    assert all(key.count("{") == 1 and key.count("}") == 1 for key in (customer_key, ip_key, global_key))
    assert LAYOUT.usage_base(check).startswith("quota:u:{c=a%7D%7Bb}:")
    assert LAYOUT.idempotency_key(CheckItem("a}{b", "Op", request_id="r")) == "quota:i:{c=a%7D%7Bb}:r"


def test_the_quantity_is_not_part_of_the_key_but_a_bucket_period_is() -> None:
    check = CheckItem("c", "Op")
    assert LAYOUT.counter_keys(LimitSpec("l", "fixed_window", 1, period_s=1), check) == LAYOUT.counter_keys(
        LimitSpec("l", "fixed_window", 99, period_s=1), check
    )
    bucket = LAYOUT.counter_keys(LimitSpec("l", "token_bucket", 1, period_s=1), check)
    assert bucket != LAYOUT.counter_keys(LimitSpec("l", "token_bucket", 1, period_s=2), check)


def test_usage_keys_parse_back_to_their_components() -> None:
    key = LAYOUT.usage_key("acct:1/é", "Put:Records", 28_421_280)
    assert LAYOUT.parse_usage_key(key) == ("acct:1/é", "Put:Records", 28_421_280)


def test_a_lease_id_names_its_owner_and_only_a_concurrency_key() -> None:
    spec = LimitSpec("slots", "concurrency", 2, key_by=("customer",))
    key = LAYOUT.counter_keys(spec, CheckItem("acct.1", "Op"))[0]
    lease_id, member = LAYOUT.new_lease(key, "acct.1")
    assert lease_owner(lease_id) == "acct.1"
    assert LAYOUT.lease_target(lease_id) == (key, member)
    assert "%" not in lease_id
    assert "/" not in lease_id


def test_forged_lease_ids_are_refused_or_name_a_member_that_does_not_exist() -> None:
    spec = LimitSpec("slots", "concurrency", 2, key_by=("customer",))
    key = LAYOUT.counter_keys(spec, CheckItem("victim", "Op"))[0]
    lease_id, member = LAYOUT.new_lease(key, "victim")
    key_part, _, token = lease_id.split(".")
    other_owner = LAYOUT.new_lease(key, "mallory")[0].split(".")[1]
    forged = LAYOUT.lease_target(f"{key_part}.{other_owner}.{token}")
    assert forged is not None
    assert forged[0] == key
    assert forged[1] != member
    fixed_key = LAYOUT.counter_keys(LimitSpec("l", "fixed_window", 1, period_s=1), CheckItem("victim", "Op"))[0]
    not_a_lease = LAYOUT.new_lease(fixed_key, "victim")[0]
    assert LAYOUT.lease_target(not_a_lease) is None
    for garbage in ["", "x", "a.b", "a.b.c.d", "!!.!!.x", lease_id + "x.y"]:
        assert LAYOUT.lease_target(garbage) is None
    assert lease_owner("!!.!!.x") is None


@settings(max_examples=200, deadline=None)
@given(
    name=st.text(min_size=1, max_size=8),
    key_by=st.lists(st.sampled_from(["customer", "resource", "ip", "attr:T:y"]), unique=True),
    algorithm=st.sampled_from(["fixed_window", "sliding_log", "token_bucket", "calendar"]),
    parts=st.tuples(TEXT, TEXT, TEXT),
)
def test_the_limit_name_is_read_back_from_any_counter_key(
    name: str, key_by: list[str], algorithm: str, parts: tuple[str, str, str]
) -> None:
    calendar = {"calendar_period": "day"} if algorithm == "calendar" else {"period_s": 60}
    spec = LimitSpec(name, algorithm, 5, key_by=tuple(key_by), **calendar)  # type: ignore[arg-type]
    check = CheckItem("c" + parts[0], "Op", parts[1], {"T:y": parts[2]}, ip=parts[2])
    for key in LAYOUT.counter_keys(spec, check):
        assert limit_name_of(LAYOUT.counter_id(key)) == name
