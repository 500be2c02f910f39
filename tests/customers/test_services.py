"""Customers first seen by a check are created in the background; a name PostgreSQL refuses on its own (a
NUL byte, too long) is quarantined, and the other names of the same round are created all the same."""

import pytest
from prometheus_client import REGISTRY

from apps.customers.models import Customer
from apps.enforcement.decisions.services import unknown_customers
from tests.customers.factories import CustomerFactory

pytestmark = pytest.mark.django_db


def quarantined_total() -> float:
    return REGISTRY.get_sample_value("quota_rows_quarantined_total", {"writer": "unknown-customers"}) or 0.0


@pytest.fixture(autouse=True)
def _nothing_pending():
    unknown_customers.flush()  # names other tests' checks left for the next round
    Customer.objects.all().delete()


def test_one_unwritable_name_does_not_drop_the_others_of_its_round(caplog) -> None:
    CustomerFactory(external_id="acct-known")
    before = quarantined_total()
    for name in ("acct-1", "a\x00b", "acct-known", "acct-2", "x" * 201, "acct-3"):
        unknown_customers.record(name, True)

    unknown_customers.flush()

    assert sorted(Customer.objects.values_list("external_id", flat=True)) == [
        "acct-1",
        "acct-2",
        "acct-3",
        "acct-known",
    ]
    assert quarantined_total() == before + 2
    assert repr("a\x00b") in caplog.text
    assert repr("x" * 201)[:200] + "… (203 chars)" in caplog.text, "a long key is cut in the log"
    assert unknown_customers.flush() is None, "the refused names are not retried"


def test_a_round_of_good_names_is_written_as_before() -> None:
    before = quarantined_total()
    unknown_customers.record("acct-7", True)

    assert unknown_customers.flush() == 1
    assert Customer.objects.filter(external_id="acct-7").exists()
    assert quarantined_total() == before
