"""door_request: how the decision core reads a request's body (Django's size rule, and the refused body drained)."""

from __future__ import annotations

import io

from apps.enforcement.decisions import core


def read_of(body: bytes) -> tuple[io.BytesIO, object]:
    stream = io.BytesIO(body)
    return stream, stream.read


def test_a_body_within_the_limit_is_read_whole(settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    stream, read = read_of(b'{"customer": "a"}')

    request = core.door_request("/api/v1/check", {"CONTENT_LENGTH": "17"}, read)  # type: ignore[arg-type]

    assert request.body == b'{"customer": "a"}'


def test_a_body_past_the_limit_is_refused_unread_then_drained_so_the_client_gets_its_413(settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    stream, read = read_of(b"x" * 300_000)

    request = core.door_request("/api/v1/check", {"CONTENT_LENGTH": "300000"}, read)  # type: ignore[arg-type]
    assert (request.body, request.content_length, stream.tell()) == (b"", 300_000, 0)  # refused unread, as Django does

    core.refused_body_drain(request, read)  # type: ignore[arg-type]

    assert stream.tell() == 300_000  # drained: the client finishes sending, then reads the answer


def test_draining_stops_at_its_cap(settings, monkeypatch) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    monkeypatch.setattr(core, "DRAIN_MAX_BYTES", 1_000)
    stream, read = read_of(b"x" * 300_000)

    request = core.door_request("/api/v1/check", {"CONTENT_LENGTH": "300000"}, read)  # type: ignore[arg-type]
    core.refused_body_drain(request, read)  # type: ignore[arg-type]

    assert stream.tell() == 1_000
