from django.db import models
from django.db.models import Q

from apps.common.models import TimeStampedModel
from apps.common.validators import validate_name


class Service(TimeStampedModel):
    """A caller of the API (a team's service). Its keys may check only `operations`, if any are listed."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    description = models.TextField(blank=True)
    operations = models.ManyToManyField(
        "limits.Operation", blank=True, related_name="services", help_text="Empty: every operation."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class ApiKey(TimeStampedModel):
    """A service's credential. Only a SHA-256 hash of the secret is stored; the prefix identifies it.

    A key bound to a customer sees and spends only that customer's quota.
    """

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="api_keys")
    customer = models.ForeignKey(
        "customers.Customer",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="api_keys",
        help_text="Empty: a service-wide key that may check any customer.",
    )
    name = models.CharField(max_length=100, blank=True, help_text="A label to tell keys apart.")
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"
        ordering = ["service__name", "prefix"]
        constraints = [
            models.CheckConstraint(condition=~Q(key_hash=""), name="apikey_hash_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.name or self.service.name})"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
