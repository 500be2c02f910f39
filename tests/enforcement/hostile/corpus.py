"""A corpus of hostile requests to the service API: each one must be refused (4xx, in the error shape)
and move nothing. Built, not stored: every case says what it tries.

A case is (name, method, path, headers, body bytes). `{key}` in a header is replaced by a valid service
key, `{bad}` by an invalid one. Bodies are bytes, so broken encodings can be sent as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

CONTROLS = ["\x00", "\x01", "\x08", "\t", "\n", "\r", "\x1b", "\x1f", "\x7f"]
VALID = {"customer": "hostile-1", "operation": "Guarded", "resource": "r-1"}
AUTH = {"Authorization": "Bearer {key}"}
JSON = {"Content-Type": "application/json", **AUTH}
DAY = "from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z"
BATCH, LEASES = "/api/v1/check/batch", "/api/v1/leases"


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))


def _json(value: object) -> bytes:
    return json.dumps(value).encode()


def _check(name: str, body: object, path: str = "/api/v1/check", **kwargs: object) -> Case:
    return Case(name, "POST", path, body if isinstance(body, bytes) else _json(body), **kwargs)  # type: ignore[arg-type]


def control_characters() -> list[Case]:
    """Every text field of every endpoint, with control characters inside and alone."""
    cases = []
    for char in CONTROLS:
        tag = f"U+{ord(char):04X}"
        for name in ("customer", "operation", "resource", "request_id"):
            cases.append(_check(f"check {name} with {tag}", {**VALID, name: f"a{char}b"}))
        cases.append(_check(f"attribute value with {tag}", {**VALID, "attributes": {"tier": f"g{char}"}}))
        cases.append(_check(f"attribute name with {tag}", {**VALID, "attributes": {f"t{char}": "g"}}))
        cases.append(_check(f"cost unit with {tag}", {**VALID, "costs": {f"u{char}": 1}}))
        cases.append(_check(f"ip with {tag}", {**VALID, "ip": f"10.0.0.1{char}"}))
    for name in ("customer", "operation", "resource", "request_id"):
        cases.append(_check(f"batch item {name} with NUL", {"items": [VALID, {**VALID, name: "x\x00"}]}, BATCH))
        cases.append(_check(f"lease {name} with NUL", {**VALID, name: "x\x00"}, LEASES))
    return cases


def empty_and_wrong_types() -> list[Case]:
    cases = []
    for name in ("customer", "operation", "resource", "request_id", "ip"):
        cases.append(_check(f"empty {name}", {**VALID, name: ""}))
        cases.append(_check(f"{name} as a number", {**VALID, name: 7}))
        cases.append(_check(f"{name} as null", {**VALID, name: None}))
    cases += [
        _check("empty attribute value", {**VALID, "attributes": {"tier": ""}}),
        _check("cost negative", {**VALID, "costs": {"requests": -1}}),
        _check("cost fractional", {**VALID, "costs": {"requests": 1.5}}),
        _check("cost beyond 2^53", {**VALID, "costs": {"requests": 2**53}}),
        _check("cost as a string", {**VALID, "costs": {"requests": "1"}}),
        _check("cost as a boolean", {**VALID, "costs": {"requests": True}}),
        _check("dry_run as a string", {**VALID, "dry_run": "yes"}),
        _check("unknown field", {**VALID, "admin": True}),
        _check("33 attributes", {**VALID, "attributes": {f"a{i}": "v" for i in range(33)}}),
        _check("17 cost units", {**VALID, "costs": {f"u{i}": 1 for i in range(17)}}),
        _check("body is a list", [VALID]),
        _check("body is a string", "check"),
        _check("body is a number", 1),
        _check("body is null", None),
        _check("batch without items", {"mode": "atomic"}, BATCH),
        _check("batch of nothing", {"items": []}, BATCH),
        _check("batch mode unknown", {"items": [VALID], "mode": "some"}, BATCH),
        _check("batch items not a list", {"items": VALID}, BATCH),
        _check("lease ttl zero", {**VALID, "ttl_s": 0}, LEASES),
        _check("lease ttl a day and a second", {**VALID, "ttl_s": 86401}, LEASES),
    ]
    return cases


def sizes_and_encodings() -> list[Case]:
    deep = b"[" * 100_000 + b"]" * 100_000
    return [
        _check("customer of 201 characters", {**VALID, "customer": "c" * 201}),
        _check("request id of 129 characters", {**VALID, "request_id": "r" * 129}),
        _check("attribute value of 257 characters", {**VALID, "attributes": {"tier": "g" * 257}}),
        _check("a 3 MB string", {**VALID, "resource": "x" * 3_000_000}),
        _check("1001 batch items", {"items": [VALID] * 1001}, BATCH),
        _check("nested 100,000 deep", deep),
        _check("nested objects 10,000 deep", b'{"a":' * 10_000 + b"1" + b"}" * 10_000),
        _check("invalid UTF-8", b'{"customer": "\xff\xfe", "operation": "Guarded"}'),
        _check("UTF-16 body", json.dumps(VALID).encode("utf-16")),
        _check("lone surrogate escape", b'{"customer": "\\ud800", "operation": "Guarded"}'),
        _check("escaped NUL", b'{"customer": "a\\u0000b", "operation": "Guarded"}'),
        _check("NaN cost", b'{"customer": "c", "operation": "Guarded", "costs": {"requests": NaN}}'),
        _check("Infinity cost", b'{"customer": "c", "operation": "Guarded", "costs": {"requests": Infinity}}'),
        _check("trailing garbage", _json(VALID) + b"}}"),
        _check("truncated JSON", _json(VALID)[:-1]),
        _check("empty body", b""),
        _check("only whitespace", b"   \n"),
        _check("single quotes", b"{'customer': 'c', 'operation': 'Guarded'}"),
        _check("comment in JSON", b'{"customer": "c", /* x */ "operation": "Guarded"}'),
        Case(
            "form encoded",
            "POST",
            "/api/v1/check",
            b"customer=c&operation=Guarded",
            {"Content-Type": "application/x-www-form-urlencoded", **AUTH},
        ),
        Case(
            "text/plain",
            "POST",
            "/api/v1/check",
            _json(VALID),
            {"Content-Type": "text/plain", **AUTH},
        ),
        Case(
            "multipart",
            "POST",
            "/api/v1/check",
            b"--x\r\n\r\n--x--",
            {"Content-Type": "multipart/form-data; boundary=x", **AUTH},
        ),
        Case(
            "gzip claimed, not gzip",
            "POST",
            "/api/v1/check",
            _json({**VALID, "customer": ""}),
            {**JSON, "Content-Encoding": "gzip"},
        ),
        Case(
            "XML",
            "POST",
            "/api/v1/check",
            b"<check/>",
            {"Content-Type": "application/xml", **AUTH},
        ),
    ]


def headers() -> list[Case]:
    body = _json(VALID)
    cases = [
        Case("no Authorization", "POST", "/api/v1/check", body, {"Content-Type": "application/json"}),
        Case("Basic scheme", "POST", "/api/v1/check", body, {**JSON, "Authorization": "Basic dXNlcjpwdw=="}),
        Case("Bearer and nothing", "POST", "/api/v1/check", body, {**JSON, "Authorization": "Bearer"}),
        Case("Bearer and spaces", "POST", "/api/v1/check", body, {**JSON, "Authorization": "Bearer    "}),
        Case(
            "a key of 5000 characters", "POST", "/api/v1/check", body, {**JSON, "Authorization": "Bearer " + "k" * 5000}
        ),
        Case("a key with a tab", "POST", "/api/v1/check", body, {**JSON, "Authorization": "Bearer {bad}\tx"}),
        Case("Host not served", "POST", "/api/v1/check", body, {**JSON, "Host": "evil.example"}),
        Case("Host with a port not served", "POST", "/api/v1/check", body, {**JSON, "Host": "evil.example:8000"}),
        Case("Host with userinfo", "POST", "/api/v1/check", body, {**JSON, "Host": "x@127.0.0.1"}),
    ]
    for index in range(12):
        cases.append(
            Case(
                f"invalid key {index}",
                "POST",
                "/api/v1/check",
                body,
                {**JSON, "Authorization": "Bearer {bad}" + str(index), "X-Forwarded-For": f"10.9.9.{index}"},
            )
        )
    return cases


def paths_and_methods() -> list[Case]:
    bad = _json({**VALID, "customer": ""})
    cases = [Case(f"{method} on check", method, "/api/v1/check") for method in ("GET", "PUT", "PATCH", "DELETE")]
    cases += [Case(f"{method} on batch", method, BATCH) for method in ("GET", "PUT", "DELETE")]
    for path in (
        "/api/v1//check",
        "/api/v1/check/",
        "/api/v1/./check",
        "/api/v1/%63heck",
        "/api/v1/CHECK",
        "/api//v1/check",
        "/api/v1/check%00",
        "/api/v1/check/../check",
        "/api/v2/check",
        "/api/v1/nothing",
    ):
        cases.append(_check(f"path {path}", bad, path))
    cases += [
        Case("customer path with NUL", "GET", "/api/v1/customers/a%00b/limits"),
        Case("customer path with newline", "GET", "/api/v1/customers/a%0Ab/limits"),
        Case("customer path with DEL", "GET", "/api/v1/customers/a%7Fb/limits"),
        Case("customer limits, unknown query", "GET", "/api/v1/customers/c/limits?admin=1"),
        Case("customer limits, resource with NUL", "GET", "/api/v1/customers/c/limits?resource=a%00"),
        Case("customer limits, bad ip", "GET", "/api/v1/customers/c/limits?ip=999.1.1.1"),
        Case("renew, lease id with NUL", "POST", "/api/v1/leases/a%00b/renew", b"{}"),
        Case("release, lease id with NUL", "DELETE", "/api/v1/leases/a%00b"),
        Case("renew, body a list", "POST", "/api/v1/leases/abc/renew", b"[]"),
        Case("renew, body a string", "POST", "/api/v1/leases/abc/renew", b'"x"'),
        Case("renew, body a number", "POST", "/api/v1/leases/abc/renew", b"5"),
        Case("renew, unknown field", "POST", "/api/v1/leases/abc/renew", b'{"ttl_s": 5, "x": 1}'),
        Case("renew, ttl as text", "POST", "/api/v1/leases/abc/renew", b'{"ttl_s": "5"}'),
        Case("renew, unknown lease", "POST", "/api/v1/leases/not-a-lease/renew", b"{}"),
        Case(
            "usage, customer with NUL",
            "GET",
            f"/api/v1/usage?customer=a%00&{DAY}",
        ),
        Case(
            "usage, empty operation",
            "GET",
            f"/api/v1/usage?operation=&{DAY}",
        ),
        Case(
            "usage, operation with ESC",
            "GET",
            f"/api/v1/usage?operation=a%1B&{DAY}",
        ),
        Case("usage, no offset", "GET", "/api/v1/usage?from=2026-01-01T00:00:00&to=2026-01-02T00:00:00Z"),
        Case(
            "usage, forged cursor",
            "GET",
            f"/api/v1/usage?cursor=WyJ4Il0&{DAY}",
        ),
        Case(
            "usage, 8 days of minutes",
            "GET",
            "/api/v1/usage?granularity=minute&from=2026-01-01T00:00:00Z&to=2026-01-09T00:00:00Z",
        ),
    ]
    return cases


def reused_request_ids() -> list[Case]:
    """The primer (conftest) spent request id "dup-1" on VALID with cost 1: every variation is another request."""
    base = {**VALID, "request_id": "dup-1"}
    variations = {
        "another operation": {"operation": "Guarded2"},
        "another resource": {"resource": "r-2"},
        "another cost": {"costs": {"requests": 2}},
        "an attribute more": {"attributes": {"tier": "gold"}},
        "as a dry run": {"dry_run": True},
        "with a wait budget": {"max_wait_ms": 100},
    }
    cases = [
        Case(f"reused id, {what}", "POST", "/api/v1/check", _json({**base, **change}))
        for what, change in variations.items()
    ]
    cases.append(
        Case(
            "reused id inside a batch",
            "POST",
            BATCH,
            _json({"items": [{**VALID, "customer": "hostile-2"}, {**base, "resource": "r-9"}]}),
        )
    )
    return cases


def reported_state() -> list[Case]:
    """What a caller reports instead of asking for a decision (issue 23): bounded, or refused before anything moves."""
    allocations = "/api/v1/customers/hostile-1/allocations"
    cases = [
        Case(f"allocations held {held}", "PUT", f"{allocations}/slots", _json({"held": held}))
        for held in (6, 1001, 100_000, 2**53, -1, 1.5, "5", None, True)
    ]
    cases += [
        Case("allocations on a limit that is not one", "PUT", f"{allocations}/guarded-db", _json({"held": 1})),
        Case("allocations of an unknown limit", "PUT", f"{allocations}/nope", _json({"held": 1})),
        Case("allocations, unknown field", "PUT", f"{allocations}/slots", _json({"held": 1, "owner": "hostile-2"})),
        Case("allocations, body a list", "PUT", f"{allocations}/slots", b"[1]"),
    ]
    for ip in ("fe80::99%eth0", "fe80::99%25eth0", "FE80::99%ETH0", "fe80::99%1", "::ffff:10.0.0.1%eth0"):
        cases.append(_check(f"ip with a zone id {ip}", {**VALID, "ip": ip}))
    return cases


def corpus() -> list[Case]:
    return (
        control_characters()
        + empty_and_wrong_types()
        + sizes_and_encodings()
        + headers()
        + paths_and_methods()
        + reused_request_ids()
        + reported_state()
    )
