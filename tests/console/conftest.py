"""The customers' admin tests share the decision API's fixtures (a RedisStore with this test's key prefix)."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from tests.enforcement.conftest import (  # noqa: F401 - fixtures, found by pytest by name
    _forgive_bad_keys,
    api,
    clock,
    customer_key,
    engine,
    service_key,
)

VIEW_ONLY = ("view_customer", "view_limit", "view_override", "view_accessrule", "view_operation")


@pytest.fixture
def viewer_client(db) -> Client:
    """A logged-in staff user who may look at everything but change nothing (an analyst, say)."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=VIEW_ONLY))
    client = Client()
    client.force_login(user)
    return client
