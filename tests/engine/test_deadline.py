"""Script deadlines (apps/engine/deadline.py) on a real Redis: past its deadline a script writes nothing."""

from __future__ import annotations

import pytest
import redis
from redis.exceptions import ResponseError

from apps.engine import ManualClock
from apps.engine.deadline import DeadlinePassed, Deadlines, DeadlineScript, with_deadline

INCR = "redis.call('INCR', KEYS[1])\nreturn tonumber(ARGV[1])"


def redis_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def test_a_call_past_its_deadline_writes_nothing_and_says_so(redis_client, key_prefix) -> None:
    script = redis_client.register_script(with_deadline(INCR))
    late = redis_ms(redis_client) - 1

    with pytest.raises(ResponseError, match="^DEADLINE"):
        script(keys=[f"{key_prefix}:n"], args=[7, late])

    assert redis_client.get(f"{key_prefix}:n") is None


def test_a_call_within_its_deadline_runs_and_reads_its_own_arguments(redis_client, key_prefix) -> None:
    script = redis_client.register_script(with_deadline(INCR))

    assert script(keys=[f"{key_prefix}:n"], args=[7, redis_ms(redis_client) + 10_000]) == 7
    assert script(keys=[f"{key_prefix}:n"], args=[8, 0]) == 8  # 0: no deadline
    assert int(redis_client.get(f"{key_prefix}:n")) == 2


def test_the_prologue_moves_no_line_of_the_script(redis_client) -> None:
    script = redis_client.register_script(with_deadline("local a = 1\nlocal b = 2\nreturn nil + a"))

    with pytest.raises(ResponseError, match=r"user_script:3:"):
        script(keys=[], args=[0])


def test_a_host_clock_minutes_off_still_sends_deadlines_in_redis_time(redis_client) -> None:
    behind = ManualClock(start_ms=redis_ms(redis_client) - 600_000)  # this host is ten minutes slow
    deadlines = Deadlines(timeout_s=0.05, clock=behind)

    deadline = deadlines.next_ms(redis_client)

    # The timeout (50 ms) less the margin (5 ms), in Redis's clock, give or take the measuring round trip.
    assert 0 < deadline - redis_ms(redis_client) <= 45


def test_a_client_without_a_timeout_sends_no_deadline(redis_client) -> None:
    assert Deadlines(timeout_s=None).next_ms(redis_client) == 0


def test_a_deadline_script_raises_deadline_passed_and_writes_nothing(redis_url, key_prefix) -> None:
    client = redis.Redis.from_url(redis_url, socket_timeout=0.05)
    script = DeadlineScript(client, INCR)
    clock = ManualClock(start_ms=redis_ms(client))
    deadlines = Deadlines(0.05, clock=clock)
    deadlines.next_ms(client)  # measures the offset
    clock.set(clock.now_ms() - 1_000)  # the call is sent a second "before": its deadline has passed in Redis
    try:
        with pytest.raises(DeadlinePassed):
            script(keys=[f"{key_prefix}:n"], args=[1], deadline_ms=deadlines.next_ms(client))
        assert client.get(f"{key_prefix}:n") is None
    finally:
        client.close()
