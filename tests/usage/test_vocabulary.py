"""The usage vocabulary is the one list of counters: the model holds a field for each, a check is counted in
exactly the counters it names, and the rate is the one every chart point and total is shown in."""

import datetime as dt

from django.db import models

from apps.usage.models import UsageBucket, UsageMinute
from apps.usage.vocabulary import AMOUNTS, BY_NAME, CHECKS, COUNTERS, REPORTED, WITHOUT_REDIS, checks, rate


def test_every_amount_is_a_summed_field_of_a_usage_row_and_every_summed_field_an_amount() -> None:
    summed = [field.name for field in UsageBucket._meta.get_fields() if isinstance(field, models.BigIntegerField)]
    assert sorted(summed) == sorted(AMOUNTS)


def test_each_counter_has_its_own_name_label_and_colour() -> None:
    for attribute in ("name", "label", "heading", "colour"):
        values = [getattr(counter, attribute) for counter in COUNTERS]
        assert len(set(values)) == len(values), attribute
    assert all(counter.meaning.endswith(".") for counter in COUNTERS)


def test_a_check_is_in_exactly_one_of_allowed_denied_rule_denied_unavailable() -> None:
    assert CHECKS == ("allowed", "denied", "rule_denied", "unavailable")
    assert WITHOUT_REDIS == ("degraded", "unavailable")
    assert REPORTED == ("allowed", "denied", "shadow_denied", "degraded", "rule_denied", "unavailable")
    assert not any(BY_NAME[name].part for name in CHECKS), "a part is counted again, never a check of its own"
    row = dict(allowed=5, denied=2, shadow_denied=1, degraded=3, rule_denied=4, unavailable=6, logged=7)
    assert checks(row) == 5 + 2 + 4 + 6
    assert checks(UsageMinute(**row)) == 17, "a row's attributes read as the mapping's"


def test_the_rate_is_per_second_unless_asked_to_three_decimals() -> None:
    assert rate(40, dt.timedelta(minutes=1)) == round(40 / 60, 3)
    assert rate(40, dt.timedelta(minutes=1), per_s=60) == 40.0
    assert rate(1, dt.timedelta(days=1)) == 0.0
