"""A session_time limit in the YAML file: imported, validated (its unit is seconds), exported back unchanged."""

import pytest

from apps.limits.config_io import config_export, config_import
from apps.limits.models import Algorithm, Limit
from apps.limits.summaries import limit_summary
from tests.limits.config_io.helpers import import_text, refusal

pytestmark = pytest.mark.django_db

FILE = """
operations: [{name: OpenSession}]
limits:
  - {name: sessions, operation: OpenSession, algorithm: concurrency, limit: 5, period: 600, key_by: [customer]}
  - {name: session-seconds, operation: OpenSession, algorithm: session_time, limit: 3600, period: day,
     unit: seconds, key_by: [customer]}
"""


def test_a_session_time_limit_is_imported_and_exported_back_unchanged() -> None:
    import_text(FILE)

    limit = Limit.objects.get(name="session-seconds")
    assert (limit.algorithm, limit.quantity, limit.period_seconds, limit.unit) == (
        Algorithm.SESSION_TIME,
        3600,
        86400,
        "seconds",
    )
    assert limit_summary(limit) == "3600 seconds per day per customer, session time, enforce"
    assert not config_import(document=config_export(), dry_run=True).changed  # export -> import is a no-op


def test_its_unit_must_be_seconds_and_it_needs_a_period() -> None:
    wrong_unit = FILE.replace("unit: seconds", "unit: requests")
    assert "its unit must be seconds" in refusal(wrong_unit)
    no_period = FILE.replace("period: day,", "")
    assert "session-seconds" in refusal(no_period)
