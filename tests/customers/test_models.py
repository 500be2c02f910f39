import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from apps.customers.models import Customer
from tests.customers.factories import CustomerFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("zone", ["Mars/Olympus", "utc+2", ""])
def test_an_unknown_time_zone_is_refused_on_the_timezone_field(zone) -> None:
    customer = CustomerFactory.build(timezone=zone)
    with pytest.raises(ValidationError) as caught:
        customer.full_clean()
    assert "timezone" in caught.value.message_dict


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/Los_Angeles", "Australia/Lord_Howe"])
def test_iana_time_zones_are_accepted(zone) -> None:
    CustomerFactory.build(timezone=zone).full_clean()


def test_external_ids_are_unique_in_the_database() -> None:
    CustomerFactory(external_id="acct-1")
    with pytest.raises(IntegrityError), transaction.atomic():
        Customer.objects.create(external_id="acct-1")
