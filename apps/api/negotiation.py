"""The service API speaks JSON only, so content negotiation is a fixed answer (it cost ~30 µs a request)."""

from collections.abc import Iterable

from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request


class JsonOnlyNegotiation(BaseContentNegotiation):
    def select_parser(self, request: Request, parsers: Iterable[BaseParser]) -> BaseParser | None:
        content_type = request.content_type or ""
        return next((p for p in parsers if content_type.startswith(p.media_type)), None)

    def select_renderer(
        self, request: Request, renderers: Iterable[BaseRenderer], format_suffix: str | None = None
    ) -> tuple[BaseRenderer, str]:
        renderer = next(iter(renderers))
        return renderer, renderer.media_type
