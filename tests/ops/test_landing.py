"""The front page ("View site" in the admin): links to the admin, the API docs and the probes, no login needed."""

import pytest
from django.contrib import admin
from django.contrib.staticfiles import finders
from django.urls import reverse


@pytest.mark.django_db
def test_the_front_page_links_to_the_admin_the_api_docs_and_the_probes(client, django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    for url in ("/admin/", "/api/docs/", "/api/schema/", "/readyz", "/healthz"):
        assert f'href="{url}"' in page
        assert client.get(url).status_code in (200, 302), url


def test_view_site_in_the_admin_leads_to_the_front_page() -> None:
    assert admin.site.site_url == "/" == reverse("landing")


@pytest.mark.django_db
def test_the_site_has_an_icon_so_browsers_get_no_404_for_favicon_ico(client, admin_client) -> None:
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/favicon.svg"
    assert finders.find("favicon.svg"), "the icon is a static file"
    for page in (client.get("/"), admin_client.get("/admin/")):
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page.content.decode()
