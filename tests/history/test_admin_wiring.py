"""Every config model's real admin shows the one change history behind its History button."""

import pytest
from django.contrib import admin
from django.test import Client

from apps.apikeys.models import ApiKey, Service
from apps.customers.models import Customer, Plan
from apps.history.admin import HistoryAdminMixin
from apps.limits.models import AccessRule, Limit, Operation, Override
from apps.limits.services import config_object_save
from apps.toggles.models import FeatureToggle
from tests.limits.factories import LimitFactory

pytestmark = pytest.mark.django_db
CONFIG_MODELS = [Operation, Limit, Override, AccessRule, Plan, Customer, Service, ApiKey, FeatureToggle]


@pytest.mark.parametrize("model", CONFIG_MODELS, ids=lambda model: model.__name__)
def test_the_registered_admin_uses_the_change_history(model) -> None:
    assert isinstance(admin.site._registry[model], HistoryAdminMixin)


def test_a_limits_history_button_shows_a_change_made_by_a_service(django_user_model) -> None:
    limit = LimitFactory(name="daily", quantity=10)
    config_object_save(instance=limit, values={"quantity": 25})
    client = Client()
    client.force_login(django_user_model.objects.create_superuser("alice", "alice@example.com", "pw"))

    page = client.get(f"/admin/limits/limit/{limit.pk}/history/").content.decode()

    assert "10 → 25" in page
