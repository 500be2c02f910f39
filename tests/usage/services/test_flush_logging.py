"""usage_flush logs a line at INFO only when it did something; an idle minute says "nothing to flush" at DEBUG."""

import logging

import pytest

from apps.usage.services import usage_flush
from tests.usage.factories import spend

MINUTE_MS = 60_000
FLUSH_LOGGER = "apps.usage.services.flush"


@pytest.mark.django_db
def test_an_idle_flush_logs_only_at_debug(engine, clock, caplog) -> None:
    caplog.set_level(logging.DEBUG, logger=FLUSH_LOGGER)

    usage_flush(store=engine, now_ms=clock.now_ms())

    assert [(r.levelname, r.getMessage()) for r in caplog.records if r.name == FLUSH_LOGGER] == [
        ("DEBUG", "usage flush: nothing to flush")
    ]


@pytest.mark.django_db
def test_a_flush_that_moved_rows_says_so_at_info(engine, clock, caplog) -> None:
    spend(engine, customer="acct-1")
    clock.advance(3 * MINUTE_MS)
    caplog.set_level(logging.DEBUG, logger=FLUSH_LOGGER)

    usage_flush(store=engine, now_ms=clock.now_ms())

    (record,) = [r for r in caplog.records if r.name == FLUSH_LOGGER]
    assert record.levelname == "INFO"
    assert record.getMessage().startswith("usage flush: flushed 1 minutes, 1 rows")
