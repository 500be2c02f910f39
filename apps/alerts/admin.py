"""Admin for alerts: rules edited here, their history (firings and resolutions) and the jobs' outcomes read here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db.models import Count, Q
from django.http import HttpRequest

from apps.alerts.models import AlertEvent, AlertRule, JobOutcome, RuleKind
from apps.alerts.services.webhooks import allow_private, webhook_url_refusal
from apps.common.embedded import USAGE_ALERTS_NEED_REDIS, counters_in_process


class AlertRuleForm(forms.ModelForm):
    class Meta:
        model = AlertRule
        fields = (
            "name",
            "kind",
            "enabled",
            "threshold",
            "window_minutes",
            "customer",
            "limit",
            "operation",
            "job",
            "emails",
            "webhook_url",
        )

    def clean_emails(self) -> str:
        emails: str = self.cleaned_data["emails"]
        for address in AlertRule(emails=emails).email_list:
            try:
                validate_email(address)
            except ValidationError:
                raise ValidationError(f"{address!r} is not an email address.") from None
        return emails

    def clean_webhook_url(self) -> str:
        url: str = self.cleaned_data["webhook_url"]
        if url and (reason := webhook_url_refusal(url, allow_private=allow_private())):
            raise ValidationError(f"This URL cannot receive alerts: {reason}.")
        return url


@admin.register(AlertRule)
class AlertRuleAdmin(admin.ModelAdmin):
    form = AlertRuleForm
    list_display = ("name", "kind", "threshold", "scope", "enabled", "notifies", "firing_now")
    list_filter = ("kind", "enabled")
    list_editable = ("enabled",)
    list_select_related = ("customer", "limit", "operation")
    search_fields = ("name", "customer__external_id", "limit__name", "operation__name", "job")
    autocomplete_fields = ("customer", "limit", "operation")
    readonly_fields = ("webhook_secret", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "kind", "enabled", "threshold", "window_minutes")}),
        ("What it watches", {"fields": ("customer", "limit", "operation", "job")}),
        ("Who hears about it", {"fields": ("emails", "webhook_url", "webhook_secret")}),
        ("Changes", {"fields": ("created_at", "updated_at"), "classes": ("collapse",)}),
    )

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).annotate(firing=Count("events", filter=Q(events__open=True)))

    def save_model(self, request: HttpRequest, obj: AlertRule, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if obj.kind == RuleKind.USAGE and counters_in_process():
            self.message_user(request, USAGE_ALERTS_NEED_REDIS, messages.WARNING)

    @admin.display(description="scope")
    def scope(self, rule: AlertRule) -> str:
        parts = [
            f"customer {rule.customer.external_id}" if rule.customer else "",
            f"limit {rule.limit.name}" if rule.limit else "",
            f"operation {rule.operation.name}" if rule.operation else "",
            f"job {rule.job}" if rule.job else "",
        ]
        return ", ".join(part for part in parts if part) or "everything"

    @admin.display(description="notifies")
    def notifies(self, rule: AlertRule) -> str:
        channels = [
            f"{len(rule.email_list)} email(s)" if rule.email_list else "",
            "webhook" if rule.webhook_url else "",
        ]
        return " + ".join(channel for channel in channels if channel) or "history only"

    @admin.display(description="firing now", ordering="firing")
    def firing_now(self, rule: Any) -> int:
        return int(rule.firing)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Written by the alert job, never by hand."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AlertEvent)
class AlertEventAdmin(ReadOnlyAdmin):
    list_display = ("at", "kind", "rule_name", "subject", "value", "still_firing", "email_status", "webhook_status")
    list_filter = ("kind", "open", "rule__kind", "rule", "email_status", "webhook_status")
    list_select_related = ("rule",)
    search_fields = ("rule_name", "subject", "message")
    date_hierarchy = "at"
    fields = (
        "at",
        "kind",
        "rule",
        "rule_name",
        "subject",
        "value",
        "message",
        "open",
        "resolves",
        "email_status",
        "webhook_status",
        "attempts",
        "attempt_started_at",
        "next_attempt_at",
        "last_error",
        "delivered_at",
    )

    @admin.display(description="firing", boolean=True)
    def still_firing(self, event: AlertEvent) -> bool | None:
        return event.open if event.kind == "fired" else None


@admin.register(JobOutcome)
class JobOutcomeAdmin(ReadOnlyAdmin):
    list_display = ("name", "last_run_at", "last_success_at", "last_failure_at", "failures_in_a_row", "last_error")
    list_filter = ("failures_in_a_row",)
    search_fields = ("name",)
