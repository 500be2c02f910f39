"""The `local` policy's instance count: real processes beat in PostgreSQL, and one that stops is no longer
counted three beats later."""

import datetime as dt
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.utils import timezone

from apps.enforcement.fallback import heartbeat
from apps.enforcement.models import InstanceHeartbeat
from tests.support import live_server

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
BEAT_S = 0.5
WORKER = Path(__file__).with_name("heartbeat_worker.py")


def start_worker() -> tuple[subprocess.Popen[bytes], str]:
    env = {
        **os.environ,
        "DATABASE_URL": live_server.test_database_url(),
        "QUOTA_HEARTBEAT_S": str(BEAT_S),
        "ENV_FILE": "",
        "SECRET_KEY": secrets.token_urlsafe(50),
    }
    process = subprocess.Popen([sys.executable, str(WORKER)], env=env, stdout=subprocess.PIPE)
    assert process.stdout is not None
    return process, process.stdout.readline().decode().strip()


def live_after(seconds: float) -> set[str]:
    """The instances counted as alive by a beat of this process, `seconds` from now."""
    time.sleep(seconds)
    heartbeat.heartbeat_beat(interval_s=BEAT_S)
    since = timezone.now() - dt.timedelta(seconds=BEAT_S * heartbeat.MISSED_BEATS_BEFORE_GONE)
    return set(InstanceHeartbeat.objects.filter(seen_at__gte=since).values_list("instance", flat=True))


def test_an_instance_that_stops_is_no_longer_counted_within_three_beats() -> None:
    (stopped, stopped_name), (running, running_name) = start_worker(), start_worker()
    try:
        assert {stopped_name, running_name, heartbeat.instance_name()} <= live_after(BEAT_S)
        stopped.send_signal(signal.SIGKILL)
        stopped.wait(timeout=10)
        seen = [live_after(BEAT_S) for _ in range(6)]
    finally:
        for worker in (stopped, running):
            worker.kill()
            worker.wait(timeout=10)
            if worker.stdout is not None:
                worker.stdout.close()

    gone_after = next(beats for beats, live in enumerate(seen, 1) if stopped_name not in live)
    assert gone_after <= 4, f"the stopped instance was counted {gone_after} beats after it stopped"
    assert all(running_name in live for live in seen)
    assert heartbeat.live_instances() >= 2
