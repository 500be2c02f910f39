from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from apps.common.models import TimeStampedModel
from apps.common.validators import ATTRIBUTE_NAME_PATTERN, validate_name, validate_string_map
from apps.limits.access_rules import AccessRule  # noqa: F401 -- a model of this app: registered and imported here
from apps.limits.algorithms import algorithm_choices, burst_errors, period_errors, sync_errors, unit_errors
from apps.limits.choices import (
    Algorithm,  # noqa: F401 -- callers import the vocabulary with the models
    CalendarPeriod,
    Mode,
    RuleAction,  # noqa: F401
    StoreFailurePolicy,
    key_by_errors,
)


class Operation(TimeStampedModel):
    """A named action that services ask about, e.g. ModifyShardCount or PutRecords."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Limit(TimeStampedModel):
    """A policy on an operation: how much, per how long, counted per which key, and what to do on failure.

    A limit without a plan applies to every customer; with a plan, to that plan's customers.
    Calendar limits count per day, week or month in the customer's time zone; every other
    algorithm counts over `period_seconds`.
    """

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    description = models.TextField(blank=True)
    operation = models.ForeignKey(Operation, on_delete=models.PROTECT, related_name="limits")
    algorithm = models.CharField(max_length=20, choices=algorithm_choices)
    quantity = models.PositiveBigIntegerField(help_text="How much is admitted per period (or leases held at once).")
    period_seconds = models.PositiveIntegerField(
        null=True, blank=True, help_text="Window length in seconds (for concurrency: the longest lease)."
    )
    calendar_period = models.CharField(
        max_length=10, choices=CalendarPeriod.choices, blank=True, help_text="Only for the calendar algorithm."
    )
    burst = models.PositiveBigIntegerField(
        null=True, blank=True, help_text="Bucket capacity for token and leaky buckets; empty means the quantity."
    )
    unit = models.CharField(
        max_length=50, default="requests", help_text="What is counted: requests, or a cost such as records, bytes."
    )
    key_by = models.JSONField(
        default=list,
        blank=True,
        help_text="Which parts make the counter key: customer, resource, ip, service (the calling service), api_key "
        "(the calling key's prefix), attr:<name>. [] = one global counter.",
    )
    match = models.JSONField(
        default=dict, blank=True, help_text='Only checks whose attributes match, e.g. {"ScalingType": "Uniform"}.'
    )
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.ENFORCE)
    on_store_failure = models.CharField(
        max_length=10, choices=StoreFailurePolicy.choices, default=StoreFailurePolicy.DATABASE
    )
    plan = models.ForeignKey("customers.Plan", null=True, blank=True, on_delete=models.PROTECT, related_name="limits")
    sync_ms = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Empty: exact (every check asks Redis). A number of milliseconds: hybrid counting, each API worker "
        "decides locally and exchanges counts with Redis that often and at window ends (docs/hybrid.md).",
    )
    audit = models.BooleanField(
        default=False,
        help_text="Write every decision on this limit to the decision log (in the same Redis call), for the quality "
        "audit. Lease events are logged whatever this says.",
    )

    class Meta:
        ordering = ["operation__name", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(quantity__gte=1), name="limit_quantity_positive"),
            models.CheckConstraint(condition=Q(burst__isnull=True) | Q(burst__gte=1), name="limit_burst_positive"),
            models.CheckConstraint(
                condition=Q(period_seconds__isnull=True) | Q(period_seconds__gte=1), name="limit_period_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        problems = [*period_errors(self), *burst_errors(self), *self._key_errors(), *sync_errors(self)]
        for field, message in problems:
            errors.setdefault(field, []).append(message)
        if errors:
            raise ValidationError(errors)

    def _key_errors(self) -> list[tuple[str, str]]:
        errors = [("key_by", message) for message in key_by_errors(self.key_by)]
        if not ATTRIBUTE_NAME_PATTERN.match(self.unit or ""):
            errors.append(("unit", "The unit must be a short name such as requests, records or bytes."))
        errors += unit_errors(self)
        try:
            validate_string_map(self.match)
        except ValidationError as error:
            errors.extend(("match", message) for message in error.messages)
        return errors

    @property
    def capacity(self) -> int:
        """The most a single request could ever be admitted with."""
        return self.burst if self.burst is not None else self.quantity


class Override(TimeStampedModel):
    """A per-customer exception to a limit: another quantity or burst, or unlimited, optionally for a time.

    An override can be narrowed to one resource or to checks whose attributes match.
    """

    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="overrides")
    limit = models.ForeignKey(Limit, on_delete=models.CASCADE, related_name="overrides")
    resource = models.CharField(max_length=200, blank=True, help_text="Empty: every resource.")
    match = models.JSONField(default=dict, blank=True, help_text="Only checks whose attributes match.")
    quantity = models.PositiveBigIntegerField(null=True, blank=True)
    burst = models.PositiveBigIntegerField(null=True, blank=True)
    unlimited = models.BooleanField(default=False)
    starts = models.DateTimeField(null=True, blank=True, help_text="Empty: in force now.")
    ends = models.DateTimeField(null=True, blank=True, help_text="Empty: until removed.")
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["customer__external_id", "limit__name", "starts"]
        constraints = [
            models.CheckConstraint(
                condition=Q(quantity__isnull=True) | Q(quantity__gte=1), name="override_quantity_positive"
            ),
            models.CheckConstraint(condition=Q(burst__isnull=True) | Q(burst__gte=1), name="override_burst_positive"),
            models.CheckConstraint(
                condition=Q(starts__isnull=True) | Q(ends__isnull=True) | Q(ends__gt=models.F("starts")),
                name="override_ends_after_starts",
            ),
            models.UniqueConstraint(
                fields=["customer", "limit", "resource"],
                condition=Q(starts__isnull=True),
                name="override_unique_without_start",
            ),
            models.UniqueConstraint(
                fields=["customer", "limit", "resource", "starts"],
                condition=Q(starts__isnull=False),
                name="override_unique_with_start",
            ),
        ]

    def __str__(self) -> str:
        amount = "unlimited" if self.unlimited else f"{self.quantity}"
        return f"{self.limit_id and self.limit.name} for {self.customer_id and self.customer.external_id}: {amount}"

    def clean(self) -> None:
        errors: dict[str, str] = {}
        if self.unlimited and self.quantity is not None:
            errors["quantity"] = "Leave the quantity empty for an unlimited override."
        if not self.unlimited and self.quantity is None and self.burst is None:
            errors["quantity"] = "Give a quantity (or a burst), or tick unlimited."
        if self.starts and self.ends and self.ends <= self.starts:
            errors["ends"] = "The end must be after the start."
        try:
            validate_string_map(self.match)
        except ValidationError as error:
            errors["match"] = " ".join(error.messages)
        if errors:
            raise ValidationError(errors)


class ConfigVersion(models.Model):
    """One row: the version of the configuration, bumped after every committed change.

    API workers poll it off the hot path and rebuild their in-process snapshot when it moves.
    """

    SINGLETON_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON_ID, editable=False)
    version = models.PositiveBigIntegerField(default=0)
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"config version {self.version}"
