"""Allocation sets in the admin: what each customer holds of each concurrency limit as PostgreSQL keeps it (the copy
Redis is rebuilt from after a loss, leases/durable.py), and when the service last resynced it. Read-only: the
service's resync (PUT /api/v1/customers/{customer}/allocations/{limit}) sets the count."""

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from apps.enforcement.models import AllocationSet


@admin.register(AllocationSet)
class AllocationSetAdmin(admin.ModelAdmin):
    list_display = ("limit", "customer", "held", "resynced_at", "updated_at", "counter")
    list_filter = ("limit",)
    search_fields = ("=customer", "=limit")
    ordering = ("limit", "customer")
    readonly_fields = ("counter", "customer", "limit", "held", "resynced_at", "updated_at")

    def get_queryset(self, request: HttpRequest) -> QuerySet[AllocationSet]:
        return super().get_queryset(request).annotate(held_count=Count("allocations"))

    @admin.display(description="held", ordering="held_count")
    def held(self, allocation_set: Any) -> int:
        return int(allocation_set.held_count)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
