"""Celery task for usage export jobs: thin; the service claims the job, so a duplicate delivery is harmless."""

from celery import shared_task

from apps.reports.services import export_job_run

# Large exports take minutes. The soft limit lets the service mark the job failed with a sentence;
# the hard limit follows if it cannot. No automatic retry: a failed job says why, and the person exports again.
SOFT_TIME_LIMIT_S = 6 * 3600
TIME_LIMIT_S = SOFT_TIME_LIMIT_S + 300


@shared_task(acks_late=True, soft_time_limit=SOFT_TIME_LIMIT_S, time_limit=TIME_LIMIT_S)
def export_job_run_task(job_id: int) -> str:
    job = export_job_run(job_id=job_id)
    return f"export #{job_id}: {job.status if job else 'nothing to run'}"
