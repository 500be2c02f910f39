"""limits_purge_expired: overrides that have ended and access rules that have expired are deleted."""

import datetime as dt

import pytest

from apps.limits.models import AccessRule, Override
from apps.limits.services import limits_purge_expired
from tests.limits.factories import AccessRuleFactory, OverrideFactory

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
DAYS = dt.timedelta(days=1)


def test_expired_overrides_and_access_rules_are_deleted_and_the_others_kept() -> None:
    OverrideFactory(ends=NOW - dt.timedelta(seconds=1))
    current = OverrideFactory(ends=NOW + DAYS)
    endless = OverrideFactory(ends=None)
    AccessRuleFactory(expires=NOW - DAYS)
    lasting = AccessRuleFactory(expires=None)

    report = limits_purge_expired(now=NOW)

    assert (report["overrides"], report["access_rules"]) == (1, 1)
    assert set(Override.objects.all()) == {current, endless}
    assert list(AccessRule.objects.all()) == [lasting]
