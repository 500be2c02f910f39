import datetime as dt

import factory

from apps.enforcement.models import Allocation, AllocationSet


class AllocationSetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AllocationSet
        skip_postgeneration_save = True

    customer = factory.Sequence(lambda n: f"acct-{n}")
    limit = "streams"
    counter = factory.LazyAttribute(lambda o: f"c:{{c={o.customer}}}:cc:streams:c={o.customer}")
    resynced_at = factory.Sequence(lambda n: dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=n))
    allocation = factory.RelatedFactory(
        "tests.enforcement.factories.AllocationFactory", factory_related_name="allocation_set"
    )


class AllocationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Allocation

    allocation_set = factory.SubFactory(AllocationSetFactory, allocation=None)
    counter = factory.LazyAttribute(lambda o: o.allocation_set.counter)
    member = factory.Sequence(lambda n: f"YWNjdC0x.{n:032x}")
