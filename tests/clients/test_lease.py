"""Leases: acquire on entry, renew in the background while held, release on exit even when the block raises."""

import json
import logging
import threading
import time

import pytest
from quota_client import LeaseLost, QuotaClient, QuotaExceeded, TransportError

from tests.clients.fakes import decision_body, over_limit, respond

LEASE_ID = "Y291bnRlcg.YWNjdC0x.0123abcd"
WAIT_S = 5.0


class LeasePlatform:
    """Answers the lease endpoints by path; `renew_status` and `release_error` change its behaviour."""

    def __init__(self, acquire=None, *, renew_status: int = 200, release_error: Exception | None = None) -> None:
        self.acquire = acquire or respond(201, {"lease_id": LEASE_ID, "expires_at": "2026-01-01T00:01:00Z",
                                                **decision_body()})  # fmt: skip
        self.renew_status = renew_status
        self.release_error = release_error
        self.calls: list[tuple[str, str]] = []
        self.renewed = threading.Event()
        self.renewals = 0

    def request(self, method, url, *, body, headers, timeout_s):
        path = url.split("quota.test", 1)[1]
        self.calls.append((method, path))
        if method == "POST" and path == "/api/v1/leases":
            assert json.loads(body)["ttl_s"] == 3
            return self.acquire
        if path.endswith("/renew"):
            self.renewals += 1
            if self.renewals >= 2:
                self.renewed.set()
            if self.renew_status == 404:
                self.renewed.set()
                return respond(404, {"error": {"code": "lease_not_found", "message": "gone", "fields": {}}})
            return respond(200, {"lease_id": LEASE_ID, "expires_at": "2026-01-01T00:02:00Z"})
        if method == "DELETE":
            if self.release_error:
                raise self.release_error
            return respond(204)
        raise AssertionError(f"unexpected {method} {path}")

    def close(self) -> None:
        pass


def client_for(platform: LeasePlatform, **options) -> QuotaClient:
    return QuotaClient("http://quota.test", "k", transport=platform, transport_retries=0, **options)


def test_a_lease_is_renewed_while_held_and_released_on_exit() -> None:
    platform = LeasePlatform()

    with client_for(platform).lease("acct-1", "OpenSession", ttl_s=3, renew_every_s=0.01) as lease:
        assert platform.renewed.wait(WAIT_S)
        assert lease.held
        assert lease.id == LEASE_ID

    assert lease.renewals >= 2
    assert lease.expires_at == "2026-01-01T00:02:00Z"
    assert platform.calls[0] == ("POST", "/api/v1/leases")
    assert platform.calls[-1] == ("DELETE", "/api/v1/leases/Y291bnRlcg.YWNjdC0x.0123abcd")
    assert not lease.held


def test_the_lease_is_released_when_the_block_raises_and_the_error_still_propagates() -> None:
    platform = LeasePlatform()

    with pytest.raises(RuntimeError, match="job failed"), client_for(platform).lease("acct-1", "OpenSession", ttl_s=3):
        raise RuntimeError("job failed")

    assert platform.calls[-1][0] == "DELETE"


def test_a_failed_release_is_logged_not_raised(caplog) -> None:
    platform = LeasePlatform(release_error=TransportError("connection reset"))

    with caplog.at_level(logging.WARNING, logger="quota_client"), client_for(platform).lease("a", "Op", ttl_s=3):
        pass

    assert "frees itself within 3 s" in caplog.text


def test_a_refused_lease_raises_quota_exceeded_and_holds_nothing() -> None:
    platform = LeasePlatform(acquire=over_limit(None))

    with pytest.raises(QuotaExceeded), client_for(platform).lease("acct-1", "OpenSession", ttl_s=3):
        pytest.fail("the block must not run")

    assert platform.calls == [("POST", "/api/v1/leases")]


def test_a_lease_found_gone_at_renewal_is_marked_lost() -> None:
    platform = LeasePlatform(renew_status=404)

    with client_for(platform).lease("acct-1", "OpenSession", ttl_s=3, renew_every_s=0.01) as lease:
        assert platform.renewed.wait(WAIT_S)
        deadline = time.monotonic() + WAIT_S
        while not lease.lost and time.monotonic() < deadline:
            time.sleep(0.005)
        assert lease.lost
        assert not lease.held
        with pytest.raises(LeaseLost):
            lease.raise_if_lost()


def test_an_allow_rule_bypass_holds_nothing_to_renew_or_release() -> None:
    platform = LeasePlatform(acquire=respond(201, {"lease_id": None, "expires_at": None, **decision_body()}))

    with client_for(platform).lease("vip", "OpenSession", ttl_s=3, renew_every_s=0.01) as lease:
        time.sleep(0.05)

    assert lease.id is None
    assert lease.decision.allowed
    assert platform.calls == [("POST", "/api/v1/leases")]


class Unreachable:
    def request(self, method, url, **kwargs):
        raise TransportError("connection refused")

    def close(self) -> None:
        pass


def test_fail_open_gives_a_lease_that_holds_nothing() -> None:
    client = QuotaClient("http://quota.test", "k", transport=Unreachable(), transport_retries=0, failure_mode="open")

    with client.lease("acct-1", "OpenSession", ttl_s=3) as lease:
        assert lease.id is None
        assert lease.decision.failed_open


def test_renewing_must_happen_within_the_ttl() -> None:
    with pytest.raises(ValueError, match="renew_every_s"):
        client_for(LeasePlatform()).lease("acct-1", "OpenSession", ttl_s=3, renew_every_s=3)
