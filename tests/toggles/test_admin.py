import pytest

from apps.toggles.models import FeatureToggle, ToggleSource
from tests.admin_fixtures import admin_url
from tests.toggles.factories import FeatureToggleFactory


@pytest.mark.django_db
def test_a_toggle_can_be_switched_on_from_the_list(admin_client) -> None:
    toggle = FeatureToggleFactory(enabled=False)
    data = {
        "form-TOTAL_FORMS": 1,
        "form-INITIAL_FORMS": 1,
        "form-MIN_NUM_FORMS": 0,
        "form-MAX_NUM_FORMS": 1000,
        "form-0-id": toggle.pk,
        "form-0-enabled": "on",
        "_save": "Save",
    }

    response = admin_client.post(admin_url(FeatureToggle, "changelist"), data)

    assert response.status_code == 302
    assert FeatureToggle.objects.get(pk=toggle.pk).enabled


@pytest.mark.django_db
def test_the_toggle_list_shows_name_an_enabled_checkbox_customer_source_and_last_change(admin_client) -> None:
    FeatureToggleFactory(name="new-checkout", enabled=True, source=ToggleSource.EXTERNAL)

    response = admin_client.get(admin_url(FeatureToggle, "changelist"))

    page = response.content.decode()
    assert list(response.context["cl"].list_display) == [
        "action_checkbox", "name", "enabled", "customer", "source", "description", "updated_at",
    ]  # fmt: skip
    assert '<input type="checkbox" name="form-0-enabled" id="id_form-0-enabled" checked>' in page
    assert "external source" in page


@pytest.mark.django_db
def test_an_operator_cannot_claim_a_toggle_came_from_the_external_source(admin_client) -> None:
    toggle = FeatureToggleFactory(name="beta", source=ToggleSource.ADMIN)
    data = {"name": "beta", "enabled": "on", "payload": "null", "description": "", "source": ToggleSource.EXTERNAL}

    response = admin_client.post(admin_url(FeatureToggle, "change", toggle.pk), data)

    assert response.status_code == 302
    toggle.refresh_from_db()
    assert (toggle.enabled, toggle.source) == (True, ToggleSource.ADMIN)


@pytest.mark.django_db
def test_a_payload_that_is_not_json_is_refused_on_the_payload_field(admin_client) -> None:
    data = {"name": "beta", "enabled": "on", "payload": "{not json", "description": ""}
    response = admin_client.post(admin_url(FeatureToggle, "add"), data)
    assert list(response.context["adminform"].form.errors) == ["payload"]


@pytest.mark.django_db
@pytest.mark.parametrize("payload", ["1180591620717411303424", "[" * 300 + "]" * 300], ids=["2**70", "300 deep"])
def test_a_payload_the_api_cannot_send_is_refused_on_the_payload_field(admin_client, client, payload) -> None:
    data = {"name": "beta", "enabled": "on", "payload": payload, "description": ""}

    response = admin_client.post(admin_url(FeatureToggle, "add"), data)

    assert list(response.context["adminform"].form.errors) == ["payload"]
    assert "cannot be sent as JSON" in str(response.context["adminform"].form.errors["payload"])
    assert not FeatureToggle.objects.exists()  # GET /api/v1/toggles would have failed on it
