"""The new-name budget: at most `per_day` names per service and UTC day, an admitted name stays admitted,
the Redis set and the in-process twin agree, and many threads together never admit more than the budget."""

import threading
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from apps.engine import ManualClock
from apps.engine.name_budget import DAY_MS, MemoryNameBudget, RedisNameBudget

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def test_past_the_budget_new_names_are_refused_and_admitted_ones_stay(redis_client, key_prefix) -> None:
    budget = RedisNameBudget(redis_client, key_prefix=key_prefix, clock=ManualClock(start_ms=START_MS))

    assert budget.admit("svc", [f"customer:c{i}" for i in range(5)], 3) == [True, True, True, False, False]
    assert budget.admit("svc", ["customer:c1", "operation:x"], 3) == [True, False]  # kinds share the budget
    assert budget.admit("other-svc", ["customer:c4"], 3) == [True]  # each service has its own
    assert budget.admit("svc", [], 3) == []


def test_a_new_day_starts_a_new_budget(redis_client, key_prefix) -> None:
    clock = ManualClock(start_ms=START_MS)
    budget = RedisNameBudget(redis_client, key_prefix=key_prefix, clock=clock)
    assert budget.admit("svc", ["customer:a", "customer:b"], 1) == [True, False]

    clock.advance(DAY_MS)

    assert budget.admit("svc", ["customer:b"], 1) == [True]


def test_the_day_set_expires(redis_client, key_prefix) -> None:
    RedisNameBudget(redis_client, key_prefix=key_prefix, clock=ManualClock(start_ms=START_MS)).admit("s", ["k:n"], 5)

    (key,) = list(redis_client.scan_iter(match=f"{key_prefix}:n:*"))
    assert DAY_MS < redis_client.pttl(key) <= DAY_MS + 3_600_000


names = st.lists(st.sampled_from(["customer:a", "customer:b", "operation:a", "customer:c", "operation:d"]), max_size=4)
steps = st.lists(st.tuples(st.sampled_from(["s1", "s2"]), names, st.integers(0, 2)), max_size=30)


# One Redis client for all examples is fine: each example writes under a prefix of its own.
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=steps, per_day=st.integers(0, 4))
def test_redis_and_memory_budgets_agree(redis_client, key_prefix, steps, per_day) -> None:
    redis_clock, memory_clock = ManualClock(start_ms=START_MS), ManualClock(start_ms=START_MS)
    prefix = f"{key_prefix}:{uuid.uuid4().hex[:8]}"
    on_redis = RedisNameBudget(redis_client, key_prefix=prefix, clock=redis_clock)
    in_memory = MemoryNameBudget(clock=memory_clock)

    for service, asked, days in steps:
        redis_clock.advance(days * DAY_MS)
        memory_clock.advance(days * DAY_MS)
        assert on_redis.admit(service, asked, per_day) == in_memory.admit(service, asked, per_day)


def test_many_threads_never_admit_more_than_the_budget(redis_url, key_prefix) -> None:
    import redis

    admitted: list[str] = []
    lock = threading.Lock()

    def bring_in(thread: int) -> None:
        client = redis.Redis.from_url(redis_url)
        budget = RedisNameBudget(client, key_prefix=key_prefix, clock=ManualClock(start_ms=START_MS))
        for index in range(10):
            asked = [f"customer:t{thread}-{index}-{n}" for n in range(2)]
            granted = [name for name, ok in zip(asked, budget.admit("svc", asked, 50), strict=True) if ok]
            with lock:
                admitted.extend(granted)
        client.close()

    threads = [threading.Thread(target=bring_in, args=(thread,)) for thread in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(admitted) == 50
