"""When API keys were last used is written in the background; an entry PostgreSQL refuses on its own is
quarantined and the others of its round are written."""

import datetime as dt

import pytest
from prometheus_client import REGISTRY

from apps.api.authentication import last_used_recorder
from apps.apikeys.models import ApiKey
from tests.apikeys.factories import ApiKeyFactory

pytestmark = pytest.mark.django_db

USED_AT = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def test_an_unwritable_prefix_does_not_stop_the_others_being_marked_used(caplog) -> None:
    last_used_recorder.flush()  # what other tests' requests left for the next round
    keys = [ApiKeyFactory(), ApiKeyFactory()]
    before = REGISTRY.get_sample_value("quota_rows_quarantined_total", {"writer": "api-key-last-used"}) or 0.0
    last_used_recorder.record(keys[0].prefix, USED_AT)
    last_used_recorder.record("qp_\x00", USED_AT)  # cannot come from a request: only stored prefixes are recorded
    last_used_recorder.record(keys[1].prefix, USED_AT)

    assert last_used_recorder.flush() == 2

    assert list(ApiKey.objects.order_by("pk").values_list("last_used_at", flat=True)) == [USED_AT, USED_AT]
    after = REGISTRY.get_sample_value("quota_rows_quarantined_total", {"writer": "api-key-last-used"})
    assert after == before + 1
    assert repr("qp_\x00") in caplog.text
