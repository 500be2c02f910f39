import secrets

from django.core.validators import URLValidator
from django.db import models

from apps.common.models import TimeStampedModel


class RuleKind(models.TextChoices):
    USAGE = "usage", "a customer above a share of a limit"
    DENIALS = "denials", "denials per minute"
    STORE = "store", "the counter store degraded"
    JOB = "job", "a beat job failing"


class EventKind(models.TextChoices):
    FIRED = "fired", "fired"
    RESOLVED = "resolved", "resolved"


class Delivery(models.TextChoices):
    NONE = "", "not configured"
    PENDING = "pending", "pending"
    SENT = "sent", "sent"
    FAILED = "failed", "failed"


def webhook_secret_new() -> str:
    return secrets.token_hex(32)


class AlertRule(TimeStampedModel):
    """A threshold the alert job checks every minute, and who hears about it (emails, a signed webhook).

    What `threshold` means depends on `kind`: a percent of the limit's capacity (usage), refused checks in a
    minute (denials), checks decided without Redis in a minute (store), failed runs in a row (job).
    """

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=10, choices=RuleKind.choices)
    enabled = models.BooleanField(default=True)
    threshold = models.PositiveIntegerField(
        default=80,
        help_text="Usage: fires at or above this percent of the limit. Denials: fires above this many refused "
        "checks in a minute. Store: fires above this many checks decided without Redis in a minute (0: any), "
        "and whenever Redis does not answer. Job: fires after this many failed runs in a row (at least 1).",
    )
    window_minutes = models.PositiveSmallIntegerField(
        default=2,
        help_text="Denials and store: the busiest of the last this many complete minutes counts (usage reaches "
        "the database a few seconds after its minute ends, so 2 or more).",
    )
    customer = models.ForeignKey(
        "customers.Customer",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_rules",
        help_text="Usage and denials: only this customer. Empty: each customer on its own.",
    )
    limit = models.ForeignKey(
        "limits.Limit",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_rules",
        help_text="Usage: only this limit. Empty: every limit counted per customer.",
    )
    operation = models.ForeignKey(
        "limits.Operation",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="alert_rules",
        help_text="Denials: only this operation; with no customer chosen, its denials over all customers count.",
    )
    job = models.CharField(
        max_length=100, blank=True, help_text="Job: the beat job's name, e.g. flush_usage. Empty: any job."
    )
    emails = models.TextField(blank=True, help_text="Addresses to email, separated by commas or new lines.")
    # A CharField with the URL validator: Django's URLField form field would guess a scheme for a bare host.
    webhook_url = models.CharField(
        max_length=500,
        blank=True,
        validators=[URLValidator(schemes=["https", "http"])],
        help_text="Receives a signed JSON POST (https://; private addresses refused).",
    )
    webhook_secret = models.CharField(
        max_length=64,
        default=webhook_secret_new,
        help_text="The receiver checks X-Quota-Signature: sha256=HMAC-SHA256(secret, timestamp + '.' + body).",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def email_list(self) -> list[str]:
        return [address.strip() for address in self.emails.replace("\n", ",").split(",") if address.strip()]


class AlertEvent(models.Model):
    """One firing or one resolution of a rule for one subject (a customer and limit, an operation, a job, the
    store), with what became of its notifications. A firing stays `open` until its resolution: at most one
    open firing per rule and subject, so a condition that holds for an hour notifies once. A pending channel is
    either under way (`attempt_started_at`) or due at `next_attempt_at`; apps/alerts/services/delivery.py says
    how each attempt is claimed, counted and resumed."""

    rule = models.ForeignKey(AlertRule, null=True, on_delete=models.SET_NULL, related_name="events")
    rule_name = models.CharField(max_length=100, help_text="The rule's name then (history outlives the rule).")
    kind = models.CharField(max_length=10, choices=EventKind.choices)
    subject = models.CharField(max_length=300)
    at = models.DateTimeField(db_index=True)
    value = models.FloatField(null=True, blank=True, help_text="The measured value when the event happened.")
    message = models.TextField()
    open = models.BooleanField(default=False, help_text="A firing not resolved yet.")
    resolves = models.OneToOneField("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="resolution")
    email_status = models.CharField(max_length=10, choices=Delivery.choices, default=Delivery.NONE, blank=True)
    webhook_status = models.CharField(max_length=10, choices=Delivery.choices, default=Delivery.NONE, blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Delivery attempts made, each counted when it starts (one cut short counts too)."
    )
    attempt_started_at = models.DateTimeField(
        null=True, blank=True, help_text="When the attempt under way started (empty: none under way)."
    )
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, help_text="When the next attempt is due while a channel is pending."
    )
    last_error = models.TextField(blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "alert event"
        verbose_name_plural = "alert history"
        ordering = ["-at", "-pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["rule", "subject"], condition=models.Q(open=True), name="alert_event_one_open_firing"
            ),
        ]
        indexes = [
            # The minute's sweep for deliveries nobody is working on reads only the pending few, not the history.
            models.Index(
                fields=["next_attempt_at"],
                condition=models.Q(email_status="pending") | models.Q(webhook_status="pending"),
                name="alert_event_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rule_name} {self.kind}: {self.subject}"


class JobOutcome(models.Model):
    """How the last runs of one beat job went (recorded by apps/ops/jobs.job_run): what the job rule watches."""

    name = models.CharField(max_length=100, unique=True)
    last_run_at = models.DateTimeField()
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    failures_in_a_row = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)

    class Meta:
        verbose_name = "beat job outcome"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name if not self.failures_in_a_row else f"{self.name} (failing {self.failures_in_a_row}x)"
