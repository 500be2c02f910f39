from django.urls import path

from apps.toggles import apis

urlpatterns = [
    path("toggles", apis.ToggleListApi.as_view(), name="toggle-list"),
    path("toggles/<str:name>", apis.ToggleDetailApi.as_view(), name="toggle-detail"),
]
