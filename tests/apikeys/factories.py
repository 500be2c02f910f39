import factory

from apps.apikeys.models import ApiKey, Service
from apps.apikeys.services import api_key_hash


class ServiceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Service
        django_get_or_create = ("name",)

    name = factory.Sequence(lambda n: f"service-{n}")


class ApiKeyFactory(factory.django.DjangoModelFactory):
    """A stored key whose raw secret is f"{prefix}.secret" (tests that need a usable key call api_key_create)."""

    class Meta:
        model = ApiKey

    service = factory.SubFactory(ServiceFactory)
    name = factory.Sequence(lambda n: f"key-{n}")
    prefix = factory.Sequence(lambda n: f"qp_{n:08x}")
    key_hash = factory.LazyAttribute(lambda key: api_key_hash(f"{key.prefix}.secret"))
