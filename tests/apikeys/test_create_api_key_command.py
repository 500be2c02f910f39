"""manage.py create_api_key: prints a new key once; only its prefix and SHA-256 hash are stored."""

import hashlib
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from apps.apikeys.models import ApiKey
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory

pytestmark = pytest.mark.django_db

KEY_LINE = re.compile(r"^  (qp_[0-9a-f]{8}\.\S+)$", re.MULTILINE)


def create_api_key(*args: str) -> str:
    out = StringIO()
    call_command("create_api_key", *args, stdout=out)
    return out.getvalue()


def test_it_prints_a_key_whose_sha256_is_what_is_stored() -> None:
    ServiceFactory(name="control-plane")

    output = create_api_key("--service", "control-plane", "--name", "ci")

    secret = KEY_LINE.search(output).group(1)
    api_key = ApiKey.objects.get()
    assert api_key.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert secret.startswith(api_key.prefix + ".")
    assert (api_key.name, api_key.customer) == ("ci", None)
    assert "Store it now: it will not be shown again." in output


def test_the_raw_key_is_stored_nowhere_in_the_database() -> None:
    ServiceFactory(name="control-plane")
    secret = KEY_LINE.search(create_api_key("--service", "control-plane")).group(1)
    dump = StringIO()

    call_command("dumpdata", stdout=dump)

    assert ApiKey.objects.get().prefix in dump.getvalue()
    assert secret.partition(".")[2] not in dump.getvalue()


def test_it_binds_the_key_to_the_customer_given() -> None:
    ServiceFactory(name="control-plane")
    customer = CustomerFactory(external_id="acct-1")

    output = create_api_key("--service", "control-plane", "--customer", "acct-1")

    assert ApiKey.objects.get().customer == customer
    assert "bound to customer acct-1" in output


def test_an_unknown_service_fails_with_a_clear_message_and_creates_nothing() -> None:
    with pytest.raises(CommandError, match="No service named “nowhere”"):
        create_api_key("--service", "nowhere")

    assert ApiKey.objects.count() == 0


def test_an_unknown_customer_fails_with_a_clear_message_and_creates_nothing() -> None:
    ServiceFactory(name="control-plane")

    with pytest.raises(CommandError, match="No customer with id “acct-404”"):
        create_api_key("--service", "control-plane", "--customer", "acct-404")

    assert ApiKey.objects.count() == 0
