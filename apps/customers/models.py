from django.db import models

from apps.common.models import TimeStampedModel
from apps.common.validators import validate_timezone


class Plan(TimeStampedModel):
    """A tier (free, pro, ...). Limits attached to a plan apply to its customers only."""

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Customer(TimeStampedModel):
    """A tenant whose usage is limited, known to callers by its external id (e.g. an account id)."""

    external_id = models.CharField(
        max_length=200, unique=True, help_text="The id services send in checks, e.g. an account id."
    )
    name = models.CharField(max_length=200, blank=True)
    plan = models.ForeignKey(Plan, null=True, blank=True, on_delete=models.PROTECT, related_name="customers")
    timezone = models.CharField(
        max_length=64,
        default="UTC",
        validators=[validate_timezone],
        help_text="Calendar quotas (per day, week, month) reset at midnight in this zone.",
    )
    active = models.BooleanField(default=True)

    class Meta:
        ordering = ["external_id"]

    def __str__(self) -> str:
        return f"{self.external_id} ({self.name})" if self.name else self.external_id
