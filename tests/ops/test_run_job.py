"""`manage.py run_job NAME`: one beat job now, through the same registry as the schedule."""

import io
import json
import time

import pytest
from django.core.management import CommandError, call_command

from apps.enforcement.counters.guarded_store import engine_store_use
from apps.engine import ManualClock
from apps.engine.keys import KeyLayout
from apps.engine.store.redis import RedisStore
from apps.usage.models import QuarantinedUsage, UsageMinute
from tests.usage.factories import spend

pytestmark = pytest.mark.django_db

MINUTE_MS = 60_000


@pytest.fixture
def store_with_old_usage(redis_client, key_prefix):
    store = RedisStore(redis_client, key_prefix=key_prefix, clock=ManualClock(int(time.time() * 1000) - 5 * MINUTE_MS))
    spend(store, customer="acct-9", costs={"records": 2})
    engine_store_use(store)
    yield store
    engine_store_use(None)


def run_job(*args):
    out = io.StringIO()
    call_command("run_job", *args, stdout=out)
    return out.getvalue()


def test_run_job_flush_usage_flushes_now_and_prints_what_it_did(store_with_old_usage) -> None:
    output = run_job("flush_usage")

    assert output.startswith("flush_usage: flushed 1 minutes, 1 rows; 0 already flushed")
    assert UsageMinute.objects.get().customer == "acct-9"
    assert store_with_old_usage.usage_minutes() == []


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("rollup_usage", "rolled up 0 flushed minutes"),
        ("purge_expired", "purged 0 minute"),
        ("refresh_toggles", "toggles refresh: no source configured"),
    ],
)
def test_run_job_runs_every_other_beat_job_too(settings, tmp_path, name, says) -> None:
    settings.QUOTA_TOGGLES_SOURCE = ""
    settings.QUOTA_TOGGLES_LKG_PATH = tmp_path / "toggles-lkg.json"

    assert run_job(name).startswith(f"{name}: {says}")


def test_run_job_json_prints_the_whole_report(store_with_old_usage) -> None:
    report = json.loads(run_job("flush_usage", "--json"))

    assert report == {
        "job": "flush_usage",
        "minutes": 1,
        "rows": 1,
        "already_flushed": 0,
        "lost_race": 0,
        "quarantined": 0,
        "quarantined_keys": [],
        "summary": report["summary"],
    }


def test_run_job_flush_usage_says_which_rows_it_quarantined(store_with_old_usage, redis_client, key_prefix) -> None:
    """A usage row PostgreSQL refuses (a NUL byte in its customer, written below the API) is set aside, named in
    the output, and the job still flushes the rest; the next run has nothing left to trip on."""
    minute = store_with_old_usage.usage_minutes()[0]
    layout = KeyLayout(key_prefix)
    poisoned = layout.usage_key("a\x00b", "PutRecords", minute)
    redis_client.hset(poisoned, mapping={"allowed": 1})
    redis_client.sadd(layout.usage_index_key(minute), poisoned)

    output = run_job("flush_usage")

    assert output.startswith("flush_usage: flushed 1 minutes, 1 rows;")
    assert (
        "; 1 row quarantined (refused by the database, kept in QuarantinedUsage): ('a\\x00b', 'PutRecords'," in output
    )
    assert UsageMinute.objects.get().customer == "acct-9"
    assert QuarantinedUsage.objects.get().key == repr(("a\x00b", "PutRecords", minute))
    assert run_job("flush_usage").startswith("flush_usage: flushed 0 minutes, 0 rows;")


def test_an_unknown_job_is_an_error_that_lists_the_jobs() -> None:
    with pytest.raises(CommandError) as error:
        run_job("flush_everything")

    message = str(error.value)
    assert "flush_everything" in message
    for name in ("flush_usage", "rollup_usage", "purge_expired", "refresh_toggles"):
        assert name in message
