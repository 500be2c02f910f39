"""Moving bytes: one HTTP request, one response, no retries and no interpretation (the client does both).

The default transport is urllib3's thread-safe connection pool. Any object with the same `request` and `close`
methods can stand in (tests wrap the real one to lose a response on purpose).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class HttpResponse:
    """Header names in lower case."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class TransportError(Exception):
    """No response: could not connect, the connection broke, or the timeout ran out."""


class Transport(Protocol):
    def request(
        self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str], timeout_s: float
    ) -> HttpResponse: ...

    def close(self) -> None: ...


class Urllib3Transport:
    """urllib3's PoolManager with its own retries off: the client retries, keeping the request id."""

    def __init__(self, *, pool_size: int = 10) -> None:
        import urllib3  # here, not at the top: a custom transport needs no urllib3 at all

        self._urllib3 = urllib3
        self._pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, block=False, retries=False)

    def request(
        self, method: str, url: str, *, body: bytes | None, headers: Mapping[str, str], timeout_s: float
    ) -> HttpResponse:
        timeout = self._urllib3.Timeout(connect=timeout_s, read=timeout_s)
        try:
            response = self._pool.request(
                method, url, body=body, headers=dict(headers), timeout=timeout, retries=False, redirect=False
            )
        except self._urllib3.exceptions.HTTPError as error:
            raise TransportError(f"{type(error).__name__}: {error}") from error
        headers = {name.lower(): value for name, value in response.headers.items()}
        return HttpResponse(response.status, headers, response.data)

    def close(self) -> None:
        self._pool.clear()
