"""orjson for the API's JSON in and out: several times faster than the standard library on the hot path."""

from typing import Any

import orjson
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpResponse
from django.utils.datastructures import MultiValueDict
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, DataAndFiles
from rest_framework.renderers import BaseRenderer


class OrjsonRenderer(BaseRenderer):
    media_type = "application/json"
    format = "json"
    charset = None

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if data is None:
            return b""
        return orjson.dumps(data)


class OrjsonParser(BaseParser):
    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        # Enforce Django's body size limit ourselves: reading the stream directly bypasses it.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = stream.read(limit + 1) if limit is not None else stream.read()
        body_size_check(len(body))
        # What DRF makes of a bare value too, without the AttributeError it raises and catches to find out.
        return DataAndFiles(json_of_body(body), MultiValueDict())


def body_size_check(length: int) -> None:
    """Django's body size limit (DATA_UPLOAD_MAX_MEMORY_SIZE): RequestDataTooBig, answered 413, past it."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is not None and length > limit:
        raise RequestDataTooBig("The request body is too large.")


def json_of_body(body: bytes) -> Any:
    """A JSON body as Python values; DRF's ParseError (400 malformed_json) when it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise ParseError(f"The body is not valid JSON: {error}") from None


def is_json_media_type(content_type: str) -> bool:
    """Whether a request's Content-Type selects the JSON parser (negotiation.JsonOnlyNegotiation)."""
    return content_type.startswith(OrjsonParser.media_type)


class OrjsonResponse(HttpResponse):
    """A JSON answer rendered at once: what a DRF Response with OrjsonRenderer sends (the same body, status and
    `Content-Type: application/json`), without the template-response machinery DRF renders it through, which
    costs a hot endpoint more than encoding the body. `data` is kept, as on a DRF Response."""

    def __init__(self, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(orjson.dumps(data), content_type=OrjsonRenderer.media_type, status=status, headers=headers)
        self.data = data
