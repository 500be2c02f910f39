"""The hot-path request validator: strict types, bounded sizes, every error named by field."""

import pytest

from apps.api.fields import ParseError
from apps.enforcement.decisions.parsing import MAX_BATCH_ITEMS, BatchTooLarge, parse_batch, parse_check
from apps.enforcement.leases.parsing import ALLOCATION, parse_allocations, parse_lease
from apps.engine import CheckItem

VALID = {"customer": "acct-1", "operation": "PutRecords"}


def errors_for(data) -> dict:
    with pytest.raises(ParseError) as caught:
        parse_check(data)
    return caught.value.fields


def test_a_minimal_check_gets_its_defaults() -> None:
    assert parse_check(VALID) == CheckItem(customer="acct-1", operation="PutRecords")


def test_every_field_is_read() -> None:
    request = parse_check(
        {**VALID, "resource": "shard-1", "attributes": {"ScalingType": "Uniform"}, "costs": {"records": 5},
         "ip": "2001:DB8::1", "request_id": "r-1", "dry_run": True}
    )  # fmt: skip

    assert request.resource == "shard-1"
    assert request.attributes == {"ScalingType": "Uniform"}
    assert request.costs == {"records": 5}
    assert request.ip == "2001:db8::1"
    assert (request.request_id, request.dry_run) == ("r-1", True)


@pytest.mark.parametrize(
    ("data", "field", "fragment"),
    [
        ({"operation": "Op"}, "customer", "required"),
        ({**VALID, "customer": ""}, "customer", "empty"),
        ({**VALID, "customer": 42}, "customer", "string"),
        ({**VALID, "customer": "x" * 201}, "customer", "At most 200"),
        ({**VALID, "operation": ["Op"]}, "operation", "string"),
        ({**VALID, "resource": "r" * 201}, "resource", "At most 200"),
        ({**VALID, "costs": {"records": -1}}, "costs", "whole number"),
        ({**VALID, "costs": {"records": 1.5}}, "costs", "whole number"),
        ({**VALID, "costs": {"records": True}}, "costs", "whole number"),
        ({**VALID, "costs": {"records": 2**53}}, "costs", "whole number"),
        ({**VALID, "costs": {"bad unit": 1}}, "costs", "unit name"),
        ({**VALID, "costs": [1]}, "costs", "object"),
        ({**VALID, "attributes": {"a": 1}}, "attributes", "string"),
        ({**VALID, "attributes": {"bad name": "x"}}, "attributes", "attribute name"),
        ({**VALID, "attributes": {f"a{i}": "x" for i in range(33)}}, "attributes", "At most 32"),
        ({**VALID, "ip": "999.1.1.1"}, "ip", "not an IPv4"),
        ({**VALID, "ip": 17}, "ip", "IPv4 or IPv6"),
        ({**VALID, "request_id": "r" * 129}, "request_id", "At most 128"),
        ({**VALID, "dry_run": "yes"}, "dry_run", "true or false"),
        ({**VALID, "surprise": 1}, "non_field_errors", "Unknown field(s): surprise"),
        ([VALID], "non_field_errors", "JSON object"),
    ],
)
def test_bad_input_is_refused_with_a_message_on_its_field(data, field, fragment) -> None:
    assert fragment in " ".join(errors_for(data)[field])


def test_all_problems_are_reported_at_once() -> None:
    assert set(errors_for({"customer": 1, "costs": {"x": -1}})) == {"customer", "operation", "costs"}


def test_a_batch_returns_its_items_in_order_and_its_mode() -> None:
    items, mode = parse_batch({"items": [VALID, {**VALID, "customer": "acct-2"}], "mode": "atomic"})

    assert [item.customer for item in items] == ["acct-1", "acct-2"]
    assert mode == "atomic"


def test_a_batch_names_the_bad_item_by_its_index() -> None:
    with pytest.raises(ParseError) as caught:
        parse_batch({"items": [VALID, {**VALID, "costs": {"records": -5}}]})

    assert list(caught.value.fields["items"]) == ["1"]
    assert "costs" in caught.value.fields["items"]["1"]


@pytest.mark.parametrize(
    ("data", "field"),
    [({"items": []}, "items"), ({"items": "x"}, "items"), ({"items": [VALID], "mode": "some"}, "mode")],
)
def test_a_bad_batch_is_refused_on_its_field(data, field) -> None:
    with pytest.raises(ParseError) as caught:
        parse_batch(data)
    assert field in caught.value.fields


def test_a_batch_over_the_size_limit_is_refused_as_too_large() -> None:
    with pytest.raises(BatchTooLarge, match="at most 1000"):
        parse_batch({"items": [VALID] * (MAX_BATCH_ITEMS + 1)})


@pytest.mark.parametrize("field", ["resource", "attributes", "costs", "ip", "request_id", "dry_run", "max_wait_ms"])
def test_a_null_optional_field_is_refused_not_defaulted(field) -> None:
    assert "null" in errors_for({**VALID, field: None})[field][0]


def test_a_null_lease_ttl_asks_for_an_allocation_and_a_bad_one_is_refused() -> None:
    assert parse_lease({**VALID, "ttl_s": None}) == (CheckItem("acct-1", "PutRecords"), ALLOCATION)
    assert parse_lease(VALID)[1] is None  # absent: the default ttl
    with pytest.raises(ParseError) as caught:
        parse_lease({**VALID, "ttl_s": 0})
    assert "ttl_s" in caught.value.fields


@pytest.mark.parametrize(
    ("body", "field"),
    [({}, "held"), ({"held": -1}, "held"), ({"held": 100_001}, "held"), ({"held": "3"}, "held"),
     ({"held": 1, "resource": ""}, "resource"), ({"held": 1, "extra": 1}, "non_field_errors")],
)  # fmt: skip
def test_an_allocation_count_is_a_whole_number_with_an_optional_resource(body, field) -> None:
    with pytest.raises(ParseError) as caught:
        parse_allocations(body)
    assert field in caught.value.fields
    assert parse_allocations({"held": 3, "resource": "stream-1"}) == (3, "stream-1")


CONTROL_CHARACTERS = [chr(code) for code in range(0x20)] + ["\x7f"]
TEXT_FIELDS = ("customer", "operation", "resource", "request_id")


@pytest.mark.parametrize("field", TEXT_FIELDS)
@pytest.mark.parametrize("control", CONTROL_CHARACTERS, ids=lambda c: f"U+{ord(c):04X}")
def test_a_control_character_in_any_text_field_is_refused_on_that_field(field, control) -> None:
    errors = errors_for({**VALID, field: f"a{control}b"})

    assert list(errors) == [field]
    assert "control characters" in errors[field][0]


@pytest.mark.parametrize(
    ("ip", "canonical"),
    [
        ("2001:0DB8:0000:0000:0000:0000:0000:0001", "2001:db8::1"),
        ("::ffff:203.0.113.7", "203.0.113.7"),
        ("::FFFF:CB00:7107", "203.0.113.7"),
        ("fe80::0001", "fe80::1"),
    ],
)
def test_an_ip_comes_out_in_one_spelling_per_address(ip, canonical) -> None:
    assert parse_check({**VALID, "ip": ip}).ip == canonical


@pytest.mark.parametrize("ip", ["fe80::1%eth0", "fe80::1%25eth0", "fe80::1%1", "::ffff:203.0.113.7%eth0"])
def test_an_ip_with_a_zone_is_refused_saying_so(ip) -> None:
    (problem,) = errors_for({**VALID, "ip": ip})["ip"]

    assert "has a zone" in problem
    assert "without it" in problem


@pytest.mark.parametrize("field", [*TEXT_FIELDS, "ip"])
def test_an_empty_string_is_refused_in_every_text_field(field) -> None:
    assert field in errors_for({**VALID, field: ""})


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"attributes": {"tier": "gold\x00"}}, "attributes"),
        ({"attributes": {"tier": ""}}, "attributes"),
        ({"attributes": {"tier\n": "gold"}}, "attributes"),  # `$` would have let a final newline through
        ({"costs": {"records\n": 1}}, "costs"),
        ({"ip": "10.0.0.1\x00"}, "ip"),
    ],
)
def test_attribute_names_and_values_units_and_ips_refuse_control_characters(data, field) -> None:
    assert field in errors_for({**VALID, **data})


def test_a_batch_names_the_item_with_a_control_character() -> None:
    with pytest.raises(ParseError) as caught:
        parse_batch({"items": [VALID, {**VALID, "customer": "a\x00b"}]})

    assert caught.value.fields == {"items": {"1": {"customer": [caught.value.fields["items"]["1"]["customer"][0]]}}}
    assert "control characters" in caught.value.fields["items"]["1"]["customer"][0]


def test_a_whole_number_written_with_a_fraction_is_a_whole_number() -> None:
    """JSON Schema's `integer` includes 5.0; 5.5, true and 2**53 are not costs."""
    assert parse_check({**VALID, "costs": {"records": 5.0}}).costs == {"records": 5}
    assert type(parse_check({**VALID, "costs": {"records": 5.0}}).costs["records"]) is int
    for bad in (5.5, True, 2**53, -1.0, float("inf")):
        assert "costs" in errors_for({**VALID, "costs": {"records": bad}}), bad


@pytest.mark.parametrize("value", [-1, 60_001, 1.5, "10", True, [], {}])
def test_max_wait_ms_must_be_whole_milliseconds_up_to_a_minute(value) -> None:
    assert "milliseconds from 0 to 60000" in errors_for({**VALID, "max_wait_ms": value})["max_wait_ms"][0]


def test_max_wait_ms_reaches_the_check_and_defaults_to_not_waiting() -> None:
    assert parse_check({**VALID, "max_wait_ms": 2_000.0}).max_wait_ms == 2_000
    assert parse_check(VALID).max_wait_ms == 0
