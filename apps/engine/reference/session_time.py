"""Session time: at most `quantity` seconds of lease time per epoch-aligned window of `period_ms`.

A session is a lease acquired with this limit among its limits. It counts from its acquisition to its
release, or to its expiry when nobody releases it (a crashed holder), and only the part inside the
window counts: a session open across a window's start counts from that start. Open sessions count
their elapsed time live, so the time used only grows within a window: once it reaches the quantity,
acquiring and renewing are refused until the window ends (an exact retry_after). The last session
admitted may run past the quantity until its expiry: a lease is never cut short, it is refused renewal.

State: (window_start_ms, closed_ms, sessions), sessions = ((member, start_ms, expires_ms), ...) in order
of acquisition. closed_ms is the window's time of sessions that ended (released, or expired and folded in
when next seen). Like the fixed window, a stored window newer than now's (a clock stepping back) is kept.

Not durable: the sessions are leases, which live in the store only (a lost store forgets them too).
"""

from __future__ import annotations

from apps.engine.reference.base import Params, ceil_div

Session = tuple[str, int, int]
State = tuple[int, int, tuple[Session, ...]]
SECOND_MS = 1000


def settle(state: State | None, period_ms: int, now: int) -> State:
    """The state seen at `now`: in now's window, the sessions expired by now folded into closed_ms."""
    start = now - now % period_ms
    if state is None:
        return (start, 0, ())
    window, closed, sessions = state
    if window < start:
        window, closed = start, 0
    kept = []
    for session in sessions:
        if session[2] > now:
            kept.append(session)
        else:
            closed += max(0, session[2] - max(session[1], window))
    return (window, closed, tuple(kept))


def used_ms(settled: State, now: int) -> int:
    """Milliseconds of session time in the window up to `now` (of a settled state)."""
    window, closed, sessions = settled
    return closed + sum(max(0, now - max(start, window)) for _, start, _ in sessions)


def evaluate(state: State | None, params: Params, now: int, cost: int) -> tuple[bool, int | None]:
    """Admit while the window has time left (a check only looks; `cost` is not time); else at its end."""
    if params.quantity < 1:
        return False, None
    settled = settle(state, params.period_ms, now)
    if used_ms(settled, now) < params.quantity * SECOND_MS:
        return True, 0
    return False, settled[0] + params.period_ms - now


def consume(state: State | None, params: Params, now: int, cost: int, lease: tuple[str, int] | None = None) -> State:
    """Open the session of `lease` = (member, ttl_ms); without a lease a check only looks."""
    window, closed, sessions = settle(state, params.period_ms, now)
    if lease is None:
        return (window, closed, sessions)
    member, ttl_ms = lease
    return (window, closed, (*sessions, (member, now, now + ttl_ms)))


def report(state: State | None, params: Params, now: int) -> tuple[int, int]:
    """Whole seconds left (rounded up: a part of a second left still admits), and ms until the window ends."""
    settled = settle(state, params.period_ms, now)
    left = max(0, params.quantity * SECOND_MS - used_ms(settled, now))
    return ceil_div(left, SECOND_MS), settled[0] + params.period_ms - now


def expires_at(state: State, params: Params, now: int) -> int:
    """The end of the window, or of the window in which the last session expires if later."""
    period = params.period_ms
    return max([state[0] + period, *(ceil_div(expires, period) * period for _, _, expires in state[2])])


def renew(state: State | None, params: Params, now: int, member: str, expires: int) -> State:
    """Move the session of `member` to end at `expires` (a session this state lost is opened now)."""
    window, closed, sessions = settle(state, params.period_ms, now)
    found = [session for session in sessions if session[0] == member]
    if not found:
        return (window, closed, (*sessions, (member, now, expires)))
    return (window, closed, tuple((m, s, expires if m == member else e) for m, s, e in sessions))


def release(state: State | None, params: Params, now: int, member: str) -> State:
    """Close the session of `member` now: its time in the window moves to closed_ms (unknown: no-op)."""
    window, closed, sessions = settle(state, params.period_ms, now)
    for name, start, _ in sessions:
        if name == member:
            closed += max(0, now - max(start, window))
    return (window, closed, tuple(session for session in sessions if session[0] != member))
