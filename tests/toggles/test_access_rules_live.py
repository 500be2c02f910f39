"""Allow/deny lists from a file source on a real server: gunicorn with two workers, each polling the config version
as in production, answering /api/v1/check while the source is refreshed, removed, changed and broken."""

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.apikeys.models import Service
from apps.apikeys.services import api_key_create
from apps.limits.config_io import config_import, config_yaml_load
from apps.limits.models import AccessRule, RuleAction
from apps.toggles.services import RefreshReport, toggles_refresh
from tests.support.live_server import LiveServer

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CONFIG_YAML = """
operations: [{name: ModifyShardCount}]
customers: [{id: acct-1}]
limits:
  - {name: daily, operation: ModifyShardCount, algorithm: calendar, limit: 1000, period: day, key_by: [customer]}
services: [{name: rules-live, operations: []}]
"""
POLL_S = 0.2
PUBLISHED_WITHIN_S = 10.0  # far above the poll: a loaded test machine, two workers
SCRAPER, ABUSER, ADMINS_OWN = "203.0.113.9", "198.51.100.7", "192.0.2.7"


@pytest.fixture
def server(redis_url: str, key_prefix: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    config_import(document=config_yaml_load(CONFIG_YAML))
    key = api_key_create(service=Service.objects.get(name="rules-live")).secret
    with LiveServer(
        tmp_path / "server", redis_url=redis_url, key_prefix=key_prefix, QUOTA_SNAPSHOT_POLL_S=str(POLL_S)
    ) as up:
        yield up.url, key


def status(server: tuple[str, str], ip: str) -> int:
    url, key = server
    body = json.dumps({"customer": "acct-1", "operation": "ModifyShardCount", "ip": ip}).encode()
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    request = urllib.request.Request(f"{url}/api/v1/check", data=body, headers=headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - loopback
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def settled(server: tuple[str, str], expected: dict[str, int]) -> dict[str, int]:
    """The statuses once every worker answers `expected` ten times in a row (or what they answer at the deadline)."""
    deadline = time.monotonic() + PUBLISHED_WITHIN_S
    while True:
        answers = {ip: {status(server, ip) for _ in range(10)} for ip in expected}
        seen = {ip: codes.pop() if len(codes) == 1 else -1 for ip, codes in answers.items()}
        if seen == expected or time.monotonic() > deadline:
            return seen
        time.sleep(POLL_S)


def deny(network: str) -> dict[str, list[dict[str, str]]]:
    return {"access_rules": [{"action": "deny", "ip": network}]}


def test_rules_from_a_file_source_on_a_real_server(server, tmp_path: Path) -> None:
    source, lkg = tmp_path / "source" / "toggles.json", tmp_path / "var" / "toggles-lkg.json"
    source.parent.mkdir()

    def refresh(document: Any = None) -> RefreshReport:
        if document is not None:
            source.write_text(json.dumps(document))
        return toggles_refresh(source=str(source), lkg_path=lkg)

    AccessRule.objects.create(action=RuleAction.DENY, ip="192.0.2.0/24", reason="made in the admin")
    assert settled(server, {SCRAPER: 200, ADMINS_OWN: 403}) == {SCRAPER: 200, ADMINS_OWN: 403}

    # Loaded and enforced by both workers.
    report = refresh(deny("203.0.113.0/24"))
    assert (report.fetched_ok, report.access_rules_created) == (True, 1)
    assert settled(server, {SCRAPER: 403, ABUSER: 200}) == {SCRAPER: 403, ABUSER: 200}

    # The source file removed: the last-known-good copy keeps them.
    source.unlink()
    report = refresh()
    assert report.used_last_known_good
    assert not report.changed
    time.sleep(3 * POLL_S)
    assert settled(server, {SCRAPER: 403}) == {SCRAPER: 403}

    # The source changed: its set replaced, the admin's rule untouched.
    report = refresh(deny("198.51.100.0/24"))
    assert (report.access_rules_created, report.access_rules_deleted) == (1, 1)
    expected = {SCRAPER: 200, ABUSER: 403, ADMINS_OWN: 403}
    assert settled(server, expected) == expected

    # An invalid document: nothing changes, and the report says why.
    report = refresh(deny("nowhere"))
    assert report.error.startswith("source: access_rules[0] (action: deny, ip: nowhere): ip: ")
    assert not report.changed
    time.sleep(3 * POLL_S)
    assert settled(server, expected) == expected
