"""The service API speaks JSON only, so content negotiation is a fixed answer (it cost ~30 µs a request)."""

from typing import Any

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class JsonOnlyNegotiation(BaseContentNegotiation):
    def select_parser(self, request: Request, parsers: list[BaseParser]) -> BaseParser | None:
        content_type = request.content_type or ""
        return next((p for p in parsers if content_type.startswith(p.media_type)), None)

    def select_renderer(self, request: Request, renderers: list[BaseRenderer], format_suffix: Any = None) -> Any:
        return renderers[0], renderers[0].media_type
