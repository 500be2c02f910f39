"""The Celery app. Schedules live in django-celery-beat rows, not here."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

app = Celery("quota_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
