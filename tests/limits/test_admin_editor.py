"""The limit editor's form (apps/limits/admin_forms.py), posted as the page posts it: key_by as ticked parts and
attribute rows, match as key/value rows, the quantity labelled `Limit` as in limits.yaml, plain errors on fields."""

from __future__ import annotations

import json

import pytest

from apps.engine.registry import ALGORITHM_NAMES
from apps.limits.algorithms import algorithm_fields
from apps.limits.choices import KEY_BY_FIELDS, Algorithm
from apps.limits.models import Limit, Override
from tests.admin_fixtures import admin_url
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


def page_data(**changes: object) -> dict[str, object]:
    """What the editor's page sends: no `key_by`/`match` JSON, but the parts, rows and the widgets' markers."""
    data: dict[str, object] = {
        "name": "put-records-per-second",
        "description": "",
        "operation": OperationFactory(name="PutRecords").pk,
        "plan": "",
        "algorithm": "fixed_window",
        "quantity": 100,
        "unit": "requests",
        "period_seconds": 60,
        "calendar_period": "",
        "burst": "",
        "key_by_shown": "1",
        "key_by_part": ["customer"],
        "key_by_attr": ["", ""],
        "match_shown": "1",
        "match_key": ["", ""],
        "match_value": ["", ""],
        "mode": "enforce",
        "on_store_failure": "database",
    }
    data.update(changes)
    return data


def errors_of(response) -> dict[str, list[str]]:
    return {field: list(messages) for field, messages in response.context["adminform"].form.errors.items()}


def test_ticked_parts_and_attribute_rows_make_the_key_and_rows_make_the_match(admin_client) -> None:
    data = page_data(
        key_by_part=["customer", "resource"],
        key_by_attr=["stream", "", "attr:region"],
        match_key=["ScalingType", "", "tier"],
        match_value=["UniformScaling", "", "gold"],
    )

    response = admin_client.post(admin_url(Limit, "add"), data)

    assert response.status_code == 302, errors_of(response)
    limit = Limit.objects.get(name="put-records-per-second")
    assert limit.key_by == ["customer", "resource", "attr:stream", "attr:region"]
    assert limit.match == {"ScalingType": "UniformScaling", "tier": "gold"}


def test_nothing_ticked_and_no_rows_is_one_global_counter_matching_every_check(admin_client) -> None:
    response = admin_client.post(admin_url(Limit, "add"), page_data(key_by_part=[]))
    assert response.status_code == 302, errors_of(response)
    assert Limit.objects.get().key_by == []
    assert Limit.objects.get().match == {}


def test_saving_an_unchanged_limit_keeps_its_key_order_so_its_counters_stay(admin_client) -> None:
    limit = LimitFactory(name="ordered", key_by=["resource", "attr:stream", "customer"])
    data = page_data(name="ordered", key_by_part=["customer", "resource"], key_by_attr=["stream"])

    response = admin_client.post(admin_url(Limit, "change", limit.pk), data)

    assert response.status_code == 302, errors_of(response)
    limit.refresh_from_db()
    assert limit.key_by == ["resource", "attr:stream", "customer"]


def test_the_change_page_ticks_the_limits_parts_and_lists_its_attributes_and_match_rows(admin_client) -> None:
    limit = LimitFactory(key_by=["ip", "attr:stream"], match={"ScalingType": "UniformScaling"})

    page = admin_client.get(admin_url(Limit, "change", limit.pk)).content.decode()

    for part in KEY_BY_FIELDS:
        checked = " checked" if part == "ip" else ""
        assert f'name="key_by_part" value="{part}"{checked}>' in page
    assert 'name="key_by_attr" value="stream"' in page
    assert 'name="match_key" value="ScalingType"' in page
    assert 'name="match_value" value="UniformScaling"' in page


def test_the_service_and_api_key_parts_are_offered() -> None:
    assert {"customer", "resource", "ip", "service", "api_key"} <= set(KEY_BY_FIELDS)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        pytest.param({"quantity": 0}, "quantity", "The limit must be 1 or more", id="limit-zero"),
        pytest.param({"quantity": -5}, "quantity", "The limit must be 1 or more", id="limit-negative"),
        pytest.param({"period_seconds": 0}, "period_seconds", "at least 1 second", id="period-zero"),
        pytest.param(
            {"algorithm": "token_bucket", "burst": 0}, "burst", "The burst must be 1 or more", id="burst-zero"
        ),
        pytest.param(
            {"match_key": ["tier", "tier"], "match_value": ["gold", "silver"]}, "match", "is given twice", id="dup"
        ),
        pytest.param({"match_key": [""], "match_value": ["gold"]}, "match", "give the attribute name", id="no-name"),
        pytest.param({"key_by_attr": ["no spaces allowed"]}, "key_by", "attribute name", id="bad-attribute"),
    ],
)
def test_a_bad_value_gets_a_plain_error_on_its_own_field_and_nothing_else(admin_client, changes, field, words) -> None:
    response = admin_client.post(admin_url(Limit, "add"), page_data(**changes))

    assert response.status_code == 200
    errors = errors_of(response)
    assert list(errors) == [field], errors
    assert words in " ".join(errors[field])
    page = response.content.decode()
    assert "Constraint" not in page
    assert "greater than or equal to 0" not in page
    assert not Limit.objects.exists()


def test_the_quantity_is_labelled_limit_as_in_the_yaml_file(admin_client) -> None:
    form = admin_client.get(admin_url(Limit, "add")).context["adminform"].form
    assert form.fields["quantity"].label == "Limit"
    assert "<code>limit:</code> in limits.yaml" in form.fields["quantity"].help_text


def test_a_hidden_unit_not_sent_is_set_for_the_algorithms_with_a_fixed_unit(admin_client) -> None:
    limit = LimitFactory(name="leases", unit="bytes", period_seconds=60)
    data = page_data(name="leases", algorithm=Algorithm.CONCURRENCY)
    del data["unit"]  # the page hides the field for concurrency and so does not send it

    response = admin_client.post(admin_url(Limit, "change", limit.pk), data)

    assert response.status_code == 302, errors_of(response)
    limit.refresh_from_db()
    assert (limit.algorithm, limit.unit) == (Algorithm.CONCURRENCY, "requests")


def test_a_unit_that_does_not_fit_the_algorithm_is_still_refused_on_the_unit(admin_client) -> None:
    response = admin_client.post(admin_url(Limit, "add"), page_data(algorithm=Algorithm.SESSION_TIME, unit="bytes"))
    assert list(errors_of(response)) == ["unit"]


def test_the_algorithm_select_carries_which_fields_each_algorithm_uses(admin_client) -> None:
    form = admin_client.get(admin_url(Limit, "add")).context["adminform"].form
    table = json.loads(form.fields["algorithm"].widget.attrs["data-fields"])

    assert table["used"][Algorithm.CALENDAR] == ["calendar_period", "sync_ms", "unit"]
    assert table["used"]["token_bucket"] == ["period_seconds", "burst", "unit"]
    assert table["used"][Algorithm.CONCURRENCY] == ["period_seconds"]
    assert {name for name in table["used"]} == set(ALGORITHM_NAMES)
    assert table["used"] == {algorithm: algorithm_fields(algorithm) for algorithm in ALGORITHM_NAMES}


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
def test_every_field_an_algorithm_does_not_use_is_refused_by_the_server_without_the_page(
    admin_client, algorithm
) -> None:
    """Hiding is the page's courtesy; without JavaScript the server refuses each field that does not apply."""
    values = {"period_seconds": 60, "calendar_period": "day", "burst": 5, "sync_ms": 100}
    unused = [name for name in values if name not in algorithm_fields(algorithm)]
    unit = {"concurrency": "requests", "session_time": "seconds"}.get(algorithm, "requests")
    response = admin_client.post(admin_url(Limit, "add"), page_data(algorithm=algorithm, unit=unit, **values))

    assert response.status_code == 200
    assert set(errors_of(response)) == set(unused)


def test_an_override_of_zero_gets_a_plain_error_on_its_quantity(admin_client) -> None:
    data = {
        "customer": CustomerFactory().pk,
        "limit": LimitFactory().pk,
        "resource": "",
        "match": "{}",
        "quantity": 0,
        "burst": "",
        "reason": "",
    }
    response = admin_client.post(admin_url(Override, "add"), data)

    errors = errors_of(response)
    assert list(errors) == ["quantity"]
    assert "The quantity must be 1 or more" in errors["quantity"][0]
    assert "Constraint" not in response.content.decode()


def test_someone_who_may_only_view_sees_the_limit_as_text(client) -> None:
    from tests.support.browser import staff_user_create

    limit = LimitFactory(key_by=["customer", "attr:stream"], match={"tier": "gold"})
    client.force_login(staff_user_create("viewer", "pw", permissions=("view_limit",)))

    response = client.get(admin_url(Limit, "change", limit.pk))

    assert response.status_code == 200
    assert 'name="key_by_part"' not in response.content.decode()
