from django.urls import path

from apps.usage import apis

urlpatterns = [
    path("usage", apis.UsageListApi.as_view(), name="usage-list"),
]
