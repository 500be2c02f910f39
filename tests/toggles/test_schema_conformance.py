"""schemathesis against /api/schema/, on the toggles endpoints only: every generated request (valid and invalid,
any If-None-Match) is answered as the schema says (status, body, headers), never with a 5xx."""

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis.internal import lambda_sources
from schemathesis import GenerationMode

from apps.api import authentication
from apps.api.authentication import BadKeyGuard
from tests.toggles.factories import FeatureToggleFactory

TOGGLE_PATHS = {"/api/v1/toggles", "/api/v1/toggles/{name}"}


@pytest.fixture
def in_process_wsgi():
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield get_wsgi_application()
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@pytest.mark.parametrize("mode", list(GenerationMode))
def test_the_toggles_endpoints_honour_their_schema(service_key, mode, in_process_wsgi, monkeypatch) -> None:
    FeatureToggleFactory(name="new-shard-planner", enabled=True, payload={"rollout_percent": 25})
    # As in tests/enforcement/apis/test_schema_conformance.py: CPython 3.11.7's ast.parse may fail deep in a stack,
    # and Hypothesis parses lambdas only to print strategies.
    monkeypatch.setattr(lambda_sources, "lambda_description", lambda function: "lambda: ...")
    schema = schemathesis.openapi.from_wsgi("/api/schema/", in_process_wsgi)
    operations = [result.ok() for result in schema.get_all_operations()]
    operations = [operation for operation in operations if operation.path in TOGGLE_PATHS]
    assert len(operations) == 2

    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
        def exercise(case) -> None:
            monkeypatch.setattr(authentication, "bad_key_guard", BadKeyGuard())
            response = case.call_and_validate(headers={"Authorization": f"Bearer {service_key}"})
            assert response.status_code < 500

        exercise()
