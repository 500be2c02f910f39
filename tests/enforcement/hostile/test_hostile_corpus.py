"""More than 150 hostile requests against the production server config, with Redis up and with Redis
unreachable: no 5xx, every refusal in the one error shape, and nothing moved, neither a Redis key nor a
PostgreSQL row (issue 13)."""

from __future__ import annotations

import hashlib
import http.client
import json
import time
import urllib.parse

import pytest
import redis
from django.db import connection

from apps.usage.models import UsageMinute
from tests.enforcement.hostile.conftest import Platform
from tests.enforcement.hostile.corpus import VALID, Case, corpus

# Not transaction=True: its teardown would empty the tables, the module's committed configuration included.
pytestmark = [pytest.mark.slow, pytest.mark.django_db]

# What a refusal may answer: bad input, authentication, a forbidden or unknown thing, a wrong method,
# too large, a reused request id, too many bad keys. Never 2xx (something was decided), never 5xx.
REFUSALS = {400, 401, 403, 404, 405, 413, 415, 422, 429}


def send(platform: Platform, case: Case) -> http.client.HTTPResponse:
    url = urllib.parse.urlsplit(platform.url)
    headers = {name: value.replace("{key}", platform.key).replace("{bad}", "qp_notakey") for name, value
               in case.headers.items()}  # fmt: skip
    connection_ = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:  # closed even when a send fails: an unclosed socket fails a later test (ResourceWarning)
        connection_.putrequest(case.method, case.path, skip_host="Host" in headers, skip_accept_encoding=True)
        for name, value in {**headers, "Content-Length": str(len(case.body))}.items():
            connection_.putheader(name, value)
        connection_.endheaders(case.body)
        response = connection_.getresponse()
        response.body = response.read()  # type: ignore[attr-defined]
    finally:
        connection_.close()
    return response


# The usage writers' heartbeats change with time alone (every ledger round of the platform's processes writes one).
HEARTBEATS = {"usage_usagewriter"}


def database_digest() -> dict[str, str]:
    """Every table's rows, hashed: any insert, update or delete changes its entry (heartbeats aside)."""
    digest = {}
    with connection.cursor() as cursor:
        for table in set(connection.introspection.table_names()) - HEARTBEATS:
            cursor.execute(f'SELECT t::text FROM "{table}" t ORDER BY 1')  # noqa: S608 - names from the catalog
            digest[table] = hashlib.sha256("\n".join(row[0] for row in cursor.fetchall()).encode()).hexdigest()
    return digest


def redis_digest(platform: Platform) -> dict[bytes, bytes | None]:
    client = redis.Redis.from_url(platform.redis_url)
    try:
        return {key: client.dump(key) for key in client.scan_iter(match=f"{platform.key_prefix}*", count=1000)}
    finally:
        client.close()


def refusal_problems(case: Case, response: http.client.HTTPResponse) -> list[str]:
    body = response.body  # type: ignore[attr-defined]
    if response.status not in REFUSALS:
        return [f"{case.name}: answered {response.status} {body[:200]!r}"]
    try:
        error = json.loads(body)["error"]
        assert set(error) == {"code", "message", "fields"}
        assert error["code"]
        assert error["message"]
    except (ValueError, KeyError, TypeError, AssertionError):
        return [f"{case.name}: {response.status} is not in the error shape: {body[:200]!r}"]
    return []


def prime(platform: Platform) -> None:
    """Spend request id dup-1 once, so the corpus can reuse it with other parameters; wait until the platform's
    ledger has written its usage (every QUOTA_LEDGER_FLUSH_S), so the digests taken next already hold it."""
    case = Case("primer", "POST", "/api/v1/check", json.dumps({**VALID, "request_id": "dup-1"}).encode())
    assert send(platform, case).status == 200
    deadline = time.monotonic() + 10
    while not UsageMinute.objects.filter(customer=VALID["customer"], allowed__gt=0).exists():
        assert time.monotonic() < deadline, "the primer's usage never reached PostgreSQL"
        time.sleep(0.05)


def served(platform: Platform) -> dict:
    """The platform answers a good caller (so the refusals below are not a broken setup)."""
    response = send(platform, Case("read-out", "GET", "/api/v1/customers/hostile-1/limits"))
    assert response.status == 200, response.body  # type: ignore[attr-defined]
    return json.loads(response.body)  # type: ignore[attr-defined]


def test_with_redis_up_every_hostile_request_is_refused_in_the_error_shape_and_moves_nothing(platform) -> None:
    cases = corpus()
    assert len(cases) >= 150
    prime(platform)
    assert served(platform)["degraded"] is False
    rows, keys = database_digest(), redis_digest(platform)

    problems = [problem for case in cases for problem in refusal_problems(case, send(platform, case))]

    assert problems == []
    assert redis_digest(platform) == keys
    assert database_digest() == rows
    served(platform)  # and a good caller is still served after all that (the bad keys included)


def test_with_redis_down_every_hostile_request_is_refused_and_moves_no_row(platform_without_redis) -> None:
    cases = corpus()
    assert len(cases) >= 150
    prime(platform_without_redis)  # decided by the `database` policy, which keeps request ids in PostgreSQL
    # The read-out answers 200 with Redis unreachable: the limits, nothing remaining known (finding 2).
    read_out = served(platform_without_redis)
    assert read_out["degraded"] is True
    assert {row["remaining"] for row in read_out["limits"]} == {None}
    rows = database_digest()

    problems = [problem for case in cases for problem in refusal_problems(case, send(platform_without_redis, case))]

    assert problems == []
    assert database_digest() == rows
    served(platform_without_redis)  # and a good caller is still served after all that
