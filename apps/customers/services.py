"""Writing customers."""

from collections.abc import Iterable

from apps.customers.models import Customer


def customers_record_seen(*, external_ids: Iterable[str]) -> int:
    """Create a Customer for each id not known yet (checks for unknown customers land here, off the hot path).

    bulk_create sends no signal, so this does not republish the config snapshot: an unknown customer
    already gets exactly what a new row would give it (the limits for every customer, UTC).
    """
    new = [Customer(external_id=external_id) for external_id in external_ids]
    created = Customer.objects.bulk_create(new, ignore_conflicts=True)
    return len(created)
