"""The admin site as a whole (configured in apps/limits/admin.py), then the limits app's own pages."""

import datetime as dt

import pytest
from django.contrib import admin
from django.core import checks
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.limits.choices import RuleSource
from apps.limits.models import AccessRule, Algorithm, Limit, Override, RuleAction
from tests.admin_fixtures import FACTORY_BY_MODEL, FULL_SAMPLE_BY_MODEL, admin_url
from tests.customers.factories import CustomerFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory

REGISTERED_MODELS = sorted(admin.site._registry, key=lambda model: model._meta.label)
OUR_MODELS = [model for model in REGISTERED_MODELS if model.__module__.startswith("apps.")]

AUTOCOMPLETE_FIELDS = sorted(
    {
        (owner.model, field)
        for model in OUR_MODELS
        for owner in (admin.site._registry[model], *admin.site._registry[model].inlines)
        for field in owner.autocomplete_fields
    },
    key=lambda pair: (pair[0]._meta.label, pair[1]),
)


def _label(model: type) -> str:
    return model._meta.label


# --- the whole site ---------------------------------------------------------------------------


def test_the_admin_passes_djangos_system_checks() -> None:
    errors = [message for message in checks.run_checks(tags=[checks.Tags.admin]) if message.is_serious()]
    assert errors == []


def test_every_model_of_ours_is_registered_and_has_a_sample_factory() -> None:
    assert set(OUR_MODELS) == set(FACTORY_BY_MODEL) == set(FULL_SAMPLE_BY_MODEL)


@pytest.mark.django_db
@pytest.mark.parametrize("model", REGISTERED_MODELS, ids=_label)
def test_every_registered_changelist_opens(admin_client, model) -> None:
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("model", REGISTERED_MODELS, ids=_label)
def test_every_add_page_opens_unless_its_admin_forbids_adding(admin_client, admin_user, rf, model) -> None:
    request = rf.get("/")
    request.user = admin_user
    expected = 200 if admin.site._registry[model].has_add_permission(request) else 403
    assert admin_client.get(admin_url(model, "add")).status_code == expected


@pytest.mark.django_db
@pytest.mark.parametrize("model", OUR_MODELS, ids=_label)
def test_every_change_page_of_ours_opens_for_an_existing_object(admin_client, model) -> None:
    obj = FACTORY_BY_MODEL[model]()
    response = admin_client.get(admin_url(model, "change", obj.pk))
    assert response.status_code == 200
    assert response.context["original"] == obj


@pytest.mark.django_db
@pytest.mark.parametrize("model", OUR_MODELS, ids=_label)
def test_every_changelist_of_ours_lists_an_existing_object(admin_client, model) -> None:
    obj = FACTORY_BY_MODEL[model]()
    response = admin_client.get(admin_url(model, "changelist"))
    assert list(response.context["cl"].result_list) == [obj]


@pytest.mark.django_db
@pytest.mark.parametrize(("model", "field_name"), AUTOCOMPLETE_FIELDS, ids=lambda v: getattr(v, "__name__", v))
def test_every_autocomplete_field_finds_its_targets(admin_client, model, field_name) -> None:
    target = FACTORY_BY_MODEL[model._meta.get_field(field_name).related_model]()
    query = {"app_label": model._meta.app_label, "model_name": model._meta.model_name, "field_name": field_name}

    response = admin_client.get("/admin/autocomplete/", query)

    assert response.status_code == 200
    assert [item["text"] for item in response.json()["results"]] == [str(target)]


@pytest.mark.django_db
@pytest.mark.parametrize("model", OUR_MODELS, ids=_label)
def test_every_changelist_of_ours_costs_the_same_queries_for_many_rows_as_for_one(admin_client, model) -> None:
    url = admin_url(model, "changelist")
    FULL_SAMPLE_BY_MODEL[model]()
    with CaptureQueriesContext(connection) as one_row:
        admin_client.get(url)
    for _ in range(10):
        FULL_SAMPLE_BY_MODEL[model]()

    with CaptureQueriesContext(connection) as many_rows:
        response = admin_client.get(url)

    assert len(response.context["cl"].result_list) == 11
    assert len(many_rows) == len(one_row), [entry["sql"] for entry in many_rows.captured_queries]


@pytest.mark.django_db
def test_the_site_is_titled_quota_platform(admin_client) -> None:
    response = admin_client.get("/admin/")
    assert response.context["site_header"] == "Quota Platform"
    assert "Quota Platform" in response.context["site_title"]
    assert response.context["title"] == "Configuration and usage"


# --- limits -------------------------------------------------------------------------------------


def _limit_form_data(**changes: object) -> dict[str, object]:
    data = {
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
        "key_by": '["customer", "resource"]',
        "match": "{}",
        "mode": "enforce",
        "on_store_failure": "database",
    }
    data.update(changes)
    return data


@pytest.mark.django_db
def test_a_valid_limit_posted_to_the_add_form_is_saved(admin_client) -> None:
    response = admin_client.post(admin_url(Limit, "add"), _limit_form_data())
    assert response.status_code == 302
    limit = Limit.objects.get(name="put-records-per-second")
    assert limit.key_by == ["customer", "resource"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        pytest.param({"burst": 500}, "burst", id="burst-on-a-fixed-window"),
        pytest.param({"calendar_period": "day"}, "calendar_period", id="calendar-period-on-a-fixed-window"),
        pytest.param(
            {"algorithm": Algorithm.CALENDAR, "calendar_period": "day"}, "period_seconds", id="seconds-on-a-calendar"
        ),
        pytest.param(
            {"algorithm": Algorithm.CALENDAR, "period_seconds": ""}, "calendar_period", id="calendar-without-period"
        ),
        pytest.param({"key_by": '["customer", "shard"]'}, "key_by", id="unknown-key-by-entry"),
        pytest.param({"match": '{"tier": 3}'}, "match", id="match-value-not-a-string"),
        pytest.param({"algorithm": Algorithm.CONCURRENCY, "unit": "bytes"}, "unit", id="concurrency-not-in-requests"),
    ],
)
def test_an_invalid_limit_re_renders_with_the_error_on_the_field_at_fault(admin_client, changes, field) -> None:
    response = admin_client.post(admin_url(Limit, "add"), _limit_form_data(**changes))
    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert list(errors) == [field]
    assert not Limit.objects.exists()


@pytest.mark.django_db
def test_the_limit_add_form_groups_every_field_in_named_fieldsets(admin_client) -> None:
    response = admin_client.get(admin_url(Limit, "add"))
    fieldsets = {name: fields["fields"] for name, fields in response.context["adminform"].fieldsets}
    assert list(fieldsets) == ["What", "How much", "Keying and matching", "Behaviour", "History"]
    assert {"period_seconds", "calendar_period", "burst"} <= set(fieldsets["How much"])
    assert set(response.context["adminform"].form.fields) == {
        "name", "description", "operation", "plan", "algorithm", "quantity", "unit", "period_seconds",
        "calendar_period", "burst", "key_by", "match", "mode", "on_store_failure", "sync_ms",
        "audit",
    }  # fmt: skip
    assert "audit" in fieldsets["Behaviour"]


@pytest.mark.django_db
def test_the_limit_list_and_change_page_show_the_plain_language_summary(admin_client) -> None:
    limit = LimitFactory(quantity=100, period_seconds=60, key_by=["ip"], mode="shadow")
    summary = "100 requests per minute per ip, fixed window, shadow"
    assert summary in admin_client.get(admin_url(Limit, "changelist")).content.decode()
    assert summary in admin_client.get(admin_url(Limit, "change", limit.pk)).content.decode()


# --- overrides and access rules ------------------------------------------------------------------


@pytest.mark.django_db
def test_the_override_list_marks_which_overrides_are_active_now(admin_client) -> None:
    now = timezone.now()
    current = OverrideFactory(reason="launch week", starts=now - dt.timedelta(days=1), ends=now + dt.timedelta(days=1))
    ended = OverrideFactory(reason="last year", starts=now - dt.timedelta(days=400), ends=now - dt.timedelta(days=35))
    upcoming = OverrideFactory(reason="next month", starts=now + dt.timedelta(days=30))
    open_ended = OverrideFactory(reason="forever")

    active = admin_client.get(admin_url(Override, "changelist"), {"in_force": "yes"}).context["cl"].result_list
    inactive = admin_client.get(admin_url(Override, "changelist"), {"in_force": "no"}).context["cl"].result_list

    assert set(active) == {current, open_ended}
    assert set(inactive) == {ended, upcoming}


@pytest.mark.django_db
def test_the_override_list_says_unlimited_instead_of_a_quantity(admin_client) -> None:
    OverrideFactory(quantity=None, unlimited=True, reason="vip")
    response = admin_client.get(admin_url(Override, "changelist"))
    assert '<td class="field-amount">unlimited</td>' in response.content.decode()


@pytest.mark.django_db
def test_an_override_that_is_both_unlimited_and_quantified_is_refused_on_the_quantity(admin_client) -> None:
    data = {
        "customer": CustomerFactory().pk,
        "limit": LimitFactory().pk,
        "resource": "",
        "match": "{}",
        "quantity": 5,
        "burst": "",
        "unlimited": "on",
        "reason": "",
    }
    response = admin_client.post(admin_url(Override, "add"), data)
    assert list(response.context["adminform"].form.errors) == ["quantity"]


@pytest.mark.django_db
def test_the_access_rule_list_shows_what_each_rule_matches_and_filters_by_action(admin_client) -> None:
    customer = CustomerFactory(external_id="acct-noisy")
    AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", reason="scraper")
    allow = AccessRuleFactory(action=RuleAction.ALLOW, ip="", customer=customer, reason="internal load test")

    page = admin_client.get(admin_url(AccessRule, "changelist")).content.decode()
    allowed = admin_client.get(admin_url(AccessRule, "changelist"), {"action__exact": "allow"})

    assert "ip 203.0.113.0/24" in page
    assert "customer acct-noisy" in page
    assert list(allowed.context["cl"].result_list) == [allow]


@pytest.mark.django_db
def test_the_access_rule_list_shows_and_filters_where_each_rule_comes_from(admin_client) -> None:
    AccessRuleFactory(action=RuleAction.DENY, ip="192.0.2.0/24")
    external = AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", source=RuleSource.EXTERNAL)

    page = admin_client.get(admin_url(AccessRule, "changelist")).content.decode()
    from_source = admin_client.get(admin_url(AccessRule, "changelist"), {"source__exact": "external"})

    assert page.count('<td class="field-source">external source</td>') == 1
    assert page.count('<td class="field-source">admin or YAML</td>') == 1
    assert list(from_source.context["cl"].result_list) == [external]


@pytest.mark.django_db
def test_a_rule_from_the_external_source_is_shown_but_not_edited_in_the_admin(admin_client) -> None:
    rule = AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", reason="scraper", source=RuleSource.EXTERNAL)
    url = admin_url(AccessRule, "change", rule.pk)
    data = {"action": "allow", "customer": "", "ip": "203.0.113.0/24", "api_key": "", "operation": "", "expires": ""}

    page = admin_client.get(url)
    posted = admin_client.post(url, {**data, "reason": "edited"})

    assert page.status_code == 200
    assert not page.context["has_change_permission"]
    assert "the next refresh replaces it" in page.content.decode()
    assert posted.status_code == 403
    rule.refresh_from_db()
    assert (rule.action, rule.reason) == ("deny", "scraper")


@pytest.mark.django_db
def test_a_rule_made_in_the_admin_stays_editable_and_its_source_cannot_be_posted(admin_client) -> None:
    rule = AccessRuleFactory(action=RuleAction.DENY, ip="203.0.113.0/24", reason="scraper")
    data = {"action": "deny", "customer": "", "ip": "203.0.113.0/24", "api_key": "", "operation": "", "expires": ""}

    response = admin_client.post(
        admin_url(AccessRule, "change", rule.pk), {**data, "reason": "x", "source": "external"}
    )

    assert response.status_code == 302
    rule.refresh_from_db()
    assert (rule.reason, rule.source) == ("x", RuleSource.ADMIN)


@pytest.mark.django_db
def test_an_access_rule_that_matches_nothing_is_refused(admin_client) -> None:
    data = {"action": "deny", "customer": "", "ip": "", "api_key": "", "operation": "", "expires": "", "reason": "x"}
    response = admin_client.post(admin_url(AccessRule, "add"), data)
    assert response.status_code == 200
    assert response.context["adminform"].form.non_field_errors()
    assert not AccessRule.objects.exists()
