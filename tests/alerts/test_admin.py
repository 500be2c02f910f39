"""The alerts' admin pages: rules edited with their scope and channels, the history listed and filtered."""

import pytest

from apps.alerts.models import AlertEvent, AlertRule, JobOutcome, RuleKind
from tests.admin_fixtures import admin_url
from tests.alerts.factories import AlertEventFactory, AlertRuleFactory, JobOutcomeFactory

pytestmark = pytest.mark.django_db


def rule_form(**changes: object) -> dict[str, object]:
    data = {"name": "putrecords-denials", "kind": RuleKind.DENIALS, "enabled": "on", "threshold": 100,
            "window_minutes": 2, "customer": "", "limit": "", "operation": "", "job": "",
            "emails": "ops@example.com", "webhook_url": "https://hooks.example.com/quota"}  # fmt: skip
    data.update(changes)
    return data


@pytest.mark.parametrize("model", [AlertRule, AlertEvent, JobOutcome])
def test_each_alerts_page_opens(admin_client, model) -> None:
    assert admin_client.get(admin_url(model, "changelist")).status_code == 200


def test_a_rule_posted_to_the_add_form_is_saved_with_a_fresh_webhook_secret(admin_client) -> None:
    response = admin_client.post(admin_url(AlertRule, "add"), rule_form())

    assert response.status_code == 302
    rule = AlertRule.objects.get()
    assert (rule.threshold, rule.email_list, len(rule.webhook_secret)) == (100, ["ops@example.com"], 64)
    assert AlertRuleFactory().webhook_secret != rule.webhook_secret


def test_without_redis_saving_a_usage_rule_warns_that_it_will_not_be_checked(admin_client, settings) -> None:
    settings.REDIS_URL = settings.COUNTERS_REDIS_URL = ""  # the embedded default

    usage = admin_client.post(admin_url(AlertRule, "add"), rule_form(kind=RuleKind.USAGE, threshold=80), follow=True)
    denials = admin_client.post(admin_url(AlertRule, "add"), rule_form(name="other"), follow=True)

    assert "Usage-share alerts need Redis (production setup: set REDIS_URL)" in usage.content.decode()
    assert "usage rules are not checked" in usage.content.decode()
    assert "Usage-share alerts need Redis" not in denials.content.decode()
    assert AlertRule.objects.count() == 2


@pytest.mark.parametrize(
    ("changes", "field", "says"),
    [
        ({"webhook_url": "https://192.168.1.10/hook"}, "webhook_url", "not a public address: private"),
        ({"webhook_url": "http://hooks.example.com/hook"}, "webhook_url", "plain http:// is refused"),
        ({"emails": "ops@example.com, not-an-address"}, "emails", "'not-an-address' is not an email address."),
    ],
)
def test_a_rule_that_could_not_be_delivered_is_refused_on_its_field(admin_client, changes, field, says) -> None:
    response = admin_client.post(admin_url(AlertRule, "add"), rule_form(**changes))

    assert response.status_code == 200
    assert says in " ".join(response.context["adminform"].form.errors[field])
    assert not AlertRule.objects.exists()


def test_the_rule_list_shows_scope_channels_and_what_is_firing_now(admin_client) -> None:
    rule = AlertRuleFactory(name="acme", job="flush_usage", kind=RuleKind.JOB, emails="a@example.com")
    AlertEventFactory(rule=rule, open=True)
    AlertEventFactory(rule=rule, open=False)

    response = admin_client.get(admin_url(AlertRule, "changelist"))

    text = response.content.decode()
    assert "job flush_usage" in text
    assert "1 email(s)" in text
    assert list(response.context["cl"].result_list)[0].firing == 1


def test_the_history_is_filtered_by_kind_and_rule(admin_client) -> None:
    loud, quiet = AlertRuleFactory(name="loud"), AlertRuleFactory(name="quiet")
    fired = AlertEventFactory(rule=loud, subject="customer acct-1")
    AlertEventFactory(rule=loud, kind="resolved", subject="customer acct-1", resolves=fired)
    AlertEventFactory(rule=quiet, subject="customer acct-2")
    url = admin_url(AlertEvent, "changelist")

    by_kind = admin_client.get(url, {"kind__exact": "fired"}).context["cl"].result_list
    by_rule = admin_client.get(url, {"rule__id__exact": loud.pk}).context["cl"].result_list

    assert sorted(event.rule_name for event in by_kind) == ["loud", "quiet"]
    assert sorted(event.kind for event in by_rule) == ["fired", "resolved"]


def test_history_and_job_outcomes_cannot_be_added_or_edited_by_hand(admin_client) -> None:
    event, outcome = AlertEventFactory(), JobOutcomeFactory()

    assert admin_client.get(admin_url(AlertEvent, "add")).status_code == 403
    assert admin_client.get(admin_url(JobOutcome, "add")).status_code == 403
    response = admin_client.get(admin_url(AlertEvent, "change", event.pk))
    assert (response.status_code, response.context["has_change_permission"]) == (200, False)
    assert admin_client.get(admin_url(JobOutcome, "change", outcome.pk)).status_code == 200
