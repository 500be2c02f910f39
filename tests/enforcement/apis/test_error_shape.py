"""Every answer under /api/ is JSON in the one error shape, also where no API view is reached."""

import pytest
from django.test import override_settings

from tests.api_fixtures import client_with

pytestmark = pytest.mark.django_db


def assert_error_shape(response, status: int, code: str) -> None:
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    assert body["error"]["fields"] == {}


@override_settings(DEBUG=False)
def test_an_unknown_path_under_the_api_is_a_json_404(service_key) -> None:
    api = client_with(service_key)

    assert_error_shape(api.get("/api/v1/nothing-here"), 404, "not_found")
    assert_error_shape(api.post("/api/v2/check", {}, format="json"), 404, "not_found")


@override_settings(DEBUG=False)
def test_outside_the_api_a_404_stays_a_page(client) -> None:
    response = client.get("/nothing-here")

    assert response.status_code == 404
    assert not response["Content-Type"].startswith("application/json")


def test_a_wrong_method_is_a_json_405(service_key) -> None:
    api = client_with(service_key)

    assert_error_shape(api.get("/api/v1/check"), 405, "method_not_allowed")
    assert_error_shape(api.put("/api/v1/check/batch", {}, format="json"), 405, "method_not_allowed")


@override_settings(DEBUG=False, ALLOWED_HOSTS=["quota.internal"])
def test_a_host_not_served_is_a_json_400(service_key) -> None:
    api = client_with(service_key)

    response = api.post("/api/v1/check", {"customer": "a", "operation": "Op"}, format="json", HTTP_HOST="evil.test")

    assert_error_shape(response, 400, "bad_request")


def test_a_renewal_whose_body_is_not_an_object_is_a_400(service_key) -> None:
    api = client_with(service_key)

    for body in ([], [1], "ttl", 5, True):
        response = api.post("/api/v1/leases/abc/renew", body, format="json")
        assert response.status_code == 400, body
        assert response.json()["error"]["code"] == "invalid"
    assert api.post("/api/v1/leases/abc/renew", {"ttl_s": 5, "extra": 1}, format="json").status_code == 400
