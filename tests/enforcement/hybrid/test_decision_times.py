"""The real-server tests' reading of when a server decided (load.Answer.decided_ms), against the reference: the
server's clock in whole ms (SystemClock floors) at a moment between the client's send and its answer. Pure, no
servers: it overrides the folder's autouse fixture that would start them.

The case that once looked like late admissions (docs/hybrid.md, "On real servers"): a 1 ms round trip whose
decision falls in the millisecond the request was sent in was put one whole window late."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.enforcement.hybrid.load import Answer

WINDOW_MS = 5000


@pytest.fixture(autouse=True)
def _counters_redis_running() -> None:
    """No servers here (the folder's fixture of that name starts them)."""


def answered(sent_ms: float, done_ms: float, decided_ms: int, window_ms: int = WINDOW_MS) -> Answer:
    """An admission as a server deciding at `decided_ms` (its clock, whole ms) reports it: reset_ms to its
    window's end."""
    end = decided_ms - decided_ms % window_ms + window_ms
    body = {"allowed": True, "limits": [{"reset_ms": end - decided_ms}]}
    return Answer("http://server", sent_ms / 1000, done_ms / 1000, 200, body)


def test_a_decision_in_the_millisecond_the_request_was_sent_in_stays_in_its_window() -> None:
    # Seen on the real servers: sent 1795695026151.08, answered 5.3 ms later, decided at ...26151 (reset 3849).
    sent = 1795695026151.0803
    answer = answered(sent, sent + 5.283, 1795695026151)
    assert answer.limit()["reset_ms"] == 3849
    assert answer.decided_ms(WINDOW_MS) == 1795695026151  # one window late (...31151) before the fix


@given(
    window_ms=st.sampled_from([1000, 2000, 5000, 60_000]),
    decided=st.integers(min_value=1_700_000_000_000, max_value=1_800_000_000_000),
    before=st.floats(min_value=0, max_value=400, allow_nan=False),  # the decision's lead over the send (ms)
    after=st.floats(min_value=0, max_value=400, allow_nan=False),
    fraction=st.floats(min_value=0, max_value=0.999, allow_nan=False),
)
def test_the_decision_time_is_the_servers_clock_whatever_the_latency(
    window_ms: int, decided: int, before: float, after: float, fraction: float
) -> None:
    # The server read its clock at decided + fraction (floored to decided), some time after the send and before
    # the answer; the send may fall in the same millisecond (before < fraction).
    moment = decided + fraction
    sent, done = moment - before, moment + after
    if math.floor(sent) > decided or done - sent >= window_ms:
        return  # not a possible answer: the clock runs forward, and the reading assumes latency < one window
    assert answered(sent, done, decided, window_ms).decided_ms(window_ms) == decided
