"""A refusal is normal traffic: Django's 4xx warnings go out at DEBUG through the configured handler."""

import logging

import pytest
from django.conf import settings

from apps.common.log_filters import ClientErrorsAtDebug
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.addFilter(ClientErrorsAtDebug())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def request_log():
    handler, root = Collect(), logging.getLogger()
    logger, levels = logging.getLogger("django.request"), (root.level, logging.getLogger("django.request").level)
    logger.addHandler(handler)
    # As in production (tests/conftest.py quiets django.request): Django's "django" logger passes INFO up.
    # setLevel, not an assignment: it clears the loggers' isEnabledFor caches.
    root.setLevel(logging.INFO)
    logger.setLevel(logging.INFO)
    yield handler
    root.setLevel(levels[0])
    logger.setLevel(levels[1])
    logger.removeHandler(handler)


def test_the_console_handler_is_filtered() -> None:
    assert "quiet_4xx" in settings.LOGGING["handlers"]["console"]["filters"]


def test_429_400_and_401_answers_are_not_warnings(api, request_log) -> None:
    LimitFactory(name="one", operation=OperationFactory(name="Op"), algorithm="fixed_window", quantity=1)
    api.post("/api/v1/check", {"customer": "a", "operation": "Op"}, format="json")

    assert api.post("/api/v1/check", {"customer": "a", "operation": "Op"}, format="json").status_code == 429
    assert api.post("/api/v1/check", {"customer": ""}, format="json").status_code == 400

    assert request_log.records == []


def test_a_5xx_record_keeps_its_level(request_log) -> None:
    logging.getLogger("django.request").error("Internal Server Error: /x", extra={"status_code": 500})
    logging.getLogger("django.request").warning("Too Many Requests: /x", extra={"status_code": 429})

    assert [(r.levelname, r.status_code) for r in request_log.records] == [("ERROR", 500)]


def test_at_debug_level_refusals_still_show_as_debug(request_log) -> None:
    logging.getLogger().setLevel(logging.DEBUG)

    logging.getLogger("django.request").warning("Too Many Requests: /x", extra={"status_code": 429})

    assert [(r.levelname, r.status_code) for r in request_log.records] == [("DEBUG", 429)]
