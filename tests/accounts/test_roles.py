"""The roles migration: Operators edit configuration, Analysts read usage and export, Read-only looks."""

import importlib

import pytest
from django.apps import apps
from django.contrib.auth.models import Group
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from apps.customers.models import Customer
from apps.history.models import ChangeEvent
from apps.limits.models import Limit
from apps.usage.models import UsageMinute
from tests.admin_fixtures import admin_url
from tests.customers.factories import CustomerFactory
from tests.history.helpers import change_form_data
from tests.limits.factories import LimitFactory

pytestmark = pytest.mark.django_db

ROLES = ("Operators", "Analysts", "Read-only")
SAVE_BUTTON = 'name="_save"'


@pytest.fixture
def login(django_user_model):  # type: ignore[no-untyped-def]
    def as_member_of(role: str) -> Client:
        user = django_user_model.objects.create_user(f"user-{role}", password="pw", is_staff=True)
        user.groups.add(Group.objects.get(name=role))
        client = Client()
        client.force_login(user)
        return client

    return as_member_of


def _permissions(role: str) -> set[str]:
    group = Group.objects.get(name=role)
    return {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}


def test_the_migration_creates_the_three_roles_with_their_permissions() -> None:
    operators, analysts, read_only = (_permissions(role) for role in ROLES)

    assert {"limits.change_limit", "apikeys.delete_apikey", "django_celery_beat.add_periodictask"} <= operators
    assert {"customers.add_customer", "toggles.change_featuretoggle", "limits.view_accessrule"} <= operators
    assert "reports.export_usage" not in operators
    assert analysts == {
        "usage.view_usageminute",
        "usage.view_usagehour",
        "usage.view_usageday",
        "customers.view_customer",
        "history.view_changeevent",
        "reports.view_exportjob",
        "reports.export_usage",
        "usage.view_quarantinedusage",
    }
    assert {codename.split(".")[1].split("_")[0] for codename in read_only} == {"view"}
    assert {"limits.view_limit", "apikeys.view_apikey", "usage.view_usageday"} <= read_only
    assert all("history.view_changeevent" in permissions for permissions in (operators, analysts, read_only))


def test_an_operator_can_open_and_save_configuration(login) -> None:
    client = login("Operators")
    limit = LimitFactory(quantity=10)
    url = admin_url(Limit, "change", limit.pk)

    assert client.get(admin_url(Limit, "add")).status_code == 200
    assert SAVE_BUTTON in client.get(url).content.decode()
    assert client.post(url, change_form_data(client, url, quantity=20)).status_code == 302
    limit.refresh_from_db()
    assert limit.quantity == 20
    assert client.get("/admin/django_celery_beat/periodictask/add/").status_code == 200


def test_an_analyst_reads_usage_and_customers_but_cannot_open_limits_or_save_customers(login) -> None:
    client = login("Analysts")
    customer = CustomerFactory(name="Acme")
    url = admin_url(Customer, "change", customer.pk)

    assert client.get(admin_url(UsageMinute, "changelist")).status_code == 200
    assert client.get(admin_url(Limit, "changelist")).status_code == 403
    page = client.get(url)
    assert page.status_code == 200
    assert SAVE_BUTTON not in page.content.decode()
    assert client.post(url, {"external_id": customer.external_id, "name": "Renamed"}).status_code == 403
    customer.refresh_from_db()
    assert customer.name == "Acme"


def test_a_read_only_user_sees_configuration_but_cannot_add_or_save(login) -> None:
    client = login("Read-only")
    limit = LimitFactory(quantity=10)
    url = admin_url(Limit, "change", limit.pk)

    assert client.get(admin_url(Limit, "changelist")).status_code == 200
    assert client.get(admin_url(Limit, "add")).status_code == 403
    page = client.get(url)
    assert page.status_code == 200
    assert SAVE_BUTTON not in page.content.decode()
    assert client.post(url, {"quantity": 20}).status_code == 403
    assert client.post(admin_url(Limit, "delete", limit.pk), {"post": "yes"}).status_code == 403
    limit.refresh_from_db()
    assert limit.quantity == 10


@pytest.mark.parametrize("role", ROLES)
def test_every_role_reads_the_change_history(login, role: str) -> None:
    client = login(role)
    event = ChangeEvent.objects.create(actor="alice", action="unblock", object_repr="acct-1")

    assert client.get(admin_url(ChangeEvent, "changelist")).status_code == 200
    assert client.get(admin_url(ChangeEvent, "change", event.pk)).status_code == 200


@pytest.mark.parametrize(("role", "may_export"), [("Operators", False), ("Analysts", True), ("Read-only", False)])
def test_only_analysts_may_export_usage(django_user_model, role: str, may_export: bool) -> None:
    user = django_user_model.objects.create_user("someone", is_staff=True)
    user.groups.add(Group.objects.get(name=role))

    assert user.has_perm("reports.export_usage") is may_export


def test_the_migration_can_be_reversed_and_applied_again() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", None)])
    assert not Group.objects.filter(name__in=ROLES).exists()

    executor = MigrationExecutor(connection)
    executor.migrate([("accounts", "0001_roles")])
    assert set(Group.objects.filter(name__in=ROLES).values_list("name", flat=True)) == set(ROLES)


def test_running_the_roles_again_changes_nothing() -> None:
    before = {role: _permissions(role) for role in ROLES}

    importlib.import_module("apps.accounts.migrations.0001_roles").roles_create(apps, None)
    importlib.import_module("apps.accounts.migrations.0002_quarantined_usage_view").grant(apps, None)

    assert {role: _permissions(role) for role in ROLES} == before


@pytest.mark.parametrize("role", ROLES)
def test_every_role_sees_the_quarantined_usage(login, role: str) -> None:
    assert "usage.view_quarantinedusage" in _permissions(role)
    assert login(role).get("/admin/usage/quarantinedusage/").status_code == 200
