"""Issue 26 item 3 on real servers: a hybrid `sliding_window` limit slides like the exact one. Ten checks in one
window, then checks at the start of the next, through gunicorn with one worker and with two, beside an exact twin
of the limit answering the same schedule in the same windows.

Before, the hybrid counter did not weigh its own previous window: one worker admitted 10, then 10 more at the next
window's start (exact mode: 10, then 1); two workers each weighed only the other's share.

The bound (docs/hybrid.md, "What the sliding variant guarantees"): every worker's decision counts the previous
window's 10 in full weight, floor(10 x (window - elapsed) / window) = 9 in the first 500 ms of a 5 s window,
because those 10 were reported long before the window ended (2 x (sync_ms + the 50 ms timer) is 300 ms) and a
worker's first decision in a window exchanges first. So a worker admits at most 10 - 9 = 1 itself; one worker
decides exactly as exact mode (1), and N workers admit at most what exact mode admits plus what the others admitted
in the last 2 x (sync_ms + 50 ms) before a decision: between 1 and N here, 1 or 2 with two workers.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from apps.apikeys.services import api_key_create
from tests.apikeys.factories import ServiceFactory
from tests.enforcement.counters.test_redis_chaos import check
from tests.limits.factories import LimitFactory, OperationFactory
from tests.support.live_server import LiveServer

LIMIT, PERIOD_S, SYNC_MS = 10, 5, 100
FIRST_AT_S, NEXT_AT_S = 0.3, 0.02  # when each phase starts in its window
LATE_S = 0.5  # the previous window's 10 weigh 9 until then (10 x 4500 / 5000)


def _next_window_s(margin_s: float) -> float:
    now = time.time() + margin_s
    return now - now % PERIOD_S + PERIOD_S


def _admitted(server: LiveServer, key: str, operation: str, times: int, threads: int) -> list[dict]:
    with ThreadPoolExecutor(threads) as pool:
        answers = list(pool.map(lambda _: check(server, key, operation), range(times)))
    assert {status for status, _, _ in answers} <= {200, 429}
    return [body for status, body, _ in answers if status == 200]


def _instances_that_counted(client: redis.Redis, key_prefix: str, window_ms: int) -> int:
    """The hybrid instances (workers) whose reports hold a count in the window starting at `window_ms`."""
    counted = 0
    for key in client.scan_iter(match=f"{key_prefix}:h:*"):
        for field, value in client.hgetall(key).items():
            if field.startswith(b"~"):
                continue
            start, count, count_prev = (int(part) for part in value.split(b":")[:3])
            counted += (start == window_ms and count > 0) or (start == window_ms + PERIOD_S * 1000 and count_prev > 0)
    return counted


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("workers", [1, 2])
def test_a_hybrid_sliding_window_admits_at_its_next_windows_start_what_exact_mode_does(
    workers: int, redis_url: str, redis_client: redis.Redis, key_prefix: str, tmp_path
) -> None:
    for name, sync_ms in (("SlideHybrid", SYNC_MS), ("SlideExact", None)):
        LimitFactory(
            name=name.lower(),
            operation=OperationFactory(name=name),
            algorithm="sliding_window",
            quantity=LIMIT,
            period_seconds=PERIOD_S,
            sync_ms=sync_ms,
        )
    key = api_key_create(service=ServiceFactory()).secret
    got: dict[str, list[list[dict]]] = {"SlideHybrid": [], "SlideExact": []}
    with LiveServer(tmp_path, redis_url=redis_url, key_prefix=key_prefix, workers=workers) as server:
        first = _next_window_s(margin_s=1.0)
        time.sleep(max(0.0, first + FIRST_AT_S - time.time()))
        for operation in got:  # ten at once: both workers take some
            got[operation].append(_admitted(server, key, operation, LIMIT, threads=LIMIT))
        time.sleep(max(0.0, first + PERIOD_S + NEXT_AT_S - time.time()))
        for operation in got:  # one at a time, exact and hybrid in the same moments of the window
            got[operation].append(_admitted(server, key, operation, 5, threads=1))
        late = time.time() - (first + PERIOD_S)
        instances = _instances_that_counted(redis_client, key_prefix, int(first * 1000))

    hybrid, exact = ([len(phase) for phase in got[operation]] for operation in ("SlideHybrid", "SlideExact"))
    assert late < LATE_S, f"the checks at the window's start took {late:.2f} s: the weight is no longer 9 of 10"
    assert exact == [10, 1]
    assert all(body["limits"][0]["mode"] == "hybrid" for phase in got["SlideHybrid"] for body in phase)
    assert instances == workers  # each worker counted some of the first ten (and reported them)
    if workers == 1:
        assert hybrid == exact  # before: [10, 5] (all five sent: its own 10 were not weighted)
    else:
        assert hybrid[0] == 10
        assert exact[1] <= hybrid[1] <= exact[1] + (workers - 1)  # the other's same-moment admission at most
