"""The scenario of seed 004's quality question, as numbers: who opens sessions, how often, for how long, and the
limits that hold them (a config document the platform imports).

Common users open one session at a time: think a random short time, acquire, hold a random short time (a few
window-limited checks meanwhile), release; now and then they walk away and let the lease expire. Aggressive users
open many equal sessions at once, one more than their concurrency limit, again and again, and hammer the
window-limited check: they live at their limits. Every draw comes from a random.Random seeded with the run's seed
and the customer (and thread), so a run is the same plan each time; what the platform answers may still differ
with timing, and the generator records what it got (record.py).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

SESSION_OPERATION = "SyntheticSession"
QUERY_OPERATION = "SyntheticQuery"
SERVICE = "synthetic-traffic"
COMMON_PLAN = "synthetic-common"
AGGRESSIVE_PLAN = "synthetic-aggressive"
SESSIONS_LIMIT = "synthetic-sessions"
OPENINGS_LIMIT = "synthetic-openings"
SESSION_TIME_LIMIT = "synthetic-session-time"
QUERIES_LIMIT = "synthetic-queries"


@dataclass(frozen=True, slots=True)
class Scenario:
    """One run. Times in seconds unless the name says otherwise."""

    seed: int = 4
    duration_s: float = 30.0
    common: int = 20
    aggressive: int = 2
    prefix: str = "syn"  # customers are <prefix>-c000 .. and <prefix>-a00 ..
    # The limits (config_document); every one keyed by customer.
    concurrency: int = 4  # sessions held at once
    openings: int = 20  # sessions opened per sliding window (sliding_log) ...
    openings_period_s: int = 5  # ... of this length
    session_time_s: int = 600  # lease seconds per fixed window ...
    session_time_period_s: int = 60  # ... of this length
    queries: int = 10  # window-limited checks per fixed window ...
    queries_period_s: int = 2  # ... of this length
    ttl_s: int = 2  # every lease's ttl (an abandoned one ends this long after its acquire)
    # Common users.
    think_s: tuple[float, float] = (0.1, 1.5)
    hold_s: tuple[float, float] = (0.05, 1.0)
    abandon_p: float = 0.1
    checks_per_session: tuple[int, int] = (0, 2)
    # Aggressive users: `concurrency + extra_sessions` session threads of equal sessions, one check thread.
    aggressive_hold_s: float = 0.5
    extra_sessions: int = 1
    query_every_s: float = 0.05

    def __post_init__(self) -> None:
        if self.common < 0 or self.aggressive < 0 or self.common + self.aggressive == 0:
            raise ValueError("a scenario needs at least one user (common + aggressive > 0, neither negative)")
        if self.duration_s <= 0:
            raise ValueError("duration_s must be above 0")
        if max(self.hold_s[1], self.aggressive_hold_s) >= self.ttl_s:
            raise ValueError("sessions must be shorter than the lease ttl (nothing renews them)")

    def common_customers(self) -> list[str]:
        return [f"{self.prefix}-c{index:03d}" for index in range(self.common)]

    def aggressive_customers(self) -> list[str]:
        return [f"{self.prefix}-a{index:02d}" for index in range(self.aggressive)]

    def groups(self) -> dict[str, str]:
        """customer -> group (its plan), as the audit takes them."""
        groups = dict.fromkeys(self.common_customers(), COMMON_PLAN)
        groups.update(dict.fromkeys(self.aggressive_customers(), AGGRESSIVE_PLAN))
        return groups

    def rng(self, customer: str, thread: int = 0) -> random.Random:
        """The deterministic draws of one thread of one customer."""
        return random.Random(f"{self.seed}:{customer}:{thread}")

    def limit_periods_ms(self) -> dict[str, int]:
        """The period of each window limit, for the openings and checks counted in sliding windows."""
        return {OPENINGS_LIMIT: self.openings_period_s * 1000, QUERIES_LIMIT: self.queries_period_s * 1000}


def _limit(name: str, operation: str, algorithm: str, limit: int, period: int | str, **extra: Any) -> dict[str, Any]:
    """One limit of the scenario in the shape `import_limits` reads; every one is keyed by customer."""
    return {
        "name": name,
        "operation": operation,
        "algorithm": algorithm,
        "limit": limit,
        "period": period,
        "key_by": ["customer"],
        **extra,
    }


def scenario_limits(scenario: Scenario, *, audit: bool = True) -> list[dict[str, Any]]:
    """The limits that hold the scenario's sessions and checks. `audit` marks them for the decision log."""
    marked = {"audit": True} if audit else {}
    return [
        _limit(SESSIONS_LIMIT, SESSION_OPERATION, "concurrency", scenario.concurrency, "hour", **marked),
        _limit(
            OPENINGS_LIMIT, SESSION_OPERATION, "sliding_log", scenario.openings, scenario.openings_period_s, **marked
        ),
        _limit(
            SESSION_TIME_LIMIT,
            SESSION_OPERATION,
            "session_time",
            scenario.session_time_s,
            scenario.session_time_period_s,
            unit="seconds",
            **marked,
        ),
        _limit(QUERIES_LIMIT, QUERY_OPERATION, "fixed_window", scenario.queries, scenario.queries_period_s, **marked),
    ]


def config_document(scenario: Scenario, *, audit: bool = True) -> dict[str, Any]:
    """The platform configuration of the scenario, in the shape `import_limits` reads (YAML as a dict).
    `audit` marks the window limits for the decision log (the field exists once the platform records them)."""
    limits = scenario_limits(scenario, audit=audit)
    customers = [{"id": customer, "plan": plan} for customer, plan in scenario.groups().items()]
    return {
        "operations": [
            {"name": SESSION_OPERATION, "description": "A synthetic session (lease) of the quality scenario."},
            {"name": QUERY_OPERATION, "description": "A synthetic window-limited call of the quality scenario."},
        ],
        "plans": [
            {"name": COMMON_PLAN, "description": "Synthetic common users: random short sessions."},
            {"name": AGGRESSIVE_PLAN, "description": "Synthetic aggressive users: many equal sessions."},
        ],
        "customers": customers,
        "limits": limits,
        "services": [{"name": SERVICE, "operations": []}],
    }
