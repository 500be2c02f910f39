"""Admin inlines shared by apps."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest


class ReadOnlyTabularInline(admin.TabularInline):
    """An inline that shows rows another path owns (issued elsewhere, replaced by a refresh): every field read-only,
    no add, change or delete from the page it sits on; each row still links to its own page."""

    extra = 0
    show_change_link = True

    def get_readonly_fields(self, request: HttpRequest, obj: Model | None = None) -> Any:
        return self.fields or ()

    def has_add_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False
