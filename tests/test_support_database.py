"""The test teardown that survives a deadlock with another reader of the test database (tests/support/database.py)."""

from __future__ import annotations

import pytest
from django.core.management import CommandError
from django.db import OperationalError
from django.test import testcases


def failing_then_passing(failures: list[Exception]):  # type: ignore[no-untyped-def]
    calls = []

    def teardown(self) -> None:  # type: ignore[no-untyped-def]
        calls.append(self)
        if failures:
            raise failures.pop(0)

    return teardown, calls


def wrapped(message: str) -> CommandError:
    """What flush raises: a CommandError from the database's error."""
    try:
        raise CommandError("Database couldn't be flushed.") from OperationalError(message)
    except CommandError as error:
        return error


def test_a_teardown_that_lost_a_deadlock_is_tried_again(monkeypatch) -> None:
    from tests.support import database

    teardown, calls = failing_then_passing([wrapped("deadlock detected")])
    monkeypatch.setattr(testcases.TransactionTestCase, "_fixture_teardown", teardown)
    database.teardown_retried_on_deadlock()

    testcases.TransactionTestCase._fixture_teardown(object())  # type: ignore[arg-type]

    assert len(calls) == 2


def test_any_other_teardown_error_is_raised_at_once(monkeypatch) -> None:
    from tests.support import database

    teardown, calls = failing_then_passing([wrapped("relation does not exist")])
    monkeypatch.setattr(testcases.TransactionTestCase, "_fixture_teardown", teardown)
    database.teardown_retried_on_deadlock()

    with pytest.raises(CommandError):
        testcases.TransactionTestCase._fixture_teardown(object())  # type: ignore[arg-type]
    assert len(calls) == 1
