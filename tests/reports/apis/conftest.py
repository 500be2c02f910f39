"""The usage API tests share the decision API's fixtures: keys, a client, a RedisStore with this test's prefix."""

from tests.enforcement.conftest import (  # noqa: F401 - fixtures, found by pytest by name
    _forgive_bad_keys,
    api,
    clock,
    customer_key,
    engine,
    service_key,
)
