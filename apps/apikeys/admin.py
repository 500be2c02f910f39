"""Admin for services and their API keys.

A key is only ever issued by `api_key_create`: the add form collects service, customer and name,
the service makes and hashes the secret, and the browser is redirected (post/redirect/get) to a page that
shows the secret once. The secret crosses that redirect split in two, neither half telling anything alone:
the session keeps it XOR a random mask of its length, a short-lived cookie scoped to that page keeps the mask.
The page takes both (popping the session's half), so a reload, or anyone with only the session store or
only the cookie, sees no secret; nothing else (a message, a URL, a log) ever holds it.
"""

import secrets
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.forms import ModelForm
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.cache import add_never_cache_headers

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import IssuedKey, api_key_create, api_key_revoke
from apps.common.admin_inlines import ReadOnlyTabularInline
from apps.history.admin import HistoryAdminMixin

HASH_PREVIEW_CHARS = 8
# Where save_form leaves the freshly issued key for response_add, on this request only.
ISSUED_KEY_ATTRIBUTE = "_quota_issued_api_key"
ISSUED_TEMPLATE = "admin/apikeys/apikey/issued.html"
# The two halves of a secret on its way to the page that shows it once (see the module's docstring).
ISSUED_SESSION_KEY = "quota_issued_api_keys"
ISSUED_MASK_COOKIE = "quota_issued_key_mask"
ISSUED_MASK_MAX_AGE_S = 300  # long enough for a slow redirect; the session's half goes at the first view anyway


def _xor(data: bytes, mask: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, mask, strict=True))


@admin.register(Service)
class ServiceAdmin(HistoryAdminMixin, admin.ModelAdmin):
    # Counting annotations drop Meta.ordering (GROUP BY), so the order is given here.
    ordering = ("name",)
    list_display = ("name", "description", "operation_names", "active_key_count", "updated_at")
    search_fields = ("name", "description")
    autocomplete_fields = ("operations",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Service]:
        active_keys = Count("api_keys", filter=Q(api_keys__revoked_at__isnull=True))
        return super().get_queryset(request).prefetch_related("operations").annotate(active_keys=active_keys)

    @admin.display(description="operations")
    def operation_names(self, service: Service) -> str:
        return ", ".join(operation.name for operation in service.operations.all()) or "every operation"

    @admin.display(description="active keys", ordering="active_keys")
    def active_key_count(self, service: Service) -> int:
        return service.active_keys  # type: ignore[attr-defined]


class ApiKeyAddForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ("service", "customer", "name")


class KeyStatusFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin) -> list[tuple[str, str]]:
        return [("active", "active"), ("revoked", "revoked")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> QuerySet[ApiKey]:
        if self.value() in ("active", "revoked"):
            return queryset.filter(revoked_at__isnull=self.value() == "active")
        return queryset


@admin.register(ApiKey)
class ApiKeyAdmin(HistoryAdminMixin, admin.ModelAdmin):
    list_display = ("prefix", "name", "service", "customer", "is_active", "created_at", "last_used_at")
    list_filter = (KeyStatusFilter, ("service", admin.RelatedOnlyFieldListFilter))
    list_select_related = ("service", "customer")
    search_fields = ("prefix", "name", "service__name", "customer__external_id", "customer__name")
    autocomplete_fields = ("service", "customer")
    date_hierarchy = "created_at"
    actions = ("revoke_keys",)
    add_form = ApiKeyAddForm
    add_fieldsets = (
        (
            None,
            {
                "fields": ("service", "customer", "name"),
                "description": "The key is generated when you save and shown once, on the next page. "
                "Only its hash is kept.",
            },
        ),
    )
    fieldsets = (
        (None, {"fields": ("prefix", "name", "service", "customer")}),
        ("Status", {"fields": ("is_active", "created_at", "last_used_at", "revoked_at", "hash_preview")}),
    )
    # Who a key belongs to is fixed when it is issued; revoking goes through the action.
    readonly_fields = (
        "prefix",
        "service",
        "customer",
        "is_active",
        "created_at",
        "last_used_at",
        "revoked_at",
        "hash_preview",
    )

    def get_fieldsets(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        return self.add_fieldsets if obj is None else super().get_fieldsets(request, obj)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> Any:
        return () if obj is None else super().get_readonly_fields(request, obj)

    def get_form(self, request: HttpRequest, obj: ApiKey | None = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = self.add_form
        return super().get_form(request, obj, change=change, **kwargs)

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # Every save of the add form ends on the page that shows the secret, so offer only "Save".
        extra_context = {**(extra_context or {}), "show_save_and_add_another": False, "show_save_and_continue": False}
        return super().add_view(request, form_url, extra_context)

    def save_form(self, request: HttpRequest, form: ModelForm, change: bool) -> ApiKey:
        if change:
            return super().save_form(request, form, change)
        # The service makes the secret and saves the key; the form's own instance is never saved.
        issued = api_key_create(
            service=form.cleaned_data["service"], customer=form.cleaned_data["customer"], name=form.cleaned_data["name"]
        )
        setattr(request, ISSUED_KEY_ATTRIBUTE, issued)
        return issued.api_key

    def save_model(self, request: HttpRequest, obj: ApiKey, form: ModelForm, change: bool) -> None:
        if change:  # a new key was saved by api_key_create in save_form
            super().save_model(request, obj, form, change)

    def save_related(self, request: HttpRequest, form: ModelForm, formsets: Any, change: bool) -> None:
        if change:  # the add form has no many-to-many fields or inlines, and was never saved itself
            super().save_related(request, form, formsets, change)

    def response_add(self, request: HttpRequest, obj: ApiKey, post_url_continue: str | None = None) -> HttpResponse:
        issued: IssuedKey | None = getattr(request, ISSUED_KEY_ATTRIBUTE, None)
        if issued is None:
            return super().response_add(request, obj, post_url_continue)
        secret = issued.secret.encode()
        mask = secrets.token_bytes(len(secret))
        request.session[ISSUED_SESSION_KEY] = {str(obj.pk): _xor(secret, mask).hex()}
        url = reverse("admin:apikeys_apikey_issued", args=[obj.pk])
        response = HttpResponseRedirect(url)
        response.set_cookie(
            ISSUED_MASK_COOKIE,
            mask.hex(),
            max_age=ISSUED_MASK_MAX_AGE_S,
            path=url,
            secure=request.is_secure(),
            httponly=True,
            samesite="Strict",
        )
        return response

    def get_urls(self) -> list[URLPattern]:
        issued = path(
            "<path:object_id>/issued/", self.admin_site.admin_view(self.issued_view), name="apikeys_apikey_issued"
        )
        return [issued, *super().get_urls()]

    def issued_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """The page after issuing a key: its secret the first time, and only to the browser that issued it."""
        api_key = self.get_object(request, object_id)
        if api_key is None or not self.has_add_permission(request):
            raise Http404("No such API key, or it is not yours to issue.")
        masked = request.session.get(ISSUED_SESSION_KEY, {}).get(str(api_key.pk))
        mask = request.COOKIES.get(ISSUED_MASK_COOKIE, "")
        secret = None
        if masked is not None:
            request.session[ISSUED_SESSION_KEY] = {}  # shown once: the session's half goes now
            try:
                secret = _xor(bytes.fromhex(masked), bytes.fromhex(mask)).decode()
            except ValueError:  # no cookie, or not this key's: nothing to show
                secret = None
        context = {
            **self.admin_site.each_context(request),
            "title": "API key issued" if secret else "API key",
            "opts": self.opts,
            "api_key": api_key,
            "secret": secret,
        }
        response = TemplateResponse(request, ISSUED_TEMPLATE, context)
        response.delete_cookie(ISSUED_MASK_COOKIE, path=request.path, samesite="Strict")
        add_never_cache_headers(response)
        return response

    @admin.display(description="active", boolean=True, ordering="revoked_at")
    def is_active(self, api_key: ApiKey) -> bool:
        return api_key.is_active

    @admin.display(description="hash (start)")
    def hash_preview(self, api_key: ApiKey) -> str:
        return f"{api_key.key_hash[:HASH_PREVIEW_CHARS]}…"

    @admin.action(description="Revoke selected keys", permissions=["change"])
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        revoked = 0
        for api_key in queryset:
            if api_key.is_active:
                api_key_revoke(api_key=api_key)
                self.log_change(request, api_key, "Revoked.")
                revoked += 1
        skipped = len(queryset) - revoked
        message = f"Revoked {revoked} key(s)." + (f" {skipped} already revoked." if skipped else "")
        self.message_user(request, message, messages.SUCCESS)


class ApiKeyInline(ReadOnlyTabularInline):
    """A customer's keys on its page, read-only: keys are issued on the API key add page (it shows the secret once)."""

    model = ApiKey
    template = "admin/apikeys/apikey/api_keys_inline.html"
    fields = ("prefix", "name", "service", "created_at", "last_used_at", "revoked_at")
    verbose_name_plural = "API keys"
