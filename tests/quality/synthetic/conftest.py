"""One real platform for this folder's live tests (started once, about 2 s), with the scenarios the tests run
imported first. Tests keep out of each other's way with customer prefixes of their own (one scenario each)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from apps.quality.synthetic import Scenario
from tests.quality.synthetic.live import SyntheticPlatform, synthetic_configure, synthetic_platform
from tests.support.database import database_flush

# Short and small: a 2-core machine shared with other work. Long enough for the aggressive users to reach
# both their concurrency limit and their openings-per-window limit (about 8 openings/s against 20 per 5 s).
LIVE = Scenario(seed=11, duration_s=7, common=6, aggressive=2, prefix="live")
COMMAND = Scenario(seed=12, duration_s=2, common=2, aggressive=1, prefix="cmd")


@pytest.fixture(scope="package")
def platform(django_db_setup, django_db_blocker, redis_url, tmp_path_factory) -> Iterator[SyntheticPlatform]:
    try:
        with django_db_blocker.unblock():
            api_key = synthetic_configure([LIVE, COMMAND])
        with synthetic_platform(tmp_path_factory.mktemp("synthetic"), redis_url, api_key) as started:
            yield started
    finally:
        with django_db_blocker.unblock():
            database_flush()
