import pytest

from tests.api_fixtures import client_with


@pytest.mark.django_db
def test_an_unexpected_error_still_answers_in_the_error_shape(service_key, engine, monkeypatch) -> None:
    def broken(**kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("apps.enforcement.decisions.core.check_evaluate", broken)

    response = client_with(service_key).post("/api/v1/check", {"customer": "a", "operation": "b"}, format="json")

    assert response.status_code == 500
    assert response.json()["error"]["code"] == "internal_error"
