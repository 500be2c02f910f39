"""Access rules: who bypasses every limit or is always refused, before any limit is counted (resolution.py reads
them from the snapshot). The limits themselves, and their overrides, are in models.py."""

import contextlib

from django.core.exceptions import ValidationError
from django.db import models

from apps.common.models import TimeStampedModel
from apps.common.validators import normalize_ip_or_cidr, validate_ip_or_cidr
from apps.limits.choices import RuleAction, RuleSource


class AccessRule(TimeStampedModel):
    """Allow (bypass every limit) or deny (always reject) a customer, an IP or CIDR block, or an API key.

    Every matcher that is set must match; the rule can be narrowed to one operation and can expire.
    """

    action = models.CharField(max_length=5, choices=RuleAction.choices)
    customer = models.ForeignKey(
        "customers.Customer", null=True, blank=True, on_delete=models.CASCADE, related_name="access_rules"
    )
    ip = models.CharField(
        max_length=64, blank=True, validators=[validate_ip_or_cidr], help_text="An address or CIDR, IPv4 or IPv6."
    )
    api_key = models.ForeignKey(
        "apikeys.ApiKey",
        verbose_name="API key",  # not Django's "Api key"
        to_field="prefix",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="access_rules",
    )
    operation = models.ForeignKey(
        "limits.Operation", null=True, blank=True, on_delete=models.CASCADE, help_text="Empty: every operation."
    )
    expires = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # Not editable in any form: the refresh from the external source sets it, and owns the rules it set.
    source = models.CharField(
        max_length=10,
        choices=RuleSource.choices,
        default=RuleSource.ADMIN,
        editable=False,
        help_text="External: from the external source document, replaced at each refresh (edit it there).",
    )

    class Meta:
        ordering = ["action", "-created_at"]

    def __str__(self) -> str:
        return f"{self.action} {self.matcher_summary}"

    @property
    def matcher_summary(self) -> str:
        parts = []
        if self.customer is not None:
            parts.append(f"customer {self.customer.external_id}")
        if self.ip:
            parts.append(f"ip {self.ip}")
        if self.api_key_id:
            parts.append(f"key {self.api_key_id}")
        return " and ".join(parts) or "nothing"

    def clean(self) -> None:
        if self.ip:
            with contextlib.suppress(ValueError):  # the field validator reports a bad address
                self.ip = normalize_ip_or_cidr(self.ip)
        if not (self.customer_id or self.ip or self.api_key_id):
            raise ValidationError("A rule must match a customer, an IP or CIDR, or an API key.")
