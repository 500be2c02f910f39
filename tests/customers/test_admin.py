"""The plan admin."""

import pytest

from tests.customers.factories import PlanFactory


@pytest.mark.django_db
def test_the_plan_autocomplete_finds_plans_by_name(admin_client) -> None:
    PlanFactory(name="enterprise")
    PlanFactory(name="free")
    response = admin_client.get(
        "/admin/autocomplete/",
        {"app_label": "customers", "model_name": "customer", "field_name": "plan", "term": "enter"},
    )
    assert [item["text"] for item in response.json()["results"]] == ["enterprise"]
