"""Issue 23 finding 6 on real servers: the hybrid twin of test_redis_chaos's daily-quota test. A hybrid daily
calendar quota of 40 spends 30 through gunicorn; the usage and the counters' records reach PostgreSQL; then Redis is
SIGKILLed and restarted without its data AND the workers restart (a new server: new instances, no counts of their
own). Before, the quota was handed out again in full (45 of 45 in the finding); now the counter starts from its
records, so the next 15 checks admit the 10 left."""

from __future__ import annotations

import signal
import time

import pytest

from apps.apikeys.services import api_key_create
from apps.usage.models import CounterRecord
from tests.apikeys.factories import ServiceFactory
from tests.enforcement.counters.test_redis_chaos import check, flush_everything
from tests.limits.factories import CalendarLimitFactory, OperationFactory
from tests.servers import RedisServer
from tests.support.live_server import LiveServer

QUOTA, USED_BEFORE_LOSS, SYNC_MS = 40, 30, 100
# Checks paced wider than two exchange intervals and the exchange timer's lateness (50 ms): each worker knows what
# the other admitted, so the documented bound's over-admission term, A(2 x (sync_ms + 50 ms)), is 0 here.
PACE_S = 2 * (SYNC_MS + 50) / 1000 + 0.1
ENV = {
    "QUOTA_REDIS_TIMEOUT_MS": "2000",  # no timeouts on a busy machine: every answer comes from Redis
    "QUOTA_LEDGER_FLUSH_S": "0.2",  # the workers write their decisions and records at once
}


def _recorded() -> int:
    return sum(CounterRecord.objects.filter(counter__contains=":cal:daily").values_list("amount", flat=True))


def _paced(server: LiveServer, key: str, times: int) -> list[tuple[int, dict, float]]:
    answers = []
    for _ in range(times):
        answers.append(check(server, key, "Daily"))
        time.sleep(PACE_S)
    return answers


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_hybrid_daily_quota_survives_an_empty_redis_restart_and_a_worker_restart(key_prefix, tmp_path) -> None:
    CalendarLimitFactory(
        name="daily", operation=OperationFactory(name="Daily"), quantity=QUOTA, sync_ms=SYNC_MS, key_by=["customer"]
    )
    key = api_key_create(service=ServiceFactory()).secret
    redis_server = RedisServer().start()
    try:
        with LiveServer(tmp_path / "before", redis_url=redis_server.url, key_prefix=key_prefix, **ENV) as server:
            before = _paced(server, key, USED_BEFORE_LOSS)
            flush_everything(redis_server.url, key_prefix)
            deadline = time.monotonic() + 10
            while _recorded() < USED_BEFORE_LOSS and time.monotonic() < deadline:
                time.sleep(0.1)  # the workers' ledgers write every 0.2 s
            recorded = _recorded()
        redis_server.signal(signal.SIGKILL)
        redis_server.process.wait(timeout=10)
        redis_server.start()  # same port, empty
        with LiveServer(tmp_path / "after", redis_url=redis_server.url, key_prefix=key_prefix, **ENV) as server:
            after = _paced(server, key, QUOTA - USED_BEFORE_LOSS + 5)
    finally:
        redis_server.cleanup()

    assert [status for status, _, _ in before] == [200] * USED_BEFORE_LOSS
    assert recorded == USED_BEFORE_LOSS
    assert not any(body.get("degraded") for _, body, _ in before + after)
    assert [body["limits"][0]["mode"] for _, body, _ in after] == ["hybrid"] * len(after)
    assert [status for status, _, _ in after].count(200) == QUOTA - USED_BEFORE_LOSS  # before: all 15
