import hashlib

import pytest
from django.utils import timezone

from apps.apikeys.models import ApiKey
from apps.apikeys.selectors import ApiPrincipal, api_principal_of_key, keys_compiled
from apps.apikeys.services import api_key_create, api_key_revoke, api_keys_mark_used
from apps.common.exceptions import Forbidden
from tests.apikeys.factories import ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import OperationFactory


@pytest.mark.django_db
def test_a_key_resolves_to_its_service_customer_and_operations() -> None:
    service = ServiceFactory(name="billing")
    service.operations.add(OperationFactory(name="Charge"))
    issued = api_key_create(service=service, customer=CustomerFactory(external_id="acct-9"))

    principal = api_principal_of_key(raw_key=issued.secret, keys=keys_compiled())

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

    assert api_principal_of_key(raw_key=mangle(issued.secret), keys=keys_compiled()) is None


@pytest.mark.django_db
def test_a_revoked_key_resolves_to_nobody() -> None:
    issued = api_key_create(service=ServiceFactory())
    api_key_revoke(api_key=issued.api_key)

    assert api_principal_of_key(raw_key=issued.secret, keys=keys_compiled()) is None


@pytest.mark.django_db
def test_marking_keys_used_writes_their_last_used_time() -> None:
    issued = api_key_create(service=ServiceFactory())
    now = timezone.now()
    assert api_keys_mark_used(last_used={issued.api_key.prefix: now}) == 1
    issued.api_key.refresh_from_db()
    assert issued.api_key.last_used_at == now


def test_authorize_refuses_another_customer_and_an_operation_the_service_may_not_use() -> None:
    bound = ApiPrincipal(prefix="qp_1", service="billing", customer="acct-9", operations=("Charge",))

    bound.authorize("acct-9", "Charge")
    bound.authorize(None, "Charge")  # a read across customers names no customer: only the operation is checked
    with pytest.raises(Forbidden) as other_customer:
        bound.authorize("acct-10", "Charge")
    with pytest.raises(Forbidden) as other_operation:
        bound.authorize("acct-9", "Refund")

    assert (other_customer.value.code, other_operation.value.code) == ("forbidden_customer", "forbidden_operation")
