import datetime as dt

import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from apps.reports.models import ExportJob


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)

    username = factory.Sequence(lambda n: f"user-{n}")
    is_staff = True


def analyst(username: str = "analyst"):
    """A staff user who may export usage (given reports.export_usage, as the analysts role gives it)."""
    user = UserFactory(username=username)
    user.user_permissions.add(Permission.objects.get(content_type__app_label="reports", codename="export_usage"))
    return user


class ExportJobFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ExportJob

    granularity = "hour"
    start = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    end = dt.datetime(2026, 3, 5, tzinfo=dt.UTC)
    format = "csv"
    requested_by = factory.SubFactory(UserFactory)
