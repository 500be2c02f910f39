from django.db import models

from apps.common.models import TimeStampedModel
from apps.common.validators import validate_json_sendable, validate_name


class ToggleSource(models.TextChoices):
    ADMIN = "admin", "admin"
    EXTERNAL = "external", "external source"


class FeatureToggle(TimeStampedModel):
    """A named on/off switch with an optional JSON payload, edited in the admin or refreshed from outside."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    enabled = models.BooleanField(default=False)
    payload = models.JSONField(null=True, blank=True, validators=[validate_json_sendable])
    description = models.TextField(blank=True)
    source = models.CharField(max_length=10, choices=ToggleSource.choices, default=ToggleSource.ADMIN)
    # Empty: every API key reads it. Set: only keys bound to this customer and service-wide keys read it.
    customer = models.ForeignKey(
        "customers.Customer",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="toggles",
        help_text="Leave empty for a toggle every service reads; choose a customer to show it only to API keys "
        "bound to that customer (and to service-wide keys).",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({'on' if self.enabled else 'off'})"
