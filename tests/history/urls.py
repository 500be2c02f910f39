"""A second admin site whose limit and customer admins use HistoryAdminMixin, as the real ones will."""

from django.contrib import admin
from django.urls import path

from apps.customers.models import Customer
from apps.history.admin import ChangeEventAdmin, HistoryAdminMixin
from apps.history.models import ChangeEvent
from apps.limits.models import Limit

site = admin.AdminSite(name="history_test_admin")


class LimitAdmin(HistoryAdminMixin, admin.ModelAdmin):
    pass


class CustomerAdmin(HistoryAdminMixin, admin.ModelAdmin):
    pass


site.register(Limit, LimitAdmin)
site.register(Customer, CustomerAdmin)
site.register(ChangeEvent, ChangeEventAdmin)

urlpatterns = [path("admin/", admin.site.urls), path("mixin-admin/", site.urls)]
