"""The seed's scenario: aggressive users opening many equal long sessions rank on top; timelines stay bounded."""

from __future__ import annotations

import random

from apps.quality.analysis import audit
from apps.quality.analysis.monopolization import MaxSampler
from tests.quality.analysis.factories import T0, decision, lease_event

MINUTE = 60_000
LIMITS = {"quantity": 5}
HOUR = 3_600_000


def opening(at: int, customer: str, member: str, length: int) -> list[tuple[int, object]]:
    events = [
        decision(at, "sliding_window", 20, MINUTE, customer=customer, limit="opens"),
        lease_event(at, "acquire", member, expires=at + length, customer=customer, **LIMITS),
        decision(at, "session_time", 3_600, HOUR, customer=customer),
    ]
    return [(at, event) for event in events]


def scenario(rng: random.Random) -> list:  # type: ignore[type-arg]
    timed = []
    for number in range(30):  # common users: a few random short sessions
        for k in range(rng.randint(1, 4)):
            timed += opening(
                T0 + rng.randint(0, 50 * MINUTE), f"common{number}", f"c{number}-{k}", rng.randint(1_000, MINUTE)
            )
    for number in range(3):  # aggressive users: many equal long sessions, one after another
        for k in range(40):
            timed += opening(T0 + k * MINUTE // 4, f"aggressive{number}", f"a{number}-{k}", 10 * MINUTE)
    timed.sort(key=lambda pair: pair[0])
    return [event for _, event in timed]


def test_the_aggressive_users_rank_on_top_and_their_plan_first() -> None:
    events = scenario(random.Random(4))
    groups = {f"common{n}": "free" for n in range(30)} | {f"aggressive{n}": "pro" for n in range(3)}
    report = audit([events], groups=groups, top=5)

    assert {top.name for top in report.top_customers[:3]} == {"aggressive0", "aggressive1", "aggressive2"}
    assert report.top_customers[0].score > 2 * report.top_customers[3].score
    assert [top.name for top in report.top_groups] == ["pro", "free"]


def test_the_score_adds_the_three_terms_and_drops_a_missing_limit() -> None:
    at = T0
    events = [decision(at, "fixed_window", 4, MINUTE, limit="opens")]
    events += [lease_event(at, "acquire", "a", expires=at + 30 * 60_000, quantity=2)]
    events += [decision(at, "session_time", 3_600, HOUR)]
    timeline = audit([events]).customers["acme"].monopolization
    # right after the start: 1/2 sessions + 1/4 openings; right before the expiry: 1/2 + 0 + 1800 s / 3600 s.
    assert timeline.points == [(at, 0.75), (at + 30 * 60_000, 1.0)]
    only_sessions = audit([[events[1]]]).customers["acme"].monopolization  # no window nor session_time limit
    assert only_sessions.peak == 0.5


def test_a_timeline_keeps_at_most_its_limit_of_points_and_its_peak() -> None:
    sampler = MaxSampler(limit=500)
    rng = random.Random(7)
    scores = [(T0 + i * 997, rng.random()) for i in range(20_000)]
    scores[12_345] = (scores[12_345][0], 5.0)
    for at, score in scores:
        sampler.add(at, score)
    result = sampler.result()

    assert 250 <= len(result.points) <= 500
    assert (result.peak, result.peak_at_ms) == (5.0, scores[12_345][0])
    assert (scores[12_345][0], 5.0) in result.points
    assert [at for at, _ in result.points] == sorted(at for at, _ in result.points)
