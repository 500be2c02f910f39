"""Reading usage for reports (several customers and operations at once), and reading export jobs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.apikeys.selectors import ApiPrincipal
from apps.common.exceptions import InvalidInput, NotFound
from apps.reports.filters import UsageFilters
from apps.reports.models import ExportJob
from apps.usage.models import UsageBucket
from apps.usage.selectors import USAGE_TABLES

EXPORT_PERMISSION = "reports.export_usage"
# A queued job not started after this long, or a running one that stopped moving, gets a warning.
WAITING_WARNING_AFTER = dt.timedelta(minutes=2)
# The longest range one request may cover per granularity (None: any); longer ones are refused.
MAX_RANGE: dict[str, dt.timedelta | None] = {
    "minute": dt.timedelta(days=7),
    "hour": dt.timedelta(days=400),
    "day": None,
}
ORDER = ("bucket", "customer", "operation", "service", "api_key")


@dataclass(frozen=True, slots=True)
class Position:
    """The last row a page showed: the next page starts after it (keyset pagination in ORDER)."""

    bucket: dt.datetime
    customer: str
    operation: str
    service: str = ""
    api_key: str = ""


@dataclass(frozen=True, slots=True)
class UsagePage:
    rows: list[UsageBucket]
    next: Position | None


def usage_authorize(*, principal: ApiPrincipal, customer: str | None, operation: str | None) -> None:
    """A key bound to a customer reads only that customer's usage, and must name it; a key limited to
    some operations reads only those (403 for others)."""
    if customer is None and principal.customer is not None:
        raise InvalidInput(
            "This API key is bound to a customer: name it in `customer`.",
            fields={"customer": ["Required for a key bound to a customer."]},
        )
    principal.authorize(customer, operation)  # customer None: a service-wide key may read any customer


def usage_report_rows(*, filters: UsageFilters) -> QuerySet[UsageBucket]:
    """Every row the filters select, in ORDER (bucket, customer, operation, service, api_key)."""
    rows = USAGE_TABLES[filters.granularity].objects.filter(bucket__gte=filters.start, bucket__lt=filters.end)
    if filters.customers:
        rows = rows.filter(customer__in=filters.customers)
    if filters.operations:
        rows = rows.filter(operation__in=filters.operations)
    if filters.services:
        rows = rows.filter(service__in=filters.services)
    if filters.api_keys:
        rows = rows.filter(api_key__in=filters.api_keys)
    return rows.order_by(*ORDER)


def usage_report_rows_for_key(*, principal: ApiPrincipal, filters: UsageFilters) -> QuerySet[UsageBucket]:
    """The rows an API key may read: each named customer and operation is checked as the single-valued
    API checks it (403 for a customer a bound key may not read, or an operation its service may not use),
    and a key limited to some operations sees only those when it names none."""
    if not filters.customers:
        usage_authorize(principal=principal, customer=None, operation=None)
    for customer in filters.customers:
        usage_authorize(principal=principal, customer=customer, operation=None)
    for operation in filters.operations:
        usage_authorize(principal=principal, customer=next(iter(filters.customers), None), operation=operation)
    rows = usage_report_rows(filters=filters)
    if not filters.operations and principal.operations:
        rows = rows.filter(operation__in=principal.operations)
    return rows


def usage_report_page(*, rows: QuerySet[UsageBucket], after: Position | None, size: int) -> UsagePage:
    """One page of `rows` (in ORDER) after `after`: keyset pagination, stable while rows are added."""
    if after is not None:
        rows = rows.filter(_after(after))
    found = list(rows[: size + 1])
    if len(found) <= size:
        return UsagePage(found, None)
    last = found[size - 1]
    return UsagePage(found[:size], Position(*(getattr(last, name) for name in ORDER)))


def _after(position: Position) -> Q:
    """Rows after `position` in ORDER: greater in one field of ORDER, equal in every field before it."""
    values = [getattr(position, name) for name in ORDER]
    after = Q()
    for index, name in enumerate(ORDER):
        after |= Q(**dict(zip(ORDER[:index], values[:index], strict=True)), **{f"{name}__gt": values[index]})
    return after


def usage_report_count(*, rows: QuerySet[UsageBucket], cap: int | None = None) -> int:
    """How many rows; with `cap`, counting stops at cap + 1 (enough to know a report is "more than cap")."""
    if cap is None:
        return rows.count()
    return rows.order_by()[: cap + 1].count()


def user_may_export(user: Any) -> bool:
    return bool(user.is_active and (user.is_superuser or user.has_perm(EXPORT_PERMISSION)))


def export_job_get(*, job_id: int) -> ExportJob:
    try:
        return ExportJob.objects.select_related("requested_by").get(pk=job_id)
    except ExportJob.DoesNotExist:
        raise NotFound(f"There is no export #{job_id}: it may have been deleted.") from None


def export_dir() -> Path:
    return Path(settings.VAR_DIR) / "exports"


def export_job_file(job: ExportJob) -> Path | None:
    """The finished file of `job`, or None if it has none (not done yet, or the file was removed)."""
    if job.status != ExportJob.Status.DONE or not job.file_name:
        return None
    path = export_dir() / Path(job.file_name).name  # only a bare name: never a path out of the folder
    return path if path.is_file() else None


@dataclass(frozen=True, slots=True)
class ExportJobStatus:
    status: str
    rows_done: int
    rows_total: int | None
    percent: int | None
    message: str
    finished: bool
    has_file: bool
    fields: dict[str, str]  # the job's changing fields as its page shows them (export_job_field_texts)


# The fields that change while a job runs, in the order its page lists them: the page's script rewrites them from
# the status view with its progress bar, so they never disagree (no "queued, 0 rows" under a finished bar).
LIVE_FIELDS = ("status", "rows_done", "rows_total", "started_at", "finished_at", "error")


def export_job_title(job: ExportJob) -> str:
    """'Usage export #7: 2026-03-01 to 2026-03-04 (UTC), per hour, every customer, as CSV'."""
    who = _names(job.customers, "customer")
    what = "" if not job.operations else f", {_names(job.operations, 'operation')}"
    what += "" if not job.services else f", {_names(job.services, 'service')}"
    what += "" if not job.api_keys else f", {_names(job.api_keys, 'key')}"
    return f"Usage export #{job.pk}: {job.range_text}, per {job.granularity}, {who}{what}, as {job.format.upper()}"


def _names(names: list[str], noun: str) -> str:
    if not names:
        return f"every {noun}"
    shown = ", ".join(names[:3])
    return f"{noun}s {shown} and {len(names) - 3} more" if len(names) > 3 else f"{noun}{'s' * (len(names) > 1)} {shown}"


def export_job_field_texts(job: ExportJob) -> dict[str, str]:
    """LIVE_FIELDS as words: the same text on the page as first drawn and after each poll."""
    return {
        "status": job.get_status_display(),
        "rows_done": f"{job.rows_done:,}",
        "rows_total": "not counted yet" if job.rows_total is None else f"{job.rows_total:,}",
        "started_at": _moment(job.started_at, "not started yet"),
        "finished_at": _moment(job.finished_at, "not finished yet"),
        "error": job.error or "none",
    }


def _moment(moment: dt.datetime | None, missing: str) -> str:
    return missing if moment is None else f"{moment.astimezone(dt.UTC):%Y-%m-%d %H:%M:%S} UTC"


def export_job_status(job: ExportJob, *, now: dt.datetime | None = None) -> ExportJobStatus:
    return ExportJobStatus(
        status=job.status,
        rows_done=job.rows_done,
        rows_total=job.rows_total,
        percent=job.percent,
        message=_status_message(job, now or timezone.now()),
        finished=job.status in (ExportJob.Status.DONE, ExportJob.Status.FAILED),
        has_file=export_job_file(job) is not None,
        fields=export_job_field_texts(job),
    )


def _status_message(job: ExportJob, now: dt.datetime) -> str:
    waited = now - job.updated_at
    if job.status == ExportJob.Status.QUEUED:
        late = waited > WAITING_WARNING_AFTER
        return "Waiting for a worker to start it." + (
            f" It has waited {_minutes(waited)}: is the Celery worker running?" if late else ""
        )
    if job.status == ExportJob.Status.RUNNING:
        total = job.rows_total
        doing = "Counting the rows…" if total is None else f"Written {job.rows_done:,} of {total:,} rows."
        if waited > WAITING_WARNING_AFTER:
            doing += f" No progress for {_minutes(waited)}: the worker may have stopped. If it stays so, export again."
        return doing
    if job.status == ExportJob.Status.DONE:
        if export_job_file(job) is None:
            return f"Done ({job.rows_done:,} rows), but the file is gone from {export_dir()}: export again."
        return f"Done: {job.rows_done:,} rows."
    return f"Failed: {job.error}"


def _minutes(duration: dt.timedelta) -> str:
    minutes = int(duration.total_seconds() // 60)
    return "1 minute" if minutes == 1 else f"{minutes} minutes"
