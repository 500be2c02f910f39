import pytest


@pytest.mark.django_db
def test_healthz_answers_ok_without_touching_the_database(client, django_assert_num_queries) -> None:
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@pytest.mark.django_db
def test_the_openapi_schema_and_its_docs_page_are_served_without_a_key(client) -> None:
    schema = client.get("/api/schema/")
    docs = client.get("/api/docs/")

    assert schema.status_code == 200
    assert b"openapi: 3" in schema.content
    assert docs.status_code == 200
    assert b"swagger-ui" in docs.content
    assert b"cdn.jsdelivr" not in docs.content
