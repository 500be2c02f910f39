"""The platform's Prometheus metrics, defined once, and the cheap calls the hot path makes.

The check API calls `decision_recorded` (or `decision_counted` per batch item plus one
`check_timed`) and `redis_error_recorded`; each costs a dictionary lookup and a locked add.
What /metrics serves, and gauges computed when it is scraped, are in metrics_exposition.py.

Under gunicorn each worker is a process with its own memory. When PROMETHEUS_MULTIPROC_DIR is
set (before Python starts: prometheus_client picks its storage at import), every process writes
its samples to files in that folder and /metrics sums all of them, whichever worker answers.
The folder must be empty when the server starts (gunicorn's config makes a private one when the variable is
unset), and gunicorn's `child_exit` hook marks recycled workers dead (quota_platform/gunicorn_conf.py). Without
the variable the default in-process registry is served, which is right for one process (tests).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Container

from django.core.exceptions import ImproperlyConfigured
from prometheus_client import Counter, Histogram
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

MULTIPROC_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"
# The same test prometheus_client makes when it picks its storage, so both agree.
MULTIPROCESS = MULTIPROC_DIR_VARIABLE in os.environ
if MULTIPROCESS and not os.path.isdir(os.environ[MULTIPROC_DIR_VARIABLE]):
    # Fail at start rather than on the first check: every sample would be written into this folder.
    raise ImproperlyConfigured(
        f"{MULTIPROC_DIR_VARIABLE}={os.environ[MULTIPROC_DIR_VARIABLE]!r} is not a directory. Create an empty "
        "folder for the metrics files before starting the server, or unset the variable for a single process."
    )

OUTCOMES = frozenset({"OK", "OVER_LIMIT", "COST_EXCEEDS_LIMIT", "DENIED", "BATCH_REJECTED"})
OTHER = "other"
# Backstop for callers that pass raw operation names: past this many distinct names per process,
# new ones are counted as "other". Each name costs one time series per outcome in Prometheus.
MAX_OPERATION_LABELS = 500
# A check takes 0.5-50 ms; the upper buckets catch a stalled Redis or a GC pause.
CHECK_SECONDS_BUCKETS = (0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032, 0.064, 0.128, 0.256, 0.5, 1.0)
REDIS_ERROR_KINDS = ("timeout", "connection", "oom", "readonly", "response", OTHER)

DECISIONS = Counter(
    "quota_decisions",
    "Check decisions by operation and outcome (OK, OVER_LIMIT, COST_EXCEEDS_LIMIT, DENIED).",
    ["operation", "outcome"],
)
SHADOW_DENIALS = Counter(
    "quota_shadow_denials",
    "Checks a shadow-mode limit would have refused (admitted anyway).",
    ["operation"],
)
DEGRADED_DECISIONS = Counter(
    "quota_degraded_decisions",
    "Checks decided without Redis, by each limit's store-failure policy.",
    ["operation"],
)
CHECK_SECONDS = Histogram(
    "quota_check_seconds",
    "Time to decide one request to a check endpoint, in seconds.",
    ["endpoint"],
    buckets=CHECK_SECONDS_BUCKETS,
)
REDIS_ERRORS = Counter("quota_redis_errors", "Failed Redis calls by kind of failure.", ["kind"])
# writer: a constant of our code (usage_flush, decision_ledger, a background recorder's name), so few series.
ROWS_QUARANTINED = Counter(
    "quota_rows_quarantined",
    "Rows a batch writer set aside because the database refused them on their own (e.g. a NUL byte); "
    "the rest of the batch was written. See apps/common/quarantine.py.",
    ["writer"],
)

# A process whose decision ledger stopped writing without a graceful exit (apps/usage/services/writers.py): up to one
# interval of its decisions may be missing from usage. Counted once per writer, by the job that finds it.
USAGE_WRITERS_LOST = Counter(
    "quota_usage_writers_lost",
    "Processes that stopped writing usage without a graceful exit (killed outright): up to one ledger interval "
    "of their decisions may be missing; the minutes are marked possibly incomplete.",
)

# service: the API key's service (a few per deployment); kind: customer or operation.
NEW_NAMES_OVER_BUDGET = Counter(
    "quota_new_names_over_budget",
    "Checks naming a new customer or operation past QUOTA_NEW_NAMES_PER_SERVICE_DAY, counted as (other).",
    ["service", "kind"],
)


class LabelCap:
    """Admits at most `max_values` distinct label values; later newcomers become "other"."""

    def __init__(self, max_values: int) -> None:
        self._max_values = max_values
        self._admitted: set[str] = set()
        self._lock = threading.Lock()

    def admit(self, value: str) -> str:
        if value in self._admitted:
            return value
        with self._lock:
            if len(self._admitted) >= self._max_values:
                return OTHER
            self._admitted.add(value)
        return value


_operation_cap = LabelCap(MAX_OPERATION_LABELS)
# Labelled children by label values: `.labels()` validates and locks on every call, a dict does not.
_decision_children: dict[tuple[str, str], Counter] = {}
_shadow_children: dict[str, Counter] = {}
_degraded_children: dict[str, Counter] = {}
_timing_children: dict[str, Histogram] = {}


def operation_label(name: str, known: Container[str]) -> str:
    """The operation label for a check: the name when `known` holds it, else "other".

    Operation names come from callers, so an unbounded set of them would create one time
    series each. Pass the operations of the config snapshot (e.g. `snapshot.limits_by_operation`):
    a typo or a scan of made-up names is then counted under "other".
    """
    return name if name in known else OTHER


def decision_counted(
    *, operation: str, outcome: str, shadow_denied: int = 0, degraded: int = 0, count: int = 1
) -> None:
    """Count `count` decisions (a batch adds up its items first). `operation` should come from
    `operation_label`; `outcome` is OK, OVER_LIMIT or DENIED.

    `shadow_denied`: how many a shadow limit would have refused; `degraded`: how many were decided without Redis.
    """
    key = (operation, outcome)
    child = _decision_children.get(key)
    if child is None:
        child = _decision_child(operation, outcome)
    child.inc(count)
    if shadow_denied:
        _child(_shadow_children, SHADOW_DENIALS, operation).inc(shadow_denied)
    if degraded:
        _child(_degraded_children, DEGRADED_DECISIONS, operation).inc(degraded)


def check_timed(*, endpoint: str, seconds: float) -> None:
    """Observe how long one request to `endpoint` took. Endpoints are constants of our code ("check", "batch")."""
    child = _timing_children.get(endpoint)
    if child is None:
        child = _timing_children.setdefault(endpoint, CHECK_SECONDS.labels(endpoint=endpoint))
    child.observe(seconds)


def decision_recorded(
    *, operation: str, outcome: str, shadow_denied: bool, degraded: bool, seconds: float, endpoint: str
) -> None:
    """Count one single check's decision and time it. For a batch: `decision_counted` per item, one `check_timed`."""
    decision_counted(operation=operation, outcome=outcome, shadow_denied=shadow_denied, degraded=degraded)
    check_timed(endpoint=endpoint, seconds=seconds)


def redis_error_kind(error: BaseException) -> str:
    """One of REDIS_ERROR_KINDS for a Redis exception (the label of `redis_error_recorded`)."""
    if isinstance(error, RedisTimeoutError):
        return "timeout"
    if isinstance(error, RedisConnectionError):
        return "connection"
    if isinstance(error, OutOfMemoryError):
        return "oom"  # maxmemory reached under noeviction: writes refused
    if isinstance(error, ReadOnlyError):
        return "readonly"  # talking to a replica, e.g. during a failover
    if isinstance(error, ResponseError):
        return "response"
    return OTHER


def redis_error_recorded(kind: str) -> None:
    """Count one failed Redis call. `kind`: one of REDIS_ERROR_KINDS (see `redis_error_kind`), else "other"."""
    REDIS_ERRORS.labels(kind=kind if kind in REDIS_ERROR_KINDS else OTHER).inc()


# Hybrid counting (apps/enforcement/hybrid/counting.py): exchanges that did not land leave a counter deciding on
# older counts.
HYBRID_EXCHANGES = Counter("quota_hybrid_exchanges", "Hybrid counting's exchanges with Redis, by outcome.", ["outcome"])


def hybrid_exchange_counted(*, ok: bool) -> None:
    HYBRID_EXCHANGES.labels(outcome="ok" if ok else "failed").inc()


# The warm-up after Redis came up empty (apps/enforcement/counters/warm_up.py): one run per epoch found cold.
WARM_UPS = Counter(
    "quota_counter_warm_ups",
    "Warm-ups of durable counters after Redis came up empty (or was reset after an outage), by outcome "
    "(done, interrupted: an epoch changed meanwhile and the next run starts over; failed).",
    ["outcome"],
)
WARM_UP_SECONDS = Histogram(
    "quota_counter_warm_up_seconds",
    "How long a warm-up took, from finding Redis cold to its warm mark.",
    buckets=(0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300),
)
WARM_UP_COUNTERS = Counter("quota_counter_warm_up_counters", "Durable counters written back by warm-ups.")


def warm_up_recorded(*, outcome: str, seconds: float, counters: int) -> None:
    """Count one warm-up run that found a cold epoch (runs that found Redis warm are not counted)."""
    WARM_UPS.labels(outcome=outcome).inc()
    WARM_UP_SECONDS.observe(seconds)
    WARM_UP_COUNTERS.inc(counters)


def rows_quarantined_count(*, writer: str, count: int = 1) -> None:
    """Count `count` rows `writer` quarantined (apps/common/quarantine.py); off the hot path."""
    ROWS_QUARANTINED.labels(writer=writer).inc(count)


def new_name_over_budget(*, service: str, kind: str) -> None:
    NEW_NAMES_OVER_BUDGET.labels(service=service, kind=kind).inc()


def _decision_child(operation: str, outcome: str) -> Counter:
    if outcome not in OUTCOMES:
        raise ValueError(f"Unknown decision outcome {outcome!r}; expected one of {sorted(OUTCOMES)}")
    label = _operation_cap.admit(operation)
    child = DECISIONS.labels(operation=label, outcome=outcome)
    if label == operation:
        # Only admitted names are remembered, so junk names cannot grow this dict.
        _decision_children[(operation, outcome)] = child
    return child


def _child(children: dict[str, Counter], counter: Counter, operation: str) -> Counter:
    child = children.get(operation)
    if child is None:
        label = _operation_cap.admit(operation)
        child = counter.labels(operation=label)
        if label == operation:
            children[operation] = child
    return child
