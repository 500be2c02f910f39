"""Every admin page spells "API key" as the project does, never Django's "Api key" made from a field name."""

import io

import pytest
from django.contrib import admin
from django.core.management import call_command


@pytest.mark.django_db
def test_no_admin_page_says_api_key_as_django_makes_it_from_a_field_name(admin_client) -> None:
    call_command("load_demo", stdout=io.StringIO())  # objects, so every change and delete page is seen too
    urls = ["/admin/"]
    for model in admin.site._registry:
        base = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        urls += [base, f"{base}add/"]
        first = model._default_manager.first()
        if first is not None:
            urls += [f"{base}{first.pk}/change/", f"{base}{first.pk}/delete/"]

    pages = {url: admin_client.get(url).content.decode(errors="replace") for url in urls}

    assert [url for url, page in pages.items() if "Api key" in page] == []
    assert "API key:</label>" in pages["/admin/limits/accessrule/add/"]
