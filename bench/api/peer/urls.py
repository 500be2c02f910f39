from django.urls import path

from bench.api.peer import views

urlpatterns = [
    path("healthz", views.healthz),
    path("peer/ratelimit", views.RatelimitCheck.as_view()),
    path("peer/bare", views.BareCheck.as_view()),
    path("peer/bare/batch", views.BareBatch.as_view()),
]
