"""A client nobody here wrote: urllib3's own Retry, pointed at /api/v1/check, gets through after the wait the
platform advertised in Retry-After, with no SDK involved."""

from __future__ import annotations

import json
import time

import pytest
import urllib3

# django_db: so pytest-django creates the test database the `platform` fixture configures.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]


def wait_for_a_fresh_second() -> None:
    """Start just after a whole second, so the first two requests share one window of the 1-per-second limit."""
    time.sleep(1.0 - time.time() % 1.0 + 0.01)


def test_urllib3_retry_honours_retry_after_and_gets_through(platform) -> None:
    body = json.dumps({"customer": platform.customer(), "operation": "OncePerSecond"}).encode()
    headers = {"Authorization": f"Bearer {platform.service_key}", "Content-Type": "application/json"}
    http = urllib3.PoolManager(retries=False)
    url = f"{platform.url}/api/v1/check"
    retry = urllib3.Retry(
        total=3, status_forcelist=[429], allowed_methods=None, respect_retry_after_header=True, backoff_factor=0
    )
    wait_for_a_fresh_second()

    first = http.request("POST", url, body=body, headers=headers)
    refused = http.request("POST", url, body=body, headers=headers)
    started = time.monotonic()
    retried = http.request("POST", url, body=body, headers=headers, retries=retry)
    waited = time.monotonic() - started

    assert first.status == 200
    assert refused.status == 429
    assert refused.headers["Retry-After"] == "1"
    assert retried.status == 200
    assert json.loads(retried.data)["allowed"] is True
    assert [entry.status for entry in retried.retries.history] == [429]
    assert waited >= 1.0  # urllib3 slept the advertised second before the retry that passed
