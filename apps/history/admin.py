"""The change history in the admin: one read-only page of every change, and each object's own history.

`HistoryAdminMixin` is for the ModelAdmin of every followed model (see apps.history.registry): put it
first among the bases, e.g. `class LimitAdmin(HistoryAdminMixin, admin.ModelAdmin)`, and the "History"
button of the object's change page shows its changes from every door, not only the admin's log.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.contrib.admin.views.main import PAGE_VAR
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator, capfirst
from django.utils.timezone import localtime

from apps.history.display import change_lines
from apps.history.models import ChangeAction, ChangeEvent
from apps.history.selectors import history_for_object, history_tracked_models

OBJECT_HISTORY_PER_PAGE = 100
# In the list, a long value (a description, a JSON object) is cut here; the event's page shows it whole.
LIST_VALUE_CHARS = 60


class ModelFilter(admin.SimpleListFilter):
    title = "model"
    parameter_name = "model"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        choices = [
            (model._meta.label_lower, capfirst(str(model._meta.verbose_name))) for model in history_tracked_models()
        ]
        return [*sorted(choices, key=lambda choice: str(choice[1])), ("event", "Events (not a save)")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ChangeEvent]) -> QuerySet[ChangeEvent]:
        if self.value() == "event":
            return queryset.filter(content_type__isnull=True)
        for model in history_tracked_models():
            if self.value() == model._meta.label_lower:
                return queryset.filter(content_type=ContentType.objects.get_for_model(model))
        return queryset


class ActionFilter(admin.SimpleListFilter):
    # Fixed choices: listing the distinct actions would read the whole table on every page view.
    title = "action"
    parameter_name = "action"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return list(ChangeAction.choices)

    def queryset(self, request: HttpRequest, queryset: QuerySet[ChangeEvent]) -> QuerySet[ChangeEvent]:
        return queryset.filter(action=self.value()) if self.value() else queryset


class TextInputFilter(admin.SimpleListFilter):
    """A filter typed in rather than picked from a list (there may be thousands of customers)."""

    template = "admin/history/text_filter.html"
    parameter_name: str  # each subclass names its own

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("", "")]  # a filter without lookups is not shown at all

    # Its own template reads these keys; the stubs fix SimpleListFilter.choices to the default template's.
    def choices(self, changelist: Any) -> Iterator[dict[str, Any]]:  # type: ignore[override]
        others = [
            (key, value)
            for key, values in changelist.get_filters_params().items()
            if key != self.parameter_name
            for value in (values if isinstance(values, list) else [values])
        ]
        yield {"value": self.value() or "", "others": others, "parameter_name": self.parameter_name}

    def queryset(self, request: HttpRequest, queryset: QuerySet[ChangeEvent]) -> QuerySet[ChangeEvent]:
        value = (self.value() or "").strip()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset


class CustomerFilter(TextInputFilter):
    title = "customer (external id)"
    parameter_name = "customer"


class ActorFilter(TextInputFilter):
    title = "who (user name, or e.g. import_limits (command))"
    parameter_name = "actor"


@admin.register(ChangeEvent)
class ChangeEventAdmin(admin.ModelAdmin):
    """Read-only for everyone, superusers included: history is written by the platform, never edited.

    The list fits a 1366 px screen: who and through what share a column, so do the model and the object,
    long values are cut (the event's own page shows them whole) and the table is laid out to the page's width
    (templates admin/history/changeevent/change_list.html).
    """

    change_list_template = "admin/history/changeevent/change_list.html"
    list_display = ("at_shown", "who", "action", "object_link", "customer", "changes_shown")
    list_filter = (ModelFilter, ActionFilter, CustomerFilter, ActorFilter)
    list_select_related = ("content_type",)
    search_fields = ("object_repr",)
    search_help_text = "Search by the object's name."
    date_hierarchy = "at"
    show_full_result_count = False  # an exact count of a long history costs a scan per page view
    fields = ("at", "actor", "user", "via", "action", "model_shown", "object_link", "customer", "changes_table")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: ChangeEvent | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ChangeEvent | None = None) -> bool:
        return False

    @admin.display(description="at", ordering="at")
    def at_shown(self, event: ChangeEvent) -> str:
        return date_format(localtime(event.at), "Y-m-d H:i:s")

    @admin.display(description="who, through", ordering="actor")
    def who(self, event: ChangeEvent) -> SafeString:
        return format_html('{}<br><span class="quiet">{}</span>', event.actor, event.via)

    @admin.display(description="model", ordering="content_type__model")
    def model_shown(self, event: ChangeEvent) -> str:
        return capfirst(event.content_type.name) if event.content_type else "event"

    @admin.display(description="object", ordering="object_repr")
    def object_link(self, event: ChangeEvent) -> SafeString:
        url = _change_url(event)
        shown = format_html('<a href="{}">{}</a>', url, event.object_repr) if url else event.object_repr
        return format_html('<span class="quiet">{}</span><br>{}', self.model_shown(event), shown)

    @admin.display(description="what changed")
    def changes_shown(self, event: ChangeEvent) -> SafeString:
        lines = [(field, Truncator(text).chars(LIST_VALUE_CHARS)) for field, text in change_lines(event)]
        return format_html_join(mark_safe("<br>"), "<b>{}</b>: {}", lines)  # noqa: S308 - a constant

    @admin.display(description="what changed")
    def changes_table(self, event: ChangeEvent) -> SafeString:
        return _changes_table(event)


def _change_url(event: ChangeEvent) -> str:
    if event.content_type is None or event.action == "deleted":
        return ""
    try:
        return reverse(
            f"admin:{event.content_type.app_label}_{event.content_type.model}_change", args=[event.object_id]
        )
    except NoReverseMatch:
        return ""


def _changes_table(event: ChangeEvent) -> SafeString:
    rows = format_html_join("", "<tr><th>{}</th><td>{}</td></tr>", change_lines(event))
    return format_html("<table>{}</table>", rows) if rows else format_html("<p>{}</p>", "(nothing recorded)")


class HistoryAdminMixin(admin.ModelAdmin):
    """The object's "History" page shows its change history (apps.history), not only the admin's own log.

    Anyone who may view the object may read its history.
    """

    object_history_template = "admin/history/object_history.html"

    def history_view(self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None) -> Any:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            # Django's own answer to a missing object (as its history_view gives): private, so not in the stubs.
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)  # type: ignore[attr-defined]
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        paginator = self.get_paginator(request, history_for_object(obj=obj), OBJECT_HISTORY_PER_PAGE)
        page = paginator.get_page(request.GET.get(PAGE_VAR, 1))
        context = {
            **self.admin_site.each_context(request),
            "title": f"Change history: {obj}",
            "subtitle": None,
            "events": [(event, change_lines(event)) for event in page],
            "page": page,
            "page_range": paginator.get_elided_page_range(page.number),
            "page_var": PAGE_VAR,
            "module_name": str(capfirst(self.opts.verbose_name_plural)),
            "object": obj,
            "opts": self.opts,
            "preserved_filters": self.get_preserved_filters(request),
            **(extra_context or {}),
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, self.object_history_template, context)
