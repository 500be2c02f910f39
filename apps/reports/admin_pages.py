"""The export job's own pages beside the admin's: the status JSON its page's script polls, the file download,
and the page that says why something was refused (403) or is not there (404).

The admin (admin.py) mounts them under the job's URLs; like every export page, only superusers and users with
reports.export_usage may use them.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers

from apps.common.exceptions import NotFound
from apps.reports.exports import FORMATS
from apps.reports.models import ExportJob
from apps.reports.selectors import export_job_file, export_job_get, export_job_status, user_may_export

REFUSED_TEMPLATE = "admin/reports/exportjob/refused.html"
NOT_ALLOWED = (
    "You may not export usage reports. Ask an administrator to give you the analysts role "
    "(the permission “Can export usage reports”)."
)


def job_status_view(request: HttpRequest, job_id: int) -> HttpResponse:
    """What the job's page script polls: its status, progress and fields, and the download link once done."""
    if not user_may_export(request.user):
        return JsonResponse({"error": NOT_ALLOWED}, status=403)
    try:
        job = export_job_get(job_id=job_id)
    except NotFound as error:
        return JsonResponse({"error": error.message}, status=404)
    status = export_job_status(job)
    response = JsonResponse(
        {
            "status": status.status,
            "rows_done": status.rows_done,
            "rows_total": status.rows_total,
            "percent": status.percent,
            "message": status.message,
            "finished": status.finished,
            "download_url": job_links(job)["download_url"],
            "fields": status.fields,
        }
    )
    add_never_cache_headers(response)
    return response


def job_download_view(request: HttpRequest, model_admin: admin.ModelAdmin, job_id: int) -> HttpResponseBase:
    """The finished job's file; the refused page (404) while it has none."""
    if not user_may_export(request.user):
        return refused(request, model_admin, NOT_ALLOWED)
    try:
        job = export_job_get(job_id=job_id)
    except NotFound as error:
        return refused(request, model_admin, error.message, status=404)
    file = export_job_file(job)
    if file is None:
        return refused(request, model_admin, export_job_status(job).message, status=404)
    return FileResponse(
        file.open("rb"),
        as_attachment=True,
        filename=job.filters.filename(job.format),
        content_type=FORMATS[job.format].content_type,
    )


def refused(request: HttpRequest, model_admin: admin.ModelAdmin, message: str, *, status: int = 403) -> HttpResponse:
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Not allowed" if status == 403 else "Not found",
        "message": message,
    }
    return TemplateResponse(request, REFUSED_TEMPLATE, context, status=status)


def job_links(job: ExportJob) -> dict[str, str | None]:
    has_file = export_job_file(job) is not None
    return {
        "status_url": reverse("admin:reports_exportjob_status", args=[job.pk]),
        "download_url": reverse("admin:reports_exportjob_download", args=[job.pk]) if has_file else None,
    }
