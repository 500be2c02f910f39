import ipaddress
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apps.common.outbound import address_refusal
from apps.toggles.sources import SourceRefused, SourceUnavailable, source_fetch, source_label
from tests.support.stalling_receiver import StallingReceiver
from tests.toggles.factories import LocalHttpSource


@pytest.fixture
def local_source() -> Iterator[LocalHttpSource]:
    with LocalHttpSource() as source:
        yield source


def fetch(url: str, *, allow_private: bool = False, max_bytes: int = 1024 * 1024, timeout_s: float = 2) -> bytes:
    return source_fetch(url, timeout_s=timeout_s, allow_private=allow_private, max_bytes=max_bytes)


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("fd12:3456::1", "private"),
        ("0.0.0.0", "unspecified"),  # noqa: S104 - an address under test, nothing binds to it
        ("::", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("ff02::1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not publicly routable"),
        ("::ffff:127.0.0.1", "loopback (127.0.0.1 inside ::ffff:7f00:1)"),
        ("64:ff9b::a9fe:a9fe", "link-local (169.254.169.254 inside 64:ff9b::a9fe:a9fe)"),
        ("2002:a00:1::1", "private (10.0.0.1 inside 2002:a00:1::1)"),
    ],
)
def test_non_public_addresses_are_refused_with_the_reason(address: str, reason: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("host", "reason"),
    [("127.0.0.1", "loopback"), ("localhost", "loopback"), ("[::1]", "loopback"), ("10.0.0.1", "private")],
)
def test_an_https_url_on_a_private_host_is_refused_before_any_connection(
    local_source: LocalHttpSource, host: str, reason: str
) -> None:
    with pytest.raises(SourceRefused, match=f"a {reason} address; refused"):
        fetch(f"https://{host}:{local_source.port}/toggles.json")

    assert local_source.connections == 0


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("https://169.254.169.254/latest/meta-data/", "169.254.169.254, a link-local address"),
        ("https://[fe80::1]/toggles.json", "fe80::1, a link-local address"),
        ("https://[fd00::1]:8443/toggles.json", "fd00::1, a private address"),
    ],
)
def test_cloud_metadata_and_internal_addresses_are_refused(url: str, reason: str) -> None:
    with pytest.raises(SourceRefused, match=reason):
        fetch(url, timeout_s=0.5)


def test_a_host_is_refused_when_any_of_its_addresses_is_private(
    local_source: LocalHttpSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    answers = [
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("93.184.216.34", local_source.port)),
        (socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", local_source.port)),
    ]
    monkeypatch.setattr(socket, "getaddrinfo", lambda *args, **kwargs: answers)

    with pytest.raises(SourceRefused, match=r"toggles\.example\.com resolves to 127\.0\.0\.1, a loopback address"):
        fetch(f"https://toggles.example.com:{local_source.port}/toggles.json")

    assert local_source.connections == 0


def test_plain_http_is_refused_unless_private_sources_are_allowed(local_source: LocalHttpSource) -> None:
    with pytest.raises(SourceRefused, match=r"plain http:// is refused; use https://"):
        fetch(local_source.url)

    assert local_source.connections == 0


def test_with_private_sources_allowed_a_local_server_is_fetched_once(local_source: LocalHttpSource) -> None:
    local_source.serve({"toggles": []})

    body = fetch(local_source.url, allow_private=True)

    assert body == b'{"toggles": []}'
    assert (local_source.connections, local_source.requests) == (1, ["/toggles.json"])


def test_the_query_string_reaches_the_server(local_source: LocalHttpSource) -> None:
    fetch(f"{local_source.url}?token=abc", allow_private=True)

    assert local_source.requests == ["/toggles.json?token=abc"]


def test_https_to_a_server_that_does_not_speak_tls_fails_as_unavailable(local_source: LocalHttpSource) -> None:
    with pytest.raises(SourceUnavailable, match=r"TLS with https://127\.0\.0\.1:\d+/toggles\.json failed"):
        fetch(f"https://127.0.0.1:{local_source.port}/toggles.json", allow_private=True)

    assert local_source.connections == 1


def test_a_redirect_is_not_followed(local_source: LocalHttpSource) -> None:
    local_source.serve(status=302, body=b"", Location="http://169.254.169.254/latest/meta-data/")

    with pytest.raises(SourceRefused, match=r"HTTP 302 \(redirect to http://169\.254\.169\.254/latest/meta-data/\)"):
        fetch(local_source.url, allow_private=True)

    assert local_source.requests == ["/toggles.json"]


def test_an_http_error_status_makes_the_source_unavailable(local_source: LocalHttpSource) -> None:
    local_source.serve(status=503, body=b"down")

    with pytest.raises(SourceUnavailable, match=r"answered HTTP 503 Service Unavailable"):
        fetch(local_source.url, allow_private=True)


def test_a_body_over_the_cap_is_refused_by_its_declared_length(local_source: LocalHttpSource) -> None:
    local_source.serve(body=b"x" * 101)

    with pytest.raises(SourceUnavailable, match="sent more than the 100 bytes a toggles document may have"):
        fetch(local_source.url, allow_private=True, max_bytes=100)


def test_a_body_over_the_cap_is_refused_while_reading_when_no_length_is_declared(
    local_source: LocalHttpSource,
) -> None:
    local_source.serve(body=b"x" * 300_000)
    local_source.send_length = False

    with pytest.raises(SourceUnavailable, match="sent more than the 1000 bytes"):
        fetch(local_source.url, allow_private=True, max_bytes=1000)


def test_a_body_exactly_at_the_cap_is_accepted(local_source: LocalHttpSource) -> None:
    local_source.serve(body=b"x" * 100)
    local_source.send_length = False

    assert len(fetch(local_source.url, allow_private=True, max_bytes=100)) == 100


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # the kernel completes the handshake; nobody ever reads or answers
        port = listener.getsockname()[1]

        with pytest.raises(SourceUnavailable, match=r"did not answer within 0\.2 s"):
            fetch(f"http://127.0.0.1:{port}/toggles.json", allow_private=True, timeout_s=0.2)


def test_a_closed_port_is_unavailable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    with pytest.raises(SourceUnavailable, match="cannot reach .*: connection refused"):
        fetch(f"http://127.0.0.1:{port}/toggles.json", allow_private=True)


def test_a_host_that_does_not_resolve_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: object, **kwargs: object) -> None:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", fail)

    with pytest.raises(SourceUnavailable, match="cannot resolve toggles.example.com: Name or service not known"):
        fetch("https://toggles.example.com/toggles.json")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("ftp://toggles.example.com/toggles.json", "only https:// URLs"),
        ("https:///toggles.json", "the URL names no host"),
        ("https://toggles.example.com:99999/toggles.json", "the port is not a number"),
    ],
)
def test_urls_that_cannot_be_a_source_are_refused(url: str, message: str) -> None:
    with pytest.raises(SourceRefused, match=message):
        fetch(url)


def test_a_file_source_is_read(tmp_path: Path) -> None:
    path = tmp_path / "toggles.json"
    path.write_bytes(b'{"toggles": []}')

    assert fetch(str(path)) == b'{"toggles": []}'


def test_a_missing_file_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(SourceUnavailable, match=r"cannot read .*missing\.json: No such file or directory"):
        fetch(str(tmp_path / "missing.json"))


def test_a_file_over_the_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "toggles.json"
    path.write_bytes(b" " * (1024 * 1024 + 1))

    with pytest.raises(SourceUnavailable, match="is larger than the 1 MiB a toggles document may have"):
        fetch(str(path))


def test_the_label_of_a_url_keeps_no_credentials_or_query() -> None:
    label = source_label("https://user:secret@toggles.example.com:8443/v1/toggles.json?token=abc")

    assert label == "https://toggles.example.com:8443/v1/toggles.json"


def test_the_label_of_a_file_is_its_path() -> None:
    assert source_label("/etc/quota/toggles.json") == "/etc/quota/toggles.json"


@pytest.mark.slow
@pytest.mark.parametrize(
    "stall", [{"trickle_every_s": 0.1}, {"trickle_every_s": 0.1, "body": True}], ids=["headers", "body"]
)
def test_a_source_that_trickles_is_cut_at_its_deadline(stall: dict) -> None:
    with StallingReceiver(hold_s=8, **stall) as source:
        started = time.monotonic()
        with pytest.raises(SourceUnavailable, match=r"did not answer within 0\.5 s"):
            fetch(source.url, allow_private=True, timeout_s=0.5)

    assert time.monotonic() - started < 1.5  # a socket timeout alone waited on every byte, for the full 8 s
