"""The front page ("View site" in the admin): links to the admin, the API docs and the probes, no login needed."""

import pytest
from django.contrib import admin
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
