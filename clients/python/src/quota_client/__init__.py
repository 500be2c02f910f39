"""Quota Platform client SDK (no Django): checks (shaped with max_wait_ms), batches, put_all, leases, a decorator,
feature toggles, back-off policies (the seed's AutoSleeper by default), a producer-side shaper for put_all
(local buckets per key and unit) and local limiters (hybrid counting in-process).

from quota_client import QuotaClient

client = QuotaClient("https://quota.internal", api_key)
decision = client.check("acct-1", "ListStreams")
"""

from quota_client.aio import AsyncLease, AsyncQuotaClient
from quota_client.backoff import Backoff, BackoffMetrics, ExponentialBackoff, LinearBackoff
from quota_client.base import __version__
from quota_client.cache import DenialCache
from quota_client.client import QuotaClient
from quota_client.errors import (
    AccessDenied,
    InvalidRequest,
    LeaseLost,
    PlatformUnavailable,
    QuotaError,
    QuotaExceeded,
)
from quota_client.lease import Lease
from quota_client.local import AsyncLocalLimiter, LocalLimiter
from quota_client.producer import ProducerShaper
from quota_client.responsive import ResponsiveBackoff
from quota_client.transport import HttpResponse, Transport, TransportError, Urllib3Transport
from quota_client.types import (
    COST_EXCEEDS_LIMIT,
    DENIED,
    OK,
    OVER_LIMIT,
    BatchResult,
    CheckItem,
    Decision,
    LimitStatus,
    PutAllResult,
)

__all__ = [
    "COST_EXCEEDS_LIMIT",
    "DENIED",
    "OK",
    "OVER_LIMIT",
    "AccessDenied",
    "AsyncLease",
    "AsyncLocalLimiter",
    "AsyncQuotaClient",
    "Backoff",
    "BackoffMetrics",
    "BatchResult",
    "CheckItem",
    "Decision",
    "DenialCache",
    "ExponentialBackoff",
    "HttpResponse",
    "InvalidRequest",
    "Lease",
    "LeaseLost",
    "LimitStatus",
    "LinearBackoff",
    "LocalLimiter",
    "PlatformUnavailable",
    "ProducerShaper",
    "PutAllResult",
    "QuotaClient",
    "QuotaError",
    "QuotaExceeded",
    "ResponsiveBackoff",
    "Transport",
    "TransportError",
    "Urllib3Transport",
    "__version__",
]
