"""What Redis itself ran while a piece of code ran (MONITOR), to count round trips end to end."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import redis


def commands_sent_during(redis_url: str, action: Callable[[], object]) -> list[str]:
    """The commands clients sent while `action` ran (commands run inside scripts are not round trips)."""
    sentinel = f"end-{uuid.uuid4().hex}"
    seen: list[str] = []
    watcher = redis.Redis.from_url(redis_url)
    marker = redis.Redis.from_url(redis_url)
    marker.ping()  # connect now, so its handshake is not seen below
    with watcher.monitor() as monitor:

        def listen() -> None:
            for event in monitor.listen():
                if sentinel in event["command"]:
                    return
                if event["client_type"] != "lua":
                    seen.append(event["command"].split(" ", 1)[0].upper())

        thread = threading.Thread(target=listen, daemon=True)
        thread.start()
        action()
        marker.echo(sentinel)
        thread.join(timeout=10)
    watcher.close()
    marker.close()
    assert not thread.is_alive(), "the monitor never saw the end of the action"
    return seen
