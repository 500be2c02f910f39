"""Usage exports in the admin: the export form is the "add" page, each job's page shows its progress.

Only superusers and users with reports.export_usage see any of it; others get a 403 page that says so.
The form validates with UsageExportForm; `export_request` decides whether the report is built now (the
response is the file) or becomes a job (the response is the job's page, whose script polls the status view).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html

from apps.common.exceptions import NotFound
from apps.reports.admin_pages import NOT_ALLOWED, job_download_view, job_links, job_status_view, refused
from apps.reports.exports import COLUMN_DOCS, FORMATS
from apps.reports.filters import UsageFilters
from apps.reports.forms import UsageExportForm
from apps.reports.models import ExportJob
from apps.reports.selectors import (
    LIVE_FIELDS,
    export_job_field_texts,
    export_job_get,
    export_job_status,
    export_job_title,
    usage_report_rows,
    user_may_export,
)
from apps.reports.services import IMMEDIATE_MAX_ROWS, export_job_delete, export_request, usage_report_temporary_file

EXPORT_TEMPLATE = "admin/reports/exportjob/export_form.html"


@admin.register(ExportJob)
class ExportJobAdmin(admin.ModelAdmin):
    list_display = ("__str__", "status", "progress", "requested_by", "created_at", "download")
    list_filter = ("status", "format", "granularity")
    list_select_related = ("requested_by",)
    change_form_template = "admin/reports/exportjob/change_form.html"
    # What was asked for, then what changes as the job runs: each of those in a span the page's script
    # (static/reports/export_progress.js) rewrites from the status view, so the fields follow the progress bar.
    fields = (
        "requested_by",
        "format",
        "granularity",
        "start",
        "end",
        "customers",
        "operations",
        "services",
        "api_keys",
        "created_at",
        *(f"live_{name}" for name in LIVE_FIELDS),
    )
    readonly_fields = ("created_at", *(f"live_{name}" for name in LIVE_FIELDS))

    # --- who may do what ---

    def has_module_permission(self, request: HttpRequest) -> bool:
        return user_may_export(request.user)

    def has_view_permission(self, request: HttpRequest, obj: ExportJob | None = None) -> bool:
        return user_may_export(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return user_may_export(request.user)

    def has_change_permission(self, request: HttpRequest, obj: ExportJob | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: ExportJob | None = None) -> bool:
        return user_may_export(request.user)

    # --- pages ---

    def get_urls(self) -> list[URLPattern]:
        own = [
            path("<int:job_id>/status/", self.admin_site.admin_view(self.status_view), name="reports_exportjob_status"),
            path(
                "<int:job_id>/download/",
                self.admin_site.admin_view(self.download_view),
                name="reports_exportjob_download",
            ),
        ]
        return own + super().get_urls()

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None) -> Any:
        """The export form; a valid POST answers with the file, or with the page of the job it became."""
        if not user_may_export(request.user):
            return refused(request, self, NOT_ALLOWED)
        form = UsageExportForm(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            return self._export(request, form.filters(), form.cleaned_data["format"])
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Export usage",
            "form": form,
            "column_docs": COLUMN_DOCS,
            "immediate_max_rows": f"{IMMEDIATE_MAX_ROWS['csv']:,} rows ({IMMEDIATE_MAX_ROWS['xlsx']:,} as XLSX)",
        }
        return TemplateResponse(request, EXPORT_TEMPLATE, context)

    def _export(self, request: HttpRequest, filters: UsageFilters, fmt: str) -> HttpResponseBase:
        job = export_request(requested_by=request.user, filters=filters, fmt=fmt)
        if job is None:
            file = usage_report_temporary_file(rows=usage_report_rows(filters=filters), filters=filters, fmt=fmt)
            return FileResponse(
                file, as_attachment=True, filename=filters.filename(fmt), content_type=FORMATS[fmt].content_type
            )
        self.message_user(
            request,
            f"This report has more than {IMMEDIATE_MAX_ROWS[fmt]:,} rows, so it is built in the background. "
            "This page shows its progress; the download link appears when it is done.",
            messages.INFO,
        )
        return HttpResponseRedirect(reverse("admin:reports_exportjob_change", args=[job.pk]))

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> Any:
        """The job's fields, read-only, under its progress bar and download link."""
        if not user_may_export(request.user):
            return refused(request, self, NOT_ALLOWED)
        extra = dict(extra_context or {})
        if object_id.isdigit():
            try:
                job = export_job_get(job_id=int(object_id))
            except NotFound:
                pass  # the admin's own page says the object does not exist
            else:
                # Read before the admin reads the fields: a job finished here is finished there too.
                # The title says the range; the object's name under it would only repeat it.
                title = export_job_title(job)
                extra.update(job_status=export_job_status(job), title=title, subtitle=None, **job_links(job))
        return super().change_view(request, object_id, form_url, extra)

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        if not user_may_export(request.user):
            return refused(request, self, NOT_ALLOWED)
        return super().changelist_view(request, extra_context)

    def delete_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not user_may_export(request.user):
            return refused(request, self, NOT_ALLOWED)
        return super().delete_view(request, object_id, extra_context)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if not user_may_export(request.user):
            return refused(request, self, NOT_ALLOWED)
        return super().history_view(request, object_id, extra_context)

    def status_view(self, request: HttpRequest, job_id: int) -> HttpResponse:
        return job_status_view(request, job_id)

    def download_view(self, request: HttpRequest, job_id: int) -> HttpResponseBase:
        return job_download_view(request, self, job_id)

    # --- deleting removes the file too ---

    def delete_model(self, request: HttpRequest, obj: ExportJob) -> None:
        export_job_delete(job=obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[ExportJob]) -> None:
        for job in queryset:
            export_job_delete(job=job)

    # --- the fields that change while the job runs ---

    @admin.display(description="status")
    def live_status(self, job: ExportJob) -> str:
        return _live(job, "status")

    @admin.display(description="rows written")
    def live_rows_done(self, job: ExportJob) -> str:
        return _live(job, "rows_done")

    @admin.display(description="rows in the report")
    def live_rows_total(self, job: ExportJob) -> str:
        return _live(job, "rows_total")

    @admin.display(description="started")
    def live_started_at(self, job: ExportJob) -> str:
        return _live(job, "started_at")

    @admin.display(description="finished")
    def live_finished_at(self, job: ExportJob) -> str:
        return _live(job, "finished_at")

    @admin.display(description="error")
    def live_error(self, job: ExportJob) -> str:
        return _live(job, "error")

    # --- columns ---

    @admin.display(description="progress")
    def progress(self, job: ExportJob) -> str:
        if job.rows_total is None:
            return "—"
        return f"{job.rows_done:,} / {job.rows_total:,} rows"

    @admin.display(description="file")
    def download(self, job: ExportJob) -> str:
        if job.status != ExportJob.Status.DONE:
            return "—"
        return format_html('<a href="{}">download</a>', reverse("admin:reports_exportjob_download", args=[job.pk]))


def _live(job: ExportJob, name: str) -> str:
    return format_html('<span data-job-field="{}">{}</span>', name, export_job_field_texts(job)[name])
