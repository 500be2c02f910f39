"""Flushing the test database without losing what the migrations put in it.

Fixtures that start a real platform (gunicorn, Celery) commit rows and flush the database afterwards. A plain
flush also removes the rows data migrations made (the roles of apps/accounts), which tests in a rolled-back
transaction read. In one process such tests ran first (by pytest-django's order and by luck of names); under
xdist a worker may run a platform's tests first, so the flush puts those rows back, as Django's
serialized_rollback does.
"""

from __future__ import annotations

from django.core.management import call_command
from django.db import connection

_migration_rows: list[str] = []


def migration_rows_remember() -> None:
    """Keep the rows of the freshly migrated test database (call once, before any test writes)."""
    _migration_rows[:] = [connection.creation.serialize_db_to_string()]


def database_flush() -> None:
    """Empty every table, then put back the rows the migrations made. Call with the database unblocked."""
    # Without post_migrate, as serialized_rollback does: the remembered rows hold the content types and
    # permissions it would make, with the ids the roles refer to.
    call_command("flush", interactive=False, verbosity=0, inhibit_post_migrate=bool(_migration_rows))
    if _migration_rows:
        connection.creation.deserialize_db_from_string(_migration_rows[0])


def teardown_retried_on_deadlock() -> None:
    """A transactional test's teardown TRUNCATEs every table, while another session may read the same database: a
    live server the session keeps on this xdist worker (the browser tests' gunicorn) reads several tables in one
    transaction. Once in CI, PostgreSQL found the two waiting on each other and ended the TRUNCATE. The product
    never truncates; the teardown tries again, the reader's transaction having ended by then."""
    from django.db import DatabaseError
    from django.test import testcases

    teardown = testcases.TransactionTestCase._fixture_teardown

    def retried(self: testcases.TransactionTestCase) -> None:
        for attempt in range(3):
            try:
                teardown(self)
                return
            except Exception as error:  # flush wraps the database's error in a CommandError
                cause = error.__cause__ or error
                if not isinstance(cause, DatabaseError) or "deadlock detected" not in str(cause) or attempt == 2:
                    raise

    testcases.TransactionTestCase._fixture_teardown = retried  # type: ignore[method-assign]
