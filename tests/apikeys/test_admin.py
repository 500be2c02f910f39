import hashlib
import re

import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.utils import timezone

from apps.apikeys.models import ApiKey, Service
from tests.admin_fixtures import admin_url
from tests.apikeys.factories import ApiKeyFactory, ServiceFactory
from tests.customers.factories import CustomerFactory
from tests.limits.factories import OperationFactory

RAW_KEY = re.compile(r"qp_[0-9a-f]{8}\.[A-Za-z0-9_-]{20,}")


def _issue_key(admin_client, **fields: object):
    data = {"service": ServiceFactory(name="billing").pk, "customer": "", "name": "nightly export", **fields}
    return admin_client.post(admin_url(ApiKey, "add"), data)


@pytest.mark.django_db
def test_the_add_form_asks_only_for_service_customer_and_name(admin_client) -> None:
    response = admin_client.get(admin_url(ApiKey, "add"))
    assert list(response.context["adminform"].form.fields) == ["service", "customer", "name"]


@pytest.mark.django_db
def test_the_add_form_offers_only_save_because_every_save_ends_on_the_secret_page(admin_client) -> None:
    response = admin_client.get(admin_url(ApiKey, "add"))
    page = response.content.decode()
    assert 'name="_save"' in page
    assert 'name="_addanother"' not in page
    assert 'name="_continue"' not in page


@pytest.mark.django_db
def test_the_add_form_starts_with_the_customer_given_in_the_link(admin_client) -> None:
    customer = CustomerFactory()
    response = admin_client.get(admin_url(ApiKey, "add"), {"customer": customer.pk})
    assert response.context["adminform"].form.initial["customer"] == str(customer.pk)


@pytest.mark.django_db
def test_issuing_a_key_redirects_to_a_page_that_shows_its_secret_once_as_a_success(admin_client) -> None:
    customer = CustomerFactory()

    posted = _issue_key(admin_client, customer=customer.pk)
    key = ApiKey.objects.get()
    response = admin_client.get(posted["Location"])

    assert posted.status_code == 302  # post/redirect/get: a reload of the page does not post the form again
    assert posted["Location"] == f"/admin/apikeys/apikey/{key.pk}/issued/"
    page = response.content.decode()
    assert response.status_code == 200
    assert '<li class="success" id="api-key-issued">' in page
    assert "errornote" not in page
    assert "Copy this key now; it will not be shown again." in page
    [secret] = set(RAW_KEY.findall(page))
    assert hashlib.sha256(secret.encode()).hexdigest() == key.key_hash
    assert secret.startswith(f"{key.prefix}.")
    assert (key.service.name, key.customer, key.name) == ("billing", customer, "nightly export")
    assert "no-store" in response["Cache-Control"]


def _issued(admin_client) -> tuple[ApiKey, str, str]:
    """Issue a key and open the page the form redirects to: the key, the secret shown, the page's address."""
    url = _issue_key(admin_client)["Location"]
    return ApiKey.objects.get(), RAW_KEY.search(admin_client.get(url).content.decode()).group(), url


@pytest.mark.django_db
def test_the_issued_page_shows_the_secret_only_the_first_time(admin_client) -> None:
    key, secret, url = _issued(admin_client)

    again = admin_client.get(url).content.decode()

    assert not RAW_KEY.search(again)
    assert f"The secret of API key {key.prefix} was shown once" in again


@pytest.mark.django_db
def test_neither_the_session_nor_the_cookie_alone_holds_the_secret_on_its_way(admin_client, django_user_model) -> None:
    posted = _issue_key(admin_client)
    key = ApiKey.objects.get()
    session = dict(admin_client.session.items())
    mask = admin_client.cookies["quota_issued_key_mask"]
    other = django_user_model.objects.create_superuser("other", "o@example.com", "pw")
    stranger = type(admin_client)()
    stranger.force_login(other)

    shown_to_a_stranger = stranger.get(posted["Location"]).content.decode()  # a session without the half

    assert (mask["path"], mask["httponly"], mask["samesite"]) == (posted["Location"], True, "Strict")
    assert key.prefix not in str(session)
    masked = bytes.fromhex(session["quota_issued_api_keys"][str(key.pk)])
    assert len(masked) == len(bytes.fromhex(mask.value))
    assert not RAW_KEY.search(shown_to_a_stranger)
    secret = RAW_KEY.search(admin_client.get(posted["Location"]).content.decode()).group()
    assert secret.partition(".")[2] not in str(session) + mask.value
    assert dict(admin_client.session.items())["quota_issued_api_keys"] == {}


@pytest.mark.django_db
def test_the_secret_is_not_shown_again_nor_kept_anywhere(admin_client) -> None:
    key, secret, _ = _issued(admin_client)

    change_page = admin_client.get(admin_url(ApiKey, "change", key.pk)).content.decode()
    list_page = admin_client.get(admin_url(ApiKey, "changelist")).content.decode()
    stored_row = ApiKey.objects.filter(pk=key.pk).values().get()
    session = dict(admin_client.session.items())
    cookies = {name: morsel.value for name, morsel in admin_client.cookies.items()}
    log_messages = list(LogEntry.objects.values_list("object_repr", "change_message"))

    assert key.prefix in change_page
    secret_part = secret.partition(".")[2]
    for place in (change_page, list_page, str(stored_row), str(session), str(cookies), str(log_messages)):
        assert secret_part not in place


@pytest.mark.django_db
def test_an_incomplete_add_form_issues_no_key(admin_client) -> None:
    response = admin_client.post(admin_url(ApiKey, "add"), {"service": "", "customer": "", "name": "x"})
    assert list(response.context["adminform"].form.errors) == ["service"]
    assert not RAW_KEY.search(response.content.decode())
    assert not ApiKey.objects.exists()


@pytest.mark.django_db
def test_the_change_page_lets_only_the_name_change_and_shows_only_the_start_of_the_hash(admin_client) -> None:
    key = ApiKeyFactory()

    response = admin_client.get(admin_url(ApiKey, "change", key.pk))

    page = response.content.decode()
    assert list(response.context["adminform"].form.fields) == ["name"]
    assert f"{key.key_hash[:8]}…" in page
    assert key.key_hash not in page


@pytest.mark.django_db
def test_renaming_a_key_keeps_its_hash_owner_and_status(admin_client) -> None:
    key = ApiKeyFactory(name="old")
    other_service = ServiceFactory()
    data = {"name": "new", "service": other_service.pk, "key_hash": "0" * 64, "revoked_at": "2020-01-01 00:00"}

    response = admin_client.post(admin_url(ApiKey, "change", key.pk), data)

    assert response.status_code == 302
    renamed = ApiKey.objects.get(pk=key.pk)
    assert renamed.name == "new"
    assert (renamed.service, renamed.key_hash, renamed.revoked_at) == (key.service, key.key_hash, None)


@pytest.mark.django_db
def test_the_revoke_action_revokes_the_selected_keys_only(admin_client) -> None:
    first, second, untouched = ApiKeyFactory(), ApiKeyFactory(), ApiKeyFactory()
    data = {"action": "revoke_keys", "_selected_action": [first.pk, second.pk]}

    response = admin_client.post(admin_url(ApiKey, "changelist"), data, follow=True)

    assert ApiKey.objects.filter(revoked_at__isnull=False).count() == 2
    assert ApiKey.objects.get(pk=untouched.pk).revoked_at is None
    assert "Revoked 2 key(s)." in response.content.decode()
    assert LogEntry.objects.filter(action_flag=CHANGE, change_message="Revoked.").count() == 2
    assert {first.pk, second.pk} == {key.pk for key in ApiKey.objects.exclude(revoked_at=None)}


@pytest.mark.django_db
def test_revoking_an_already_revoked_key_keeps_its_first_revocation_time(admin_client) -> None:
    revoked_at = timezone.now() - timezone.timedelta(days=3)
    key = ApiKeyFactory(revoked_at=revoked_at)

    response = admin_client.post(
        admin_url(ApiKey, "changelist"), {"action": "revoke_keys", "_selected_action": [key.pk]}, follow=True
    )

    assert ApiKey.objects.get(pk=key.pk).revoked_at == revoked_at
    assert "Revoked 0 key(s). 1 already revoked." in response.content.decode()


@pytest.mark.django_db
def test_the_key_list_filters_by_status(admin_client) -> None:
    active = ApiKeyFactory()
    revoked = ApiKeyFactory(revoked_at=timezone.now())

    def listed(status: str) -> list[ApiKey]:
        return list(admin_client.get(admin_url(ApiKey, "changelist"), {"status": status}).context["cl"].result_list)

    assert listed("active") == [active]
    assert listed("revoked") == [revoked]


@pytest.mark.django_db
def test_a_key_can_be_deleted(admin_client) -> None:
    key = ApiKeyFactory()
    response = admin_client.post(admin_url(ApiKey, "delete", key.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not ApiKey.objects.exists()


@pytest.mark.django_db
def test_the_service_list_names_its_operations_or_says_every_operation(admin_client) -> None:
    narrow = ServiceFactory(name="shards")
    narrow.operations.set([OperationFactory(name="ModifyShardCount"), OperationFactory(name="SplitShard")])
    ServiceFactory(name="control-plane")

    page = admin_client.get(admin_url(Service, "changelist")).content.decode()

    assert '<td class="field-operation_names">ModifyShardCount, SplitShard</td>' in page
    assert '<td class="field-operation_names">every operation</td>' in page


def test_the_issued_page_of_no_such_key_is_not_found(admin_client) -> None:
    assert admin_client.get("/admin/apikeys/apikey/999999/issued/").status_code == 404
