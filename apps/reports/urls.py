from django.urls import path

from apps.reports import apis

urlpatterns = [
    path("usage", apis.UsageListApi.as_view(), name="usage-list"),
]
