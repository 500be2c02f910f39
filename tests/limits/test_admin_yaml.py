"""The admin's YAML import (upload → dry-run diff → apply in one transaction) and export, through the admin."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from apps.history.models import ChangeEvent
from apps.limits.config_io import config_export, config_yaml_dump
from apps.limits.config_io.yaml_io import MAX_DOCUMENT_BYTES
from apps.limits.models import AccessRule, Limit, Operation, Override
from tests.limits.factories import AccessRuleFactory, LimitFactory, OperationFactory, OverrideFactory
from tests.support.browser import staff_user_create

pytestmark = pytest.mark.django_db

PASSWORD = "a-test-password"  # noqa: S105 - a throwaway test account
IMPORT_URL = reverse("admin:limits_limit_yaml_import")
EXPORT_URL = reverse("admin:limits_limit_yaml_export")

FILE = """
operations: [{name: ListStreams}]
limits:
  - {name: streams, operation: ListStreams, algorithm: fixed_window, limit: 20, period: minute, key_by: [customer]}
"""


def upload(client, text: str, *, prune: bool = False):
    data = {"file": SimpleUploadedFile("limits.yaml", text.encode(), content_type="application/yaml")}
    if prune:
        data["prune"] = "on"
    return client.post(IMPORT_URL, data)


def apply(client, preview_response):
    """Submit the preview's apply form as a browser would, encoded as the form's enctype says."""
    form = preview_response.context["apply_form"]
    data = {name: form.initial[name] for name in ("text", "prune", "fingerprint")}
    tag = re.search(r'<form[^>]*id="yaml-apply-form"[^>]*>', preview_response.content.decode())
    assert tag is not None
    if 'enctype="multipart/form-data"' in tag.group():
        return client.post(IMPORT_URL, data)
    return client.post(IMPORT_URL, urlencode(data), content_type="application/x-www-form-urlencoded")


def test_an_upload_shows_the_diff_and_writes_nothing(admin_client) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=10, key_by=["customer"])

    response = upload(admin_client, FILE)

    assert response.status_code == 200
    assert "limits: 0 created, 1 updated, 0 deleted" in response.context["lines"]
    assert any("updated streams" in line and "limit 10 → 20" in line for line in response.context["lines"])
    assert "Apply these changes" in response.content.decode()
    assert Limit.objects.get(name="streams").quantity == 10
    assert not ChangeEvent.objects.filter(via__contains="config import").exists()


def test_applying_the_preview_writes_it_in_one_go_with_history(admin_client, admin_user) -> None:
    preview = upload(admin_client, FILE)

    response = apply(admin_client, preview)

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:limits_limit_changelist")
    assert Limit.objects.get(name="streams").quantity == 20
    events = ChangeEvent.objects.filter(via__contains="config import")
    assert {event.actor for event in events} == {admin_user.username}
    assert {event.object_repr for event in events} == {"ListStreams", "streams"}


def test_a_change_made_after_the_preview_stops_the_apply_and_shows_the_new_diff(admin_client) -> None:
    preview = upload(admin_client, FILE)
    OperationFactory(name="ListStreams", description="written by someone else meanwhile")

    response = apply(admin_client, preview)

    assert response.status_code == 200
    assert response.context["stale"] is True
    assert "operations: 0 created, 1 updated, 0 deleted" in response.context["lines"]
    assert not Limit.objects.exists()


def test_an_object_the_preview_deletes_that_is_edited_meanwhile_stops_the_apply(admin_client) -> None:
    streams = LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), key_by=["customer"])
    LimitFactory(name="old", operation=streams.operation)
    preview = upload(admin_client, FILE, prune=True)
    assert "  deleted old" in preview.context["lines"]
    old = Limit.objects.get(name="old")
    old.description = "still needed: edited after the preview"
    old.save()  # the preview's line "deleted old" reads the same as before

    response = apply(admin_client, preview)

    assert response.context["stale"] is True
    assert "  deleted old" in response.context["lines"]
    assert Limit.objects.get(name="old").description == "still needed: edited after the preview"
    assert Limit.objects.get(name="streams").quantity == 10


def test_a_row_deleted_with_a_pruned_object_that_is_edited_meanwhile_stops_the_apply(admin_client) -> None:
    streams = LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), key_by=["customer"])
    OverrideFactory(limit=LimitFactory(name="old", operation=streams.operation), reason="")
    preview = upload(admin_client, FILE, prune=True)
    assert "  also deleted with old: 1 override" in preview.context["lines"]
    override = Override.objects.get()
    override.reason = "edited after the preview"
    override.save()

    response = apply(admin_client, preview)

    assert response.context["stale"] is True
    assert Override.objects.get().reason == "edited after the preview"
    assert Limit.objects.filter(name="old").exists()


def test_an_edit_the_diff_cannot_show_on_an_object_the_import_updates_stops_the_apply(admin_client) -> None:
    AccessRuleFactory(ip="203.0.113.0/24", reason="")
    preview = upload(admin_client, "access_rules: [{action: deny, ip: 203.0.113.0/24, reason: abuse}]")
    assert '  updated deny ip 203.0.113.0/24: reason "" → abuse' in preview.context["lines"]
    # Another door stores the same network spelled from one of its hosts: the export, and so the diff
    # line, normalize it away, yet the row the apply would overwrite is not the row that was previewed.
    AccessRule.objects.update(ip="203.0.113.9/24")

    response = apply(admin_client, preview)

    assert response.context["stale"] is True
    assert '  updated deny ip 203.0.113.0/24: reason "" → abuse' in response.context["lines"]
    assert AccessRule.objects.get().ip == "203.0.113.9/24"
    assert AccessRule.objects.get().reason == ""


def test_an_object_the_file_names_unchanged_that_is_edited_meanwhile_stops_the_apply(admin_client) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"), quantity=20, key_by=["customer"])
    preview = upload(
        admin_client,
        FILE + "  - {name: other, operation: ListStreams, algorithm: fixed_window, limit: 5, period: minute}\n",
    )
    Limit.objects.filter(name="streams").update(quantity=30)

    response = apply(admin_client, preview)

    assert response.context["stale"] is True
    assert not Limit.objects.filter(name="other").exists()


def test_a_file_near_the_size_cap_is_applied_as_well_as_previewed(admin_client) -> None:
    # What the browser posts back (the previewed text) must fit what Django accepts in a request body,
    # also for text that URL-encoding would triple in size.
    description = "é: " * ((MAX_DOCUMENT_BYTES - 100) // 4)
    preview = upload(admin_client, f'operations: [{{name: Big, description: "{description}"}}]')
    assert preview.context["lines"] == ["operations: 1 created, 0 updated, 0 deleted", "  created Big"]

    response = apply(admin_client, preview)

    assert response.status_code == 302
    assert Operation.objects.get(name="Big").description == description


def test_an_invalid_file_lists_every_problem_and_offers_no_apply(admin_client) -> None:
    text = FILE.replace("limit: 20", "limit: 0") + (
        "  - {name: other, operation: ListStreams, algorithm: fixed_window, limit: -3, period: minute}\n"
    )

    response = upload(admin_client, text)

    errors = response.context["preview"].errors
    assert response.context["apply_form"] is None
    assert any("streams" in error and "limit" in error for error in errors), errors
    assert any("other" in error and "limit" in error for error in errors), errors
    assert not Operation.objects.exists()


def test_a_file_that_is_not_yaml_or_not_utf8_is_refused_in_words(admin_client) -> None:
    assert "not valid YAML: line 1, column 9" in upload(admin_client, "limits: ]").context["preview"].errors[0]
    data = {"file": SimpleUploadedFile("x.yaml", "名前".encode("utf-16"))}
    assert admin_client.post(IMPORT_URL, data).context["preview"].errors == ["the file is not UTF-8 text"]


def test_export_downloads_the_configuration_that_imports_as_no_change(admin_client) -> None:
    LimitFactory(name="streams", operation=OperationFactory(name="ListStreams"))

    response = admin_client.get(EXPORT_URL)

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert response["Content-Disposition"].startswith('attachment; filename="limits-')
    text = response.content.decode()
    assert text == config_yaml_dump(config_export())
    assert yaml.safe_load(text)["limits"][0]["name"] == "streams"
    preview = upload(admin_client, text)
    assert preview.context["preview"].report.changed is False
    assert "This file changes nothing" in preview.content.decode()


def test_only_operators_may_import_and_analysts_may_not_export(client) -> None:
    import importlib

    from django.apps import apps
    from django.contrib.auth.models import Group

    # The roles come from data migrations, which an earlier transactional test's flush may have emptied.
    importlib.import_module("apps.accounts.migrations.0001_roles").roles_create(apps, None)
    importlib.import_module("apps.accounts.migrations.0002_quarantined_usage_view").grant(apps, None)
    operator = staff_user_create("oper", PASSWORD)
    operator.groups.add(Group.objects.get(name="Operators"))
    analyst = staff_user_create("ana", PASSWORD)
    analyst.groups.add(Group.objects.get(name="Analysts"))
    reader = staff_user_create("reader", PASSWORD)
    reader.groups.add(Group.objects.get(name="Read-only"))

    statuses = {}
    for user in (operator, analyst, reader):
        client.force_login(user)
        statuses[user.username] = (client.get(IMPORT_URL).status_code, client.get(EXPORT_URL).status_code)
        client.logout()

    assert statuses == {"oper": (200, 200), "ana": (403, 403), "reader": (403, 200)}


def test_the_limit_list_links_to_the_import_and_the_export(admin_client) -> None:
    page = admin_client.get(reverse("admin:limits_limit_changelist")).content.decode()
    assert f'href="{IMPORT_URL}"' in page
    assert f'href="{EXPORT_URL}"' in page


def test_the_preview_is_a_table_of_added_changed_and_removed_with_before_and_after(admin_client) -> None:
    operation = OperationFactory(name="ListStreams")
    LimitFactory(name="streams", operation=operation, quantity=10, key_by=["customer"], description="old words")
    LimitFactory(name="gone", operation=operation, quantity=5)
    text = FILE + "  - {name: fresh, operation: ListStreams, algorithm: fixed_window, limit: 3, period: hour}\n"

    response = upload(admin_client, text, prune=True)

    [limits] = response.context["diff"]  # the operations section changes nothing: no table
    assert (limits.name, limits.added, limits.changed, limits.removed) == ("limits", 1, 1, 1)
    rows = [(row.change, row.label, row.field, row.before, row.after) for row in limits.rows]
    assert ("added", "fresh", "", "", "") in rows
    assert ("changed", "streams", "limit", "10", "20") in rows
    assert ("changed", "streams", "description", "old words", '""') in rows
    assert ("removed", "gone", "", "", "") in rows
    page = response.content.decode()
    assert "<pre" not in page
    assert '<table class="yaml-diff" data-section="limits">' in page
    assert "<caption>Limits: 1 added, 1 changed, 1 removed</caption>" in page
    assert (
        '<td class="diff-field"><code>limit</code></td><td class="diff-before"><code>10</code></td>'
        '<td class="diff-arrow">→</td><td class="diff-after"><code>20</code></td>'
    ) in page
    assert '<tr class="diff-removed"><td class="diff-change">removed</td><td class="diff-entry">gone</td>' in page


def test_the_preview_warns_about_an_operation_left_without_a_limit(admin_client) -> None:
    response = upload(
        admin_client,
        FILE.replace("operations: [{name: ListStreams}]", "operations: [{name: ListStreams}, {name: ListStreamz}]"),
    )

    page = response.content.decode()
    assert '<ul class="messagelist" id="yaml-warnings"><li class="warning">Operation “ListStreamz” has no limit' in page
