"""Limits keyed by caller (issue 18 item 2): the calling service and API key prefix are key components like the
others, encoded unambiguously, and the customer stays the hash tag when it is part of the key."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from apps.engine import CheckItem, KeyLayout, LimitSpec, ManualClock, MemoryStore

LAYOUT = KeyLayout("quota")
PER_CALLER = LimitSpec("lim", "fixed_window", 1, period_s=1, key_by=("customer", "service", "api_key"))
TEXT = st.text(alphabet=st.sampled_from(":{}%=.-_ aé\n|/,"), max_size=6)


@settings(max_examples=300, deadline=None)
@given(first=st.tuples(TEXT, TEXT), second=st.tuples(TEXT, TEXT))
def test_different_services_or_keys_never_share_a_counter(first: tuple[str, str], second: tuple[str, str]) -> None:
    def key(parts: tuple[str, str]) -> str:
        return LAYOUT.counter_keys(PER_CALLER, CheckItem("c", "Op", service=parts[0], api_key=parts[1]))[0]

    assert (key(first) == key(second)) == (first == second)


def test_the_customer_stays_the_hash_tag_and_a_caller_only_key_gets_the_limits_own() -> None:
    check = CheckItem("acct:1", "Op", service="bill{ing}", api_key="qp_ab12")
    keyed = LAYOUT.counter_keys(PER_CALLER, check)[0]
    by_service = LAYOUT.counter_keys(LimitSpec("svc", "fixed_window", 1, period_s=1, key_by=("service",)), check)[0]

    assert keyed == "quota:c:{c=acct%3A1}:fw:lim:k=qp_ab12:c=acct%3A1:s=bill%7Bing%7D"
    assert by_service == "quota:c:{n=svc}:fw:svc:s=bill%7Bing%7D"


def test_each_service_spends_its_own_budget() -> None:
    store = MemoryStore("t", clock=ManualClock(1_000_000))
    spec = LimitSpec("lim", "fixed_window", 1, period_s=60, key_by=("customer", "service"))

    def admitted(service: str) -> bool:
        return store.check(CheckItem("acct-1", "Op", service=service), [spec]).allowed

    assert [admitted("billing"), admitted("search"), admitted("billing")] == [True, True, False]
