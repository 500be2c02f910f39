"""The base of enforcement's endpoints: the service API's view (apps/api/views.py), and every process that answers
them counts in the heartbeats the `local` failure policy divides limits by (fallback/heartbeat.py)."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request

from apps.api.views import ServiceApi
from apps.enforcement.fallback import heartbeat


class EnforcementApi(ServiceApi):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        heartbeat.heartbeat_start()
        super().initial(request, *args, **kwargs)
