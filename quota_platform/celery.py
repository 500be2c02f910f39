"""The Celery app. Schedules live in django-celery-beat rows, not here."""

import os

from celery import Celery
from celery.signals import after_setup_logger, worker_process_shutdown, worker_shutdown

from quota_platform.celery_logging import quiet_routine_lines

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")

app = Celery("quota_platform")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The worker's routine lines about beat jobs at DEBUG: an idle platform logs nothing at INFO.
after_setup_logger.connect(quiet_routine_lines, weak=False)


def _ledger_final_flush(**kwargs: object) -> None:
    """A worker process ends: what its decision ledger holds is written (apps/enforcement/ledger/shutdown.py)."""
    from apps.enforcement.ledger.shutdown import ledger_final_flush

    ledger_final_flush()


# Prefork children end with worker_process_shutdown, the main process with worker_shutdown.
worker_process_shutdown.connect(_ledger_final_flush, weak=False)
worker_shutdown.connect(_ledger_final_flush, weak=False)
