import hashlib

import pytest
from django.utils import timezone

from apps.apikeys.models import ApiKey
from apps.apikeys.selectors import BadKeyGuard, api_principal_of_key
from apps.apikeys.services import api_key_create, api_key_revoke, api_keys_mark_used
from apps.limits.snapshot import snapshot_build
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import OperationFactory


@pytest.mark.django_db
def test_a_key_resolves_to_its_service_customer_and_operations() -> None:
    service = ServiceFactory(name="billing")
    service.operations.add(OperationFactory(name="Charge"))
    issued = api_key_create(service=service, customer=CustomerFactory(external_id="acct-9"))

    principal = api_principal_of_key(raw_key=issued.secret, snapshot=snapshot_build())

    assert principal is not None
    assert (principal.service, principal.customer, principal.operations) == ("billing", "acct-9", ("Charge",))
    assert principal.may_use_customer("acct-9")
    assert not principal.may_use_customer("acct-10")
    assert principal.may_use_operation("Charge")
    assert not principal.may_use_operation("Refund")


@pytest.mark.django_db
def test_only_the_hash_of_a_key_is_stored() -> None:
    issued = api_key_create(service=ServiceFactory())

    stored = ApiKey.objects.get(pk=issued.api_key.pk)
    assert stored.key_hash == hashlib.sha256(issued.secret.encode()).hexdigest()
    assert issued.secret.startswith(stored.prefix + ".")
    assert not ApiKey.objects.filter(key_hash=issued.secret).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("mangle", [lambda k: k + "x", lambda k: k[:-1], lambda k: "qp_00000000.nope", lambda k: ""])
def test_a_wrong_or_unknown_key_resolves_to_nobody(mangle) -> None:
    issued = api_key_create(service=ServiceFactory())

    assert api_principal_of_key(raw_key=mangle(issued.secret), snapshot=snapshot_build()) is None


@pytest.mark.django_db
def test_a_revoked_key_resolves_to_nobody() -> None:
    issued = api_key_create(service=ServiceFactory())
    api_key_revoke(api_key=issued.api_key)

    assert api_principal_of_key(raw_key=issued.secret, snapshot=snapshot_build()) is None


@pytest.mark.django_db
def test_marking_keys_used_writes_their_last_used_time() -> None:
    issued = api_key_create(service=ServiceFactory())
    now = timezone.now()
    assert api_keys_mark_used(last_used={issued.api_key.prefix: now}) == 1
    issued.api_key.refresh_from_db()
    assert issued.api_key.last_used_at == now


def test_an_address_is_refused_after_too_many_bad_keys_and_forgiven_after_the_window() -> None:
    guard = BadKeyGuard(limit=3, window_s=60)
    for second in range(3):
        assert guard.retry_after_s("198.51.100.1", now=100.0 + second) == 0
        guard.record_failure("198.51.100.1", now=100.0 + second)

    assert guard.retry_after_s("198.51.100.1", now=103.0) == pytest.approx(57.0)
    assert guard.retry_after_s("198.51.100.2", now=103.0) == 0
    assert guard.retry_after_s("198.51.100.1", now=160.5) == 0
