import pytest

from apps.customers.models import Customer
from apps.limits.choices import RuleSource
from apps.limits.models import Algorithm, Override, RuleAction
from tests.admin_fixtures import admin_url, inline_management_data
from tests.apikeys.factories import ApiKeyFactory
from tests.customers.factories import CustomerFactory, PlanFactory
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory


@pytest.fixture
def customer() -> Customer:
    return CustomerFactory(external_id="acct-42", name="Acme", plan=PlanFactory(name="pro"))


def _customer_form_data(customer: Customer) -> dict[str, object]:
    return {
        "external_id": customer.external_id,
        "name": customer.name,
        "plan": customer.plan_id or "",
        "timezone": customer.timezone,
        "active": "on",
    }


@pytest.mark.django_db
def test_the_customer_page_shows_its_overrides_access_rules_and_api_keys(admin_client, customer) -> None:
    OverrideFactory(customer=customer, reason="VIP during the migration")
    AccessRuleFactory(customer=customer, action=RuleAction.ALLOW, ip="", reason="internal load test")
    key = ApiKeyFactory(customer=customer, name="billing-worker")

    response = admin_client.get(admin_url(Customer, "change", customer.pk))
    page = response.content.decode()

    inlines = {inline.formset.prefix: inline for inline in response.context["inline_admin_formsets"]}
    assert list(inlines) == ["overrides", "access_rules", "access_rules-2", "api_keys"]
    assert "VIP during the migration" in page
    assert "internal load test" in page
    assert key.prefix in page
    assert "billing-worker" in page


@pytest.mark.django_db
def test_the_api_keys_inline_is_read_only_and_never_shows_a_hash(admin_client, customer) -> None:
    key = ApiKeyFactory(customer=customer)

    response = admin_client.get(admin_url(Customer, "change", customer.pk))
    inline = next(i for i in response.context["inline_admin_formsets"] if i.formset.prefix == "api_keys")

    assert not inline.has_add_permission
    assert not inline.has_change_permission
    assert not inline.has_delete_permission
    assert key.key_hash[:8] not in response.content.decode()


@pytest.mark.django_db
def test_the_external_sources_rules_are_shown_apart_and_read_only(admin_client, customer) -> None:
    AccessRuleFactory(customer=customer, action=RuleAction.ALLOW, ip="", reason="made in the admin")
    AccessRuleFactory(
        customer=customer, action=RuleAction.DENY, ip="", reason="from the source", source=RuleSource.EXTERNAL
    )

    response = admin_client.get(admin_url(Customer, "change", customer.pk))
    inlines = {inline.formset.prefix: inline for inline in response.context["inline_admin_formsets"]}
    editable, external = inlines["access_rules"], inlines["access_rules-2"]

    assert [form.instance.reason for form in editable.formset.forms] == ["made in the admin"]
    assert [form.instance.reason for form in external.formset.forms] == ["from the source"]
    assert "from the external source" in str(external.opts.verbose_name_plural)
    assert (external.has_add_permission, external.has_change_permission, external.has_delete_permission) == (
        False,
        False,
        False,
    )


@pytest.mark.django_db
def test_the_customer_page_links_to_issuing_a_key_for_that_customer(admin_client, customer) -> None:
    response = admin_client.get(admin_url(Customer, "change", customer.pk))
    assert f'href="/admin/apikeys/apikey/add/?customer={customer.pk}"' in response.content.decode()


@pytest.mark.django_db
def test_an_override_added_inline_is_saved_with_the_customer(admin_client, customer) -> None:
    limit = LimitFactory(name="daily-shards")
    url = admin_url(Customer, "change", customer.pk)
    data = {
        **_customer_form_data(customer),
        **inline_management_data(admin_client, url, overrides=1),
        "overrides-0-limit": limit.pk,
        "overrides-0-quantity": 100,
        "overrides-0-match": "{}",
        "overrides-0-reason": "launch week",
    }

    response = admin_client.post(url, data)

    assert response.status_code == 302
    override = Override.objects.get(customer=customer)
    assert (override.limit, override.quantity, override.reason) == (limit, 100, "launch week")


@pytest.mark.django_db
def test_an_invalid_override_added_inline_shows_the_models_error_on_its_field(admin_client, customer) -> None:
    url = admin_url(Customer, "change", customer.pk)
    data = {
        **_customer_form_data(customer),
        **inline_management_data(admin_client, url, overrides=1),
        "overrides-0-limit": LimitFactory().pk,
        "overrides-0-quantity": 100,
        "overrides-0-unlimited": "on",
        "overrides-0-match": "{}",
    }

    response = admin_client.post(url, data)

    overrides = next(i for i in response.context["inline_admin_formsets"] if i.formset.prefix == "overrides")
    assert list(overrides.formset.errors[0]) == ["quantity"]
    assert not Override.objects.exists()


@pytest.mark.django_db
def test_customers_can_be_found_by_external_id_or_name(admin_client) -> None:
    wanted = CustomerFactory(external_id="acct-7", name="Globex")
    CustomerFactory(external_id="acct-8", name="Initech")

    by_id = admin_client.get(admin_url(Customer, "changelist"), {"q": "acct-7"}).context["cl"].result_list
    by_name = admin_client.get(admin_url(Customer, "changelist"), {"q": "globex"}).context["cl"].result_list

    assert list(by_id) == [wanted]
    assert list(by_name) == [wanted]


@pytest.mark.django_db
def test_the_plan_autocomplete_finds_plans_by_name(admin_client) -> None:
    PlanFactory(name="enterprise")
    PlanFactory(name="free")
    response = admin_client.get(
        "/admin/autocomplete/",
        {"app_label": "customers", "model_name": "customer", "field_name": "plan", "term": "enter"},
    )
    assert [item["text"] for item in response.json()["results"]] == ["enterprise"]


@pytest.mark.django_db
def test_the_customer_page_shows_what_it_holds_of_each_concurrency_limit(admin_client, api, customer) -> None:
    LimitFactory(
        name="streams", operation=OperationFactory(name="CreateStream"), algorithm=Algorithm.CONCURRENCY,
        quantity=3, period_seconds=None, key_by=["customer"],
    )  # fmt: skip
    assert api.put("/api/v1/customers/acct-42/allocations/streams", {"held": 2}, format="json").status_code == 200

    page = admin_client.get(admin_url(Customer, "change", customer.pk)).content.decode()

    assert "holdings" in page
    assert "<td>streams</td><td>CreateStream</td><td>2</td><td>3</td>" in page


@pytest.mark.django_db
def test_the_holdings_say_so_when_no_concurrency_limit_applies(admin_client, engine, customer) -> None:
    page = admin_client.get(admin_url(Customer, "change", customer.pk)).content.decode()

    assert "No concurrency limit applies to this customer." in page
