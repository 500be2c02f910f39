import factory

from apps.customers.models import Customer, Plan


class PlanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Plan
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"plan-{n}")


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Customer

    external_id = factory.Sequence(lambda n: f"acct-{n}")
    name = factory.Faker("company")
    timezone = "UTC"
