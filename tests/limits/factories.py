import factory

from apps.limits.models import AccessRule, Algorithm, Limit, Operation, Override, RuleAction
from tests.customers.factories import CustomerFactory


class OperationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Operation
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"Operation{n}")


class LimitFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Limit

    name = factory.Sequence(lambda n: f"limit-{n}")
    operation = factory.SubFactory(OperationFactory)
    algorithm = "fixed_window"
    quantity = 10
    period_seconds = 60
    key_by = factory.LazyFunction(lambda: ["customer"])


class CalendarLimitFactory(LimitFactory):
    algorithm = Algorithm.CALENDAR
    period_seconds = None
    calendar_period = "day"


class OverrideFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Override

    customer = factory.SubFactory(CustomerFactory)
    limit = factory.SubFactory(LimitFactory)
    quantity = 100


class AccessRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AccessRule

    action = RuleAction.DENY
    ip = "203.0.113.0/24"
