"""The service API's key guard: an address sending bad keys is slowed down, a valid key never is."""

import pytest

from apps.enforcement.authentication import BadKeyGuard


def test_an_address_is_refused_after_too_many_bad_keys_and_forgiven_after_the_window() -> None:
    guard = BadKeyGuard(limit=3, window_s=60)
    for second in range(3):
        assert guard.retry_after_s("198.51.100.1", now=100.0 + second) == 0
        guard.record_failure("198.51.100.1", now=100.0 + second)

    assert guard.retry_after_s("198.51.100.1", now=103.0) == pytest.approx(57.0)
    assert guard.retry_after_s("198.51.100.2", now=103.0) == 0
    assert guard.retry_after_s("198.51.100.1", now=160.5) == 0
