"""Quick actions from a customer's usage page, each a confirmation page then a service call:
a temporary multiple of a limit, an allow or deny rule, and unblocking (resetting one limit's counters).

Only users who may add overrides (boost, unblock) or access rules (allow, deny) get past the first line;
the others get a 403 page that says which permission is missing.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone

from apps.common.exceptions import ApplicationError
from apps.console.customer_page import config_phrase
from apps.customers.models import Customer
from apps.enforcement.counters.inspection import snapshot_fresh
from apps.enforcement.counters.unblock import customer_limit_unblock
from apps.limits.models import Limit, Operation, RuleAction
from apps.limits.quick_actions import (
    BOOST_FACTORS,
    BOOST_HOURS,
    DEFAULT_BOOST_FACTOR,
    DEFAULT_BOOST_HOURS,
    DEFAULT_RULE_HOURS,
    RULE_HOURS,
    QuickActionRefused,
    access_rule_quick_add,
    limit_in_force,
    override_boost,
)

BOOST_PERMISSION, RULE_PERMISSION = "limits.add_override", "limits.add_accessrule"
REFUSED_TEMPLATE = "console/refused.html"
CONFIRM_TEMPLATE = "console/confirm_action.html"


def refused(
    request: HttpRequest, model_admin: admin.ModelAdmin, title: str, sentence: str, status: int
) -> HttpResponse:
    """A page that says, in a sentence, why nothing was done."""
    context = {**model_admin.admin_site.each_context(request), "title": title, "sentence": sentence}
    return TemplateResponse(request, REFUSED_TEMPLATE, context, status=status)


def _forbidden(request: HttpRequest, model_admin: admin.ModelAdmin, what: str, permission: str) -> HttpResponse:
    label = {BOOST_PERMISSION: "Can add override", RULE_PERMISSION: "Can add access rule"}[permission]
    sentence = (
        f"You may look at this customer but not {what}: that needs the “{label}” permission, which operators have. "
        "Ask an operator, or an administrator to add you to the Operators group."
    )
    return refused(request, model_admin, "Not allowed", sentence, 403)


def usage_url(customer: Customer) -> str:
    return reverse("admin:customers_customer_usage", args=[customer.pk])


def _confirm(request: HttpRequest, model_admin: admin.ModelAdmin, customer: Customer, **context: Any) -> HttpResponse:
    status = 400 if context.get("error") else 200
    full = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "original": customer,
        "customer": customer,
        "back_url": usage_url(customer),
        **context,
    }
    return TemplateResponse(request, CONFIRM_TEMPLATE, full, status=status)


def _no_such_limit(request: HttpRequest, model_admin: admin.ModelAdmin, limit_id: int) -> HttpResponse:
    return refused(request, model_admin, "No such limit", f"There is no limit with id {limit_id}.", 404)


def _int_choice(request: HttpRequest, name: str, default: int | None, allowed: tuple[int | None, ...]) -> int | None:
    raw = request.POST.get(name, request.GET.get(name, ""))
    if raw in ("", None):
        return default
    if raw == "forever" and None in allowed:
        return None
    try:
        return int(raw)
    except ValueError:
        raise QuickActionRefused(f"“{raw}” is not a number.") from None


def _error_text(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return " ".join(error.messages)
    return error.message if isinstance(error, ApplicationError) else str(error)


def boost_view(model_admin: admin.ModelAdmin, request: HttpRequest, customer: Customer, limit_id: int) -> HttpResponse:
    if not request.user.has_perm(BOOST_PERMISSION):
        return _forbidden(request, model_admin, "add an override", BOOST_PERMISSION)
    limit = Limit.objects.select_related("operation").filter(pk=limit_id).first()
    if limit is None:
        return _no_such_limit(request, model_admin, limit_id)
    context: dict[str, Any] = {
        "title": f"Raise {limit.name} for {customer.external_id} for a while",
        "kind": "boost",
        "limit": limit,
        "factors": BOOST_FACTORS,
        "hour_choices": BOOST_HOURS,
    }
    try:
        in_force = limit_in_force(snapshot_fresh(), customer, limit, now=timezone.now())
        context["in_force"] = config_phrase(in_force) if in_force else "unlimited"
        factor = _int_choice(request, "factor", DEFAULT_BOOST_FACTOR, BOOST_FACTORS)
        hours = _int_choice(request, "hours", DEFAULT_BOOST_HOURS, BOOST_HOURS)
        context.update(factor=factor, hours=hours)
        if request.method != "POST":
            return _confirm(request, model_admin, customer, **context)
        override = override_boost(
            customer=customer,
            limit=limit,
            in_force=in_force,
            factor=factor or 0,
            hours=hours or 0,
            actor=request.user.get_username(),
        )
    except (ApplicationError, ValidationError) as error:
        return _confirm(request, model_admin, customer, error=_error_text(error), **context)
    model_admin.log_addition(request, override, [{"added": {"name": "override", "object": str(override)}}])
    until = timezone.localtime(override.ends).strftime("%Y-%m-%d %H:%M %Z")
    messages.success(request, f"{limit.name} is now {override.quantity} for {customer.external_id} until {until}.")
    return HttpResponseRedirect(usage_url(customer))


def rule_view(model_admin: admin.ModelAdmin, request: HttpRequest, customer: Customer, action: str) -> HttpResponse:
    if action not in RuleAction.values:
        return refused(request, model_admin, "No such rule", f"“{action}” is not a rule: choose allow or deny.", 404)
    if not request.user.has_perm(RULE_PERMISSION):
        return _forbidden(request, model_admin, f"add an {action} rule", RULE_PERMISSION)
    verb = "Let every check of" if action == RuleAction.ALLOW else "Refuse every check of"
    context: dict[str, Any] = {
        "title": f"{action.capitalize()} {customer.external_id}",
        "kind": "rule",
        "action": action,
        "verb": verb,
        "operations": Operation.objects.order_by("name"),
        "hour_choices": RULE_HOURS,
    }
    try:
        hours = _int_choice(request, "hours", DEFAULT_RULE_HOURS, RULE_HOURS)
        operation_name = request.POST.get("operation", "")
        operation = Operation.objects.filter(name=operation_name).first() if operation_name else None
        if operation_name and operation is None:
            raise QuickActionRefused(f"There is no operation called {operation_name}.")
        context.update(hours=hours, operation=operation_name)
        if request.method != "POST":
            return _confirm(request, model_admin, customer, **context)
        rule = access_rule_quick_add(
            customer=customer, action=action, hours=hours, operation=operation, actor=request.user.get_username()
        )
    except (ApplicationError, ValidationError) as error:
        return _confirm(request, model_admin, customer, error=_error_text(error), **context)
    model_admin.log_addition(request, rule, [{"added": {"name": "access rule", "object": str(rule)}}])
    messages.success(request, f"Added: {rule.get_action_display()} for {customer.external_id}.")
    return HttpResponseRedirect(usage_url(customer))


def unblock_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, customer: Customer, limit_id: int
) -> HttpResponse:
    if not request.user.has_perm(BOOST_PERMISSION):
        return _forbidden(request, model_admin, "reset its counters", BOOST_PERMISSION)
    limit = Limit.objects.select_related("operation").filter(pk=limit_id).first()
    if limit is None:
        return _no_such_limit(request, model_admin, limit_id)
    context: dict[str, Any] = {
        "title": f"Unblock {customer.external_id}: reset {limit.name}",
        "kind": "unblock",
        "limit": limit,
    }
    try:
        in_force = limit_in_force(snapshot_fresh(), customer, limit, now=timezone.now())
        context["in_force"] = config_phrase(in_force) if in_force else "unlimited"
        if request.method != "POST":
            return _confirm(request, model_admin, customer, **context)
        config = next(
            found for found in snapshot_fresh().limits_by_operation[limit.operation.name] if found.name == limit.name
        )
        report = customer_limit_unblock(customer=customer.external_id, limit=config, actor=request.user.get_username())
    except ApplicationError as error:
        return _confirm(request, model_admin, customer, error=_error_text(error), **context)
    model_admin.log_change(request, customer, report.summary)
    messages.success(request, report.summary)
    return HttpResponseRedirect(usage_url(customer))
