"""Admin pages for the YAML configuration: upload → preview (dry-run diff) → apply, and download.

Wired into LimitAdmin.get_urls: /admin/limits/limit/yaml/import/ and /admin/limits/limit/yaml/export/.
The logic is in apps.limits.admin_yaml_services; these views read the request and pick the page.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from apps.limits.admin_yaml_services import (
    Preview,
    PreviewStale,
    report_lines,
    report_table,
    yaml_apply,
    yaml_export,
    yaml_export_allowed,
    yaml_import_allowed,
    yaml_preview,
)
from apps.limits.config_io import MAX_DOCUMENT_BYTES, ConfigInvalid, config_yaml_read

TEMPLATE = "admin/limits/limit/yaml_import.html"


class UploadForm(forms.Form):
    file = forms.FileField(
        label="YAML file",
        help_text=f"The export_limits format (docs/design.md, “The configuration file”: every key); at most "
        f"{MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB.",
    )
    prune = forms.BooleanField(
        required=False,
        label="Also delete what the file does not name (prune)",
        help_text="Only in the sections the file has; customers and services with active API keys are never deleted.",
    )


class ApplyForm(forms.Form):
    text = forms.CharField(widget=forms.HiddenInput, strip=False)
    prune = forms.BooleanField(required=False, widget=forms.HiddenInput)
    fingerprint = forms.CharField(widget=forms.HiddenInput)


def _page(request: HttpRequest, model_admin: admin.ModelAdmin, **context: Any) -> TemplateResponse:
    base = {
        **model_admin.admin_site.each_context(request),
        "title": "Import limits from YAML",
        "opts": model_admin.opts,
        "export_allowed": yaml_export_allowed(request.user),
    }
    return TemplateResponse(request, TEMPLATE, {**base, **context})


def _preview_page(
    request: HttpRequest, model_admin: admin.ModelAdmin, preview: Preview, *, stale: bool = False
) -> TemplateResponse:
    apply_form = None
    if preview.report is not None and preview.report.changed:
        initial = {"text": preview.text, "prune": preview.prune, "fingerprint": preview.fingerprint}
        apply_form = ApplyForm(initial=initial)
    return _page(
        request,
        model_admin,
        form=UploadForm(initial={"prune": preview.prune}),
        preview=preview,
        lines=report_lines(preview.report) if preview.report else [],
        diff=report_table(preview.report) if preview.report else [],
        apply_form=apply_form,
        stale=stale,
    )


def yaml_import_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    if not yaml_import_allowed(request.user):
        raise PermissionDenied
    if request.method != "POST":
        return _page(request, model_admin, form=UploadForm())
    if "fingerprint" in request.POST:
        return _apply(request, model_admin)
    form = UploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, model_admin, form=form)
    prune = form.cleaned_data["prune"]
    if prune and not yaml_import_allowed(request.user, prune=True):
        raise PermissionDenied
    try:
        text = config_yaml_read(form.cleaned_data["file"])
    except ConfigInvalid as error:
        return _preview_page(request, model_admin, Preview(text="", prune=prune, report=None, errors=error.errors))
    return _preview_page(request, model_admin, yaml_preview(text, prune=prune))


def _apply(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    form = ApplyForm(request.POST)
    if not form.is_valid():
        return _page(request, model_admin, form=UploadForm())
    data = form.cleaned_data
    if data["prune"] and not yaml_import_allowed(request.user, prune=True):
        raise PermissionDenied
    try:
        report = yaml_apply(data["text"], prune=data["prune"], fingerprint=data["fingerprint"])
    except PreviewStale as stale:
        return _preview_page(request, model_admin, stale.preview, stale=True)
    counts = ", ".join(line for line in report_lines(report) if not line.startswith(" "))
    messages.success(request, f"The configuration was imported in one transaction: {counts}.")
    for warning in report.warnings:
        messages.warning(request, warning[:1].upper() + warning[1:])
    return HttpResponseRedirect(reverse("admin:limits_limit_changelist"))


def yaml_export_view(request: HttpRequest, model_admin: admin.ModelAdmin) -> HttpResponse:
    if not yaml_export_allowed(request.user):
        raise PermissionDenied
    text, filename = yaml_export()
    response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
