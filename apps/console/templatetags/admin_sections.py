"""{{ app_list|admin_sections }}: the admin's apps as the product's sections first, Django's internals last.

Used by templates/admin/app_list.html, so the index, the sidebar and every page list the apps the same way.
"""

from typing import Any

from django import template

register = template.Library()

# The product's sections, in the order an operator's day goes: who, what they may do, keys, usage, reports.
PRODUCT_ORDER = ("customers", "limits", "apikeys", "toggles", "usage", "reports", "alerts", "quality", "history")
# Django's and third parties' tables: accounts, login lockouts (django-axes), beat's schedule rows.
INTERNAL_APPS = ("auth", "axes", "django_celery_beat")
INTERNALS_TITLE = "Django internals"
INTERNALS_HELP = "Accounts and roles, login lockouts (axes) and the beat schedules' own tables."


@register.filter
def admin_sections(app_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """[{"title", "help", "apps"}]: the product's apps (known ones in PRODUCT_ORDER, others after them by name),
    then the internal ones; a section without apps is left out."""
    product = [app for app in app_list if app["app_label"] not in INTERNAL_APPS]
    internal = [app for app in app_list if app["app_label"] in INTERNAL_APPS]

    def position(app: dict[str, Any]) -> tuple[int, str]:
        label = app["app_label"]
        return (PRODUCT_ORDER.index(label) if label in PRODUCT_ORDER else len(PRODUCT_ORDER), str(app["name"]))

    sections = [
        {"title": "", "help": "", "apps": sorted(product, key=position), "internal": False},
        {"title": INTERNALS_TITLE, "help": INTERNALS_HELP, "apps": internal, "internal": True},
    ]
    return [section for section in sections if section["apps"]]
