"""Admin for feature toggles: flip them from the list, edit the payload on the change page."""

from django.contrib import admin

from apps.history.admin import HistoryAdminMixin
from apps.toggles.models import FeatureToggle


@admin.register(FeatureToggle)
class FeatureToggleAdmin(HistoryAdminMixin, admin.ModelAdmin):
    list_display = ("name", "enabled", "customer", "source", "description", "updated_at")
    list_editable = ("enabled",)
    list_filter = ("enabled", "source")
    list_select_related = ("customer",)
    autocomplete_fields = ("customer",)
    search_fields = ("name", "description")
    fields = ("name", "enabled", "payload", "customer", "description", "source", "created_at", "updated_at")
    # The source says where the current value came from; the refresh job sets it, not an operator.
    readonly_fields = ("source", "created_at", "updated_at")
