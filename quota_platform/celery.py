"""The Celery app. Schedules live in django-celery-beat rows, not here."""

import os

from celery import Celery
from celery.signals import after_setup_logger

from quota_platform.celery_logging import quiet_routine_lines

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

app = Celery("quota_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The worker's routine lines about beat jobs at DEBUG: an idle platform logs nothing at INFO.
after_setup_logger.connect(quiet_routine_lines, weak=False)
