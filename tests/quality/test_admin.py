"""The quality admin: the log, the audit runs and the loss checks can be read, never added, changed or deleted."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.quality.models import AuditRun, DecisionEvent, LogCheck
from tests.admin_fixtures import admin_url

pytestmark = pytest.mark.django_db
AT = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)


def rows() -> list:
    return [
        DecisionEvent.objects.create(slot="qp:dlog:{c=acme}", entry_id="1-0", at=AT, kind="allow", customer="acme"),
        AuditRun.objects.create(start=AT, end=AT + dt.timedelta(days=1), started_at=AT, violations=2),
        LogCheck.objects.create(minute=1, customer="acme", operation="Put", usage_logged=3, drained=2, difference=1),
    ]


def test_every_quality_model_is_listed_and_shown_read_only(admin_client) -> None:
    for row in rows():
        model = type(row)
        assert admin_client.get(admin_url(model, "changelist")).status_code == 200
        assert admin_client.get(admin_url(model, "change", row.pk)).status_code == 200
        assert admin_client.get(admin_url(model, "add")).status_code == 403
        assert admin_client.post(admin_url(model, "delete", row.pk), {"post": "yes"}).status_code == 403
        assert model.objects.filter(pk=row.pk).exists()


def test_the_log_list_filters_by_kind(admin_client) -> None:
    rows()
    DecisionEvent.objects.create(slot="qp:dlog:{c=bob}", entry_id="1-0", at=AT, kind="deny", customer="bob")

    response = admin_client.get(admin_url(DecisionEvent, "changelist"), {"kind": "deny"})

    assert response.status_code == 200
    assert [event.customer for event in response.context["cl"].result_list] == ["bob"]
