"""The beat tasks' tests share the decision API's fixtures: a RedisStore with this test's key prefix and a ManualClock."""

from tests.enforcement.conftest import (  # noqa: F401 - fixtures, found by pytest by name
    _forgive_bad_keys,
    clock,
    engine,
)
