import factory

from apps.history.models import ChangeEvent


class ChangeEventFactory(factory.django.DjangoModelFactory):
    """An event that is not a model save (as history_record_event writes it)."""

    class Meta:
        model = ChangeEvent

    actor = factory.Sequence(lambda n: f"operator-{n}")
    action = "unblock"
    object_repr = factory.Sequence(lambda n: f"customer acct-{n}, limit daily")
    customer = factory.Sequence(lambda n: f"acct-{n}")
    details = factory.LazyAttribute(lambda event: {"customer": event.customer, "limit": "daily"})
