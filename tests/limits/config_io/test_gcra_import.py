"""A GCRA limit in the YAML file: imported, summarised, exported back unchanged; the admin shows its burst."""

import pytest

from apps.limits.algorithms import algorithm_fields
from apps.limits.config_io import config_export, config_import
from apps.limits.models import Limit
from apps.limits.summaries import limit_summary
from tests.limits.config_io.helpers import import_text, refusal

pytestmark = pytest.mark.django_db

FILE = """
operations: [{name: PutRecords}]
limits:
  - {name: records, operation: PutRecords, algorithm: gcra, limit: 100, period: minute, burst: 20,
     key_by: [customer]}
"""


def test_a_gcra_limit_is_imported_summarised_and_exported_back_unchanged() -> None:
    import_text(FILE)

    limit = Limit.objects.get(name="records")
    assert (limit.algorithm, limit.quantity, limit.period_seconds, limit.burst) == ("gcra", 100, 60, 20)
    assert limit_summary(limit) == "100 requests per minute per customer, GCRA (burst 20), enforce"
    assert not config_import(document=config_export(), dry_run=True).changed  # export -> import is a no-op


def test_its_burst_must_be_positive_and_it_needs_a_period() -> None:
    assert "records" in refusal(FILE.replace("burst: 20", "burst: 0"))
    assert "records" in refusal(FILE.replace("period: minute,", ""))


def test_the_admin_form_shows_its_period_burst_and_unit() -> None:
    assert algorithm_fields("gcra") == ["period_seconds", "burst", "unit"]
