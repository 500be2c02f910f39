"""Changes made by manage.py import_limits (creates, updates, prunes, dry runs) and by the toggles refresh job."""

import datetime as dt
import json
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from apps.history.models import ChangeEvent
from apps.limits.models import Limit
from apps.ops.tasks import purge_expired_task, refresh_toggles_task
from apps.toggles.models import FeatureToggle
from apps.toggles.services import toggles_refresh
from tests.customers.factories import CustomerFactory
from tests.history.helpers import before_after, events_of, last_event
from tests.limits.factories import LimitFactory, OverrideFactory

pytestmark = pytest.mark.django_db

LIMITS = """
operations: [{name: ModifyShardCount}]
customers: [{id: acct-1}]
limits:
  - {name: daily, operation: ModifyShardCount, algorithm: calendar, limit: 10, period: day}
overrides:
  - {customer: acct-1, limit: daily, quantity: 100, reason: VIP}
"""


@pytest.fixture
def import_limits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Run `manage.py import_limits FILE ...` in this process, as a shell would (the actor comes from argv)."""

    def run(text: str, *options: str) -> str:
        path = tmp_path / "limits.yaml"
        path.write_text(text, encoding="utf-8")
        monkeypatch.setattr(sys, "argv", ["manage.py", "import_limits", str(path), *options])
        out = StringIO()
        call_command("import_limits", str(path), *options, stdout=out)
        return out.getvalue()

    return run


def test_an_import_records_each_created_object_as_done_by_the_command(import_limits) -> None:
    import_limits(LIMITS)

    events = ChangeEvent.objects.order_by("id")
    assert [(event.content_type.model, event.action) for event in events] == [
        ("operation", "created"),
        ("customer", "created"),
        ("limit", "created"),
        ("override", "created"),
    ]
    assert {(event.actor, event.via) for event in events} == {("import_limits (command)", "config import")}
    assert before_after(events[3])["reason"] == (None, "VIP")
    assert events[3].customer == "acct-1"


def test_an_import_that_changes_a_limit_records_before_and_after(import_limits) -> None:
    import_limits(LIMITS)

    import_limits(LIMITS.replace("limit: 10", "limit: 20"))

    event = last_event(Limit.objects.get(name="daily"))
    assert (event.actor, event.action) == ("import_limits (command)", "changed")
    assert before_after(event) == {"quantity": (10, 20)}


def test_an_import_that_changes_nothing_records_nothing(import_limits) -> None:
    import_limits(LIMITS)
    count = ChangeEvent.objects.count()

    import_limits(LIMITS)

    assert ChangeEvent.objects.count() == count


def test_a_prune_records_each_deleted_object_with_its_last_values(import_limits) -> None:
    import_limits(LIMITS)

    without_override = LIMITS.replace(
        "overrides:\n  - {customer: acct-1, limit: daily, quantity: 100, reason: VIP}", "overrides: []"
    )
    import_limits(without_override, "--prune")

    event = ChangeEvent.objects.filter(action="deleted").get()
    assert (event.content_type.model, event.actor, event.customer) == ("override", "import_limits (command)", "acct-1")
    assert before_after(event)["quantity"] == (100, None)
    assert before_after(event)["reason"] == ("VIP", None)


def test_a_dry_run_records_nothing(import_limits) -> None:
    output = import_limits(LIMITS, "--dry-run")

    assert "Dry run" in output
    assert not ChangeEvent.objects.exists()


def test_a_refused_import_records_nothing(import_limits) -> None:
    with pytest.raises(Exception, match="limit"):
        import_limits(LIMITS + "  - {name: bad, operation: Missing, algorithm: calendar, limit: 1, period: day}\n")

    assert not ChangeEvent.objects.exists()


def test_the_toggles_refresh_job_records_toggles_and_overrides_it_changes(settings, tmp_path: Path) -> None:
    LimitFactory(name="daily", quantity=10)
    customer = CustomerFactory(external_id="acct-1")
    source = tmp_path / "toggles.json"
    source.write_text(
        json.dumps(
            {
                "toggles": [{"name": "new-ui", "enabled": True, "payload": {"pct": 10}}],
                "overrides": [{"customer": "acct-1", "limit": "daily", "quantity": 100}],
            }
        )
    )
    settings.QUOTA_TOGGLES_SOURCE = str(source)
    settings.QUOTA_TOGGLES_LKG_PATH = tmp_path / "lkg.json"

    refresh_toggles_task.apply().get()

    toggle_event = last_event(FeatureToggle.objects.get(name="new-ui"))
    assert (toggle_event.actor, toggle_event.via) == ("refresh_toggles_task (job)", "toggles refresh")
    assert before_after(toggle_event)["payload"] == (None, {"pct": 10})
    override_event = last_event(customer.overrides.get())
    assert (override_event.actor, override_event.via) == (
        "refresh_toggles_task (job)",
        "toggles refresh › config import",
    )


def test_a_refresh_that_switches_a_toggle_off_records_on_to_off(settings, tmp_path: Path) -> None:
    source = tmp_path / "toggles.json"
    settings.QUOTA_TOGGLES_LKG_PATH = tmp_path / "lkg.json"
    source.write_text(json.dumps({"toggles": [{"name": "new-ui", "enabled": True}]}))
    toggles_refresh(source=str(source))

    source.write_text(json.dumps({"toggles": []}))
    toggles_refresh(source=str(source))

    events = events_of(FeatureToggle.objects.get(name="new-ui"))
    assert [event.action for event in events] == ["created", "changed"]
    assert before_after(events[1]) == {"enabled": (True, False)}
    assert events[1].actor == "system"


def test_the_purge_job_records_each_expired_override_it_deletes() -> None:
    now = timezone.now()
    expired = OverrideFactory(customer=CustomerFactory(external_id="acct-3"), ends=now - dt.timedelta(days=1))
    OverrideFactory(ends=now + dt.timedelta(days=1))

    purge_expired_task.apply().get()

    event = ChangeEvent.objects.get(action="deleted")
    assert (event.object_id, event.customer, event.actor) == (str(expired.pk), "acct-3", "purge_expired_task (job)")
