"""rows_sift: which rows of a batch the database refuses on their own, found without writing anything; only
refusals of the values count, never the database being away."""

import pytest
from django.db import DataError, OperationalError

from apps.common.quarantine import rows_sift
from apps.customers.models import Customer

pytestmark = pytest.mark.django_db


def create_customers(names) -> None:
    Customer.objects.bulk_create([Customer(external_id=name) for name in names])


def test_the_refused_rows_are_found_with_their_reasons_and_nothing_is_written() -> None:
    names = [f"acct-{n}" for n in range(20)]
    names[3], names[17] = "a\x00b", "y" * 201

    sifted = rows_sift(names, create_customers)

    assert sifted.bad == [("a\x00b", "PostgreSQL text fields cannot contain NUL (0x00) bytes"),
                          ("y" * 201, "value too long for type character varying(200)")]  # fmt: skip
    assert sifted.good == [name for name in names if name not in ("a\x00b", "y" * 201)]
    assert not Customer.objects.exists(), "probes are rolled back"


def test_a_lone_surrogate_is_refused_like_a_nul_byte() -> None:
    assert [row for row, _ in rows_sift(["acct-1", "\ud800"], create_customers).bad] == ["\ud800"]


def test_a_failure_that_is_not_about_the_values_propagates() -> None:
    def database_away(part) -> None:
        raise OperationalError("connection refused")

    with pytest.raises(OperationalError):
        rows_sift(["acct-1", "acct-2"], database_away)


def test_rows_refused_only_together_are_not_blamed_on_either() -> None:
    def refuses_pairs(part) -> None:
        if len(part) > 1:
            raise DataError("together too big")

    assert rows_sift(["acct-1", "acct-2"], refuses_pairs).bad == []
