"""PeriodicThread: background work that survives a failing round and stops when asked."""

import threading

from apps.common.background import PeriodicThread


def test_a_failing_round_is_logged_and_the_next_round_runs(caplog) -> None:
    calls: list[int] = []
    second_round = threading.Event()

    def action() -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            raise RuntimeError("the database is away")
        second_round.set()

    worker = PeriodicThread("test-periodic", action, lambda: 0.01)
    worker.start()
    try:
        assert second_round.wait(timeout=5)
    finally:
        worker.stop()

    assert not worker.is_alive()
    assert "Background work test-periodic failed" in caplog.text
