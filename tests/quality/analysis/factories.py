"""Hand-built log entries: a decision on a limit, and the events of one lease."""

from __future__ import annotations

from apps.quality.analysis import Event

# 2024-01-15T00:00:00Z: a multiple of every period used here.
T0 = 1_705_276_800_000


def decision(
    at: int,
    algorithm: str,
    quantity: int,
    period_ms: int = 0,
    *,
    cost: int = 1,
    allowed: bool = True,
    customer: str = "acme",
    limit: str | None = None,
    operation: str = "open",
    window_ms: int = 0,
    burst: int = 0,
    shadow: bool = False,
    mode: str = "exact",
) -> Event:
    name = limit or algorithm
    return Event(
        at_ms=at,
        kind="allow" if allowed else "deny",
        customer=customer,
        operation=operation,
        limit=name,
        algorithm=algorithm,
        key=f"q:{{c={customer}}}:{name}",
        cost=cost,
        quantity=quantity,
        period_ms=period_ms,
        burst=burst,
        window_ms=window_ms,
        shadow=shadow,
        mode=mode,
    )


def lease_event(
    at: int,
    kind: str,
    member: str,
    *,
    expires: int = 0,
    customer: str = "acme",
    algorithm: str = "concurrency",
    quantity: int = 10,
    period_ms: int = 0,
    limit: str | None = None,
    operation: str = "open",
) -> Event:
    name = limit or algorithm
    if kind != "acquire":  # the engine logs renewals and releases without the limit's figures
        quantity = period_ms = 0
    return Event(
        at_ms=at,
        kind=kind,
        customer=customer,
        operation=operation,
        limit=name,
        algorithm=algorithm,
        key=f"q:{{c={customer}}}:{name}",
        quantity=quantity,
        period_ms=period_ms,
        lease=member,
        expires_ms=expires if kind in ("acquire", "renew") else 0,
    )


def session(
    start: int, end: int, member: str, *, released: bool = True, ttl: int | None = None, **fields: object
) -> list[Event]:
    """A lease from start to end: released at end, or left to expire at end (ttl: its expiry if released)."""
    expires = end if not released else start + (ttl if ttl is not None else 10 * (end - start) + 1)
    events = [lease_event(start, "acquire", member, expires=expires, **fields)]  # type: ignore[arg-type]
    if released:
        events.append(lease_event(end, "release", member, **fields))  # type: ignore[arg-type]
    return events


def ordered(*groups: list[Event]) -> list[Event]:
    """One stream, in time order (a stable sort keeps each group's order within a millisecond)."""
    return sorted((event for group in groups for event in group), key=lambda event: event.at_ms)


def sync(
    at: int,
    instance: str,
    window: int,
    count: int,
    prev_count: int = 0,
    *,
    quantity: int = 10,
    period_ms: int = 10_000,
    sync_ms: int = 1_000,
    customer: str = "acme",
    limit: str = "hybrid",
    shadow: bool = False,
) -> Event:
    """An exchange of an audited hybrid fixed window limit: `instance` reports `count` in the window starting at
    `window` and `prev_count` in the one before."""
    return Event(
        at_ms=at,
        kind="sync",
        customer=customer,
        operation="open",
        limit=limit,
        algorithm="fixed_window",
        key=f"q:{{c={customer}}}:{limit}",
        cost=count,
        quantity=quantity,
        period_ms=period_ms,
        window_ms=window,
        shadow=shadow,
        mode="hybrid",
        instance=instance,
        prev_window_ms=window - period_ms,
        prev_count=prev_count,
        sync_ms=sync_ms,
    )
