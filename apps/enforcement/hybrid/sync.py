"""POST /api/v1/sync: the hybrid-counting exchange of the SDK's local limiters (issue 16, docs/hybrid.md).

A local limiter decides in its own process with quota_client.hybrid, the algorithm the API workers run for limits
with `sync_ms`, and exchanges through this endpoint. For each hybrid limit in force for the customer and operation
(resolved exactly like a check), one exchange on the very hash the API workers' counters use (hybrid_key of the
counter key), so SDK limiters and API workers share one count. A limit the request sends no counter for is
exchanged with count 0, so a first call learns the configuration and the others' counts.

Nothing is written before the whole request is valid: the fields first, then each counter's windows against the
limit's windows near the server's time (its current window, the one before or the one after: a client a little
ahead or behind at a boundary). Counters of limits no longer in force, or no longer hybrid, are ignored (the
answer lists what is in force). Instances are namespaced by the API key's prefix in the hash, so a client cannot
overwrite another key's instances, nor an API worker's.

The trust boundary (docs/hybrid.md, "What a report can change"): a count is at most the limit's quantity for the
customer, what one instance can admit in a window (above it: 400 naming the count; a shadow limit, which never
refuses, has it taken as the quantity); the store keeps a bounded number of instances per counter and saturates
its sums (hybrid_sync.lua); a customer-bound key is refused (403 `shared_limit`) when any hybrid limit in force is
shared by several customers, since even a count of 0 writes its instance into the shared counter and a limiter
that cannot report there would decide unseen; and what the counters grow by is counted in usage (sync_usage.py).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from quota_client.hybrid import FIXED, SLIDING, Exchanged, Windows
from redis.exceptions import RedisError

from apps.api.fields import Errors, ParseError
from apps.apikeys.selectors import ApiPrincipal
from apps.enforcement.decisions.services import check_resolve
from apps.enforcement.decisions.specs import engine_args, limit_spec_of
from apps.enforcement.fallback.decide import StoreUnavailable
from apps.enforcement.hybrid.counters import RETENTION_WINDOWS, counter_names, exchange_log, recorded_of, windows_of
from apps.enforcement.hybrid.stores import CLOCK as hybrid_clock
from apps.enforcement.hybrid.stores import peers_for
from apps.enforcement.hybrid.sync_request import SyncCounter, SyncRequest
from apps.enforcement.hybrid.sync_usage import usage_report
from apps.engine import CheckItem
from apps.engine.hybrid_peers import RedisPeers
from apps.engine.hybrid_usage import ReportedCounter
from apps.engine.registry import ALGORITHMS
from apps.limits.snapshot import LimitConfig, Snapshot

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SyncedLimit:
    """A hybrid limit in force and the exchange's answer on it."""

    limit: LimitConfig
    window: tuple[int, int]
    next_window_end: int
    answer: Exchanged


@dataclass(frozen=True, slots=True)
class SyncOutcome:
    now_ms: int
    access_rule: str | None  # "allow" / "deny": an access rule decides, no limit applies
    warnings: tuple[str, ...]
    limits: tuple[SyncedLimit, ...]


def sync_exchange(*, principal: ApiPrincipal, request: SyncRequest, snapshot: Snapshot) -> SyncOutcome:
    """Authorize like a check, resolve like a check, check the counters' windows, then one exchange per hybrid
    limit in force (see the module docstring)."""
    item = request.item
    principal.authorize(item.customer, item.operation)
    now = hybrid_clock.now_ms()
    # A dry run resolves without writing anything (no name budget spent, no customer recorded): the key's right to
    # report and the counters are checked against it before anything is written.
    looked = check_resolve(principal, dataclasses.replace(item, dry_run=True), snapshot)
    counters = request.counters
    if looked.resolution.action is None:
        in_force = _hybrid_limits(looked.resolution.limits)
        for limit in in_force:
            principal.authorize_shared_report(limit.name, limit.shared_across_customers)
        counters = _checked(request.counters, in_force, looked.item.timezone, now)
    resolved = check_resolve(principal, item, snapshot)
    if resolved.resolution.action is not None:
        return SyncOutcome(now, str(resolved.resolution.action), resolved.warnings, ())
    in_force = _hybrid_limits(resolved.resolution.limits)
    by_name = {counter.limit: counter for counter in counters}
    instance = f"sdk:{principal.prefix}:{request.instance}"
    reported = [_reported(limit, by_name[limit.name], resolved.item) for limit in in_force if limit.name in by_name]
    usage_report(resolved.item, instance, request.usage, reported, now)
    limits = tuple(_exchange(limit, resolved.item, instance, by_name.get(limit.name), now) for limit in in_force)
    return SyncOutcome(now, None, resolved.warnings, limits)


def _reported(limit: LimitConfig, counter: SyncCounter, item: CheckItem) -> tuple[ReportedCounter, str | None]:
    """A counter as the usage balance reads it, with its name in the records (durable limits, else None)."""
    counts = (counter.window_start, counter.count, counter.prev_window_start, counter.count_prev)
    return ReportedCounter(limit.name, limit.unit, *counts), counter_names(limit_spec_of(limit), item)[1]


def _hybrid_limits(limits: Sequence[LimitConfig]) -> tuple[LimitConfig, ...]:
    return engine_args(limits).hybrid


def variant_of(limit: LimitConfig) -> str:
    return SLIDING if ALGORITHMS[limit.algorithm].hybrid == SLIDING else FIXED


def _checked(
    counters: Sequence[SyncCounter], limits: Sequence[LimitConfig], timezone: str, now: int
) -> tuple[SyncCounter, ...]:
    """The counters of limits in force, checked (windows, counts, one per limit), a shadow limit's counts taken as
    at most its quantity; ParseError naming every problem."""
    by_name = {limit.name: limit for limit in limits}
    errors: Errors = {}
    seen: set[str] = set()
    checked = []
    for index, counter in enumerate(counters):
        limit = by_name.get(counter.limit)
        if limit is None:
            continue  # no longer in force: ignored
        problem = _window_problem(counter, windows_of(limit, timezone), now) or _count_problem(counter, limit)
        if counter.limit in seen:
            problem = {"limit": ["Another counter of this request names the same limit."]}
        seen.add(counter.limit)
        if problem is not None:
            errors[str(index)] = problem
        top = limit.quantity  # a shadow limit's count above it is taken as it (_count_problem refuses the others)
        checked.append(
            dataclasses.replace(counter, count=min(counter.count, top), count_prev=min(counter.count_prev, top))
        )
    if errors:
        raise ParseError({"counters": errors})
    return tuple(checked)


def _count_problem(counter: SyncCounter, limit: LimitConfig) -> Errors | None:
    """A count above what one instance can admit in a window of `limit` (its quantity for this customer) is
    refused; a shadow limit never refuses, so a client may count past it there: taken as the quantity."""
    if limit.mode == "shadow":
        return None
    problems: Errors = {}
    for name in ("count", "count_prev"):
        if getattr(counter, name) > limit.quantity:
            problems[name] = [
                f"At most {limit.quantity}: what one instance can admit in a window of limit “{limit.name}” for "
                "this customer."
            ]
    return problems or None


def _window_problem(counter: SyncCounter, windows: Windows, now: int) -> Errors | None:
    """A counter's windows must be the limit's current window, the one before or the one after (a clock a
    little off at a boundary), and the previous one at most two window lengths before (it sets the hash's TTL)."""
    start, end = windows(now)
    near = (windows(start - 1)[0], start, end)
    if counter.window_start not in near:
        return {
            "window_start": [
                f"Not a window of limit “{counter.limit}” near the server's time ({now} ms): the window now is "
                f"[{start}, {end}). Align the clock with the answer's now_ms."
            ]
        }
    # Checked only for limits in force (a rule between two fields, which the schema cannot state).
    if not 0 < counter.window_start - counter.prev_window_start <= 2 * (end - start):
        return {"prev_window_start": ["Must be the start of the window before window_start."]}
    return None


def _exchange(limit: LimitConfig, item: CheckItem, instance: str, counter: SyncCounter | None, now: int) -> SyncedLimit:
    windows = windows_of(limit, item.timezone)
    start, end = windows(now)
    spec = limit_spec_of(limit)
    key, record = counter_names(spec, item)
    if counter is None:  # nothing admitted yet: count 0 in the current window, to learn the others'
        counter = SyncCounter(limit.name, start, windows(start - 1)[0], 0, 0)
    peers = peers_for(RETENTION_WINDOWS * (end - start))
    counts = (counter.window_start, counter.prev_window_start, counter.count, counter.count_prev)
    cap, recorded = limit.quantity, recorded_of(record)
    try:
        if isinstance(peers, RedisPeers):  # an audited limit's exchange is logged (a `sync` entry, same call)
            log = exchange_log(limit, spec, item)
            answer = peers.exchange(key, instance, *counts, log=log, cap=cap, recorded=recorded)
        else:
            answer = peers.exchange(key, instance, *counts, cap=cap, recorded=recorded)
    except RedisError:
        # No failure policy applies here: the caller's local limiter holds what it knows (quota_client.hybrid).
        logger.exception("Hybrid exchange for %s failed", limit.name)
        raise StoreUnavailable("The counter store is unreachable; try the exchange again later.") from None
    return SyncedLimit(limit, (start, end), windows(end)[1], answer)
