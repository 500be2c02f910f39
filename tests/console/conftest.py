"""Console tests: an analyst who may look at everything and change nothing."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

VIEW_ONLY = ("view_customer", "view_limit", "view_override", "view_accessrule", "view_operation")


@pytest.fixture
def viewer_client(db) -> Client:
    """A logged-in staff user who may look at everything but change nothing (an analyst, say)."""
    user = User.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=VIEW_ONLY))
    client = Client()
    client.force_login(user)
    return client
