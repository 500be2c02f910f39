"""The base of the service API's endpoints: API keys only, no session or user lookup, JSON only.

Checks are the hot path, so what DRF would work out anew on every request from the class alone (the
authenticator, parser and negotiator instances, the Allow header, content negotiation over one renderer)
is worked out once. A subclass that picks other classes gets DRF's own behaviour for them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from rest_framework.authentication import BaseAuthentication
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import BaseParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.views import APIView

from apps.api.authentication import ApiKeyAuthentication
from apps.api.negotiation import JsonOnlyNegotiation
from apps.api.renderers import OrjsonParser, OrjsonRenderer

# Stateless, so one of each serves every request (DRF builds new ones per request).
AUTHENTICATORS = (ApiKeyAuthentication(),)
PERMISSIONS = (IsAuthenticated(),)
PARSERS = (OrjsonParser(),)
RENDERER = OrjsonRenderer()
NEGOTIATOR = JsonOnlyNegotiation()


class ServiceApi(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [IsAuthenticated]
    renderer_classes = [OrjsonRenderer]
    parser_classes = [OrjsonParser]
    content_negotiation_class: type[BaseContentNegotiation] = JsonOnlyNegotiation

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        if not self._as_base("content_negotiation_class", "renderer_classes", "throttle_classes", "versioning_class"):
            super().initial(request, *args, **kwargs)
            return
        # DRF's initial() less what these endpoints never use (format suffixes, versioning, throttles), with the
        # negotiation answered in advance: one renderer, JSON, whatever the client accepts.
        self.format_kwarg = None
        request.accepted_renderer, request.accepted_media_type = RENDERER, RENDERER.media_type
        self.perform_authentication(request)
        self.check_permissions(request)

    def get_authenticators(self) -> list[BaseAuthentication]:
        return list(AUTHENTICATORS) if self._as_base("authentication_classes") else super().get_authenticators()

    def get_permissions(self) -> Sequence[Any]:  # DRF's stubs: a protocol BasePermission meets
        return list(PERMISSIONS) if self._as_base("permission_classes") else super().get_permissions()

    def get_parsers(self) -> list[BaseParser]:
        return list(PARSERS) if self._as_base("parser_classes") else super().get_parsers()

    def get_content_negotiator(self) -> BaseContentNegotiation:
        return NEGOTIATOR if self._as_base("content_negotiation_class") else super().get_content_negotiator()

    @property
    def default_response_headers(self) -> dict[str, str]:
        # DRF works the Allow header out from the handler methods on every request; they are the class's.
        allow = _ALLOW.get(type(self))
        if allow is None:
            allow = _ALLOW[type(self)] = ", ".join(self.allowed_methods)
        headers = {"Allow": allow}  # a new dict each time: DRF pops from it
        if len(self.renderer_classes) > 1:
            headers["Vary"] = "Accept"
        return headers

    @classmethod
    @functools.cache  # per class and names: asked on every request, answered by the class alone
    def _as_base(cls, *names: str) -> bool:
        """Whether this class keeps ServiceApi's choice for every attribute named."""
        return all(getattr(cls, name) is getattr(ServiceApi, name) for name in names)


_ALLOW: dict[type[ServiceApi], str] = {}
