"""The demo API key `make run` prints: made once, kept in VAR_DIR (mode 600), printed again while it works."""

import stat

import pytest

from apps.apikeys.models import ApiKey
from apps.apikeys.services import api_key_create, api_key_revoke
from apps.limits.config_io import DEMO_SERVICE, demo_load
from apps.ops.demo_key import DEMO_KEY_NAME, demo_key_ensure, demo_key_path, demo_key_usable
from tests.apikeys.factories import ServiceFactory

pytestmark = pytest.mark.django_db


def demo_keys() -> int:
    return ApiKey.objects.filter(service__name=DEMO_SERVICE).count()


def test_the_key_the_demo_load_made_is_kept_readable_only_by_its_owner(tmp_path) -> None:
    loaded = demo_load()

    secret = demo_key_ensure(var_dir=tmp_path, issued=loaded.issued_key)

    assert secret == loaded.issued_key.secret
    assert demo_key_path(tmp_path).read_text() == secret + "\n"
    assert stat.S_IMODE(demo_key_path(tmp_path).stat().st_mode) == 0o600
    assert demo_key_usable(secret)


def test_a_later_run_prints_the_kept_key_and_makes_none(tmp_path) -> None:
    first = demo_key_ensure(var_dir=tmp_path, issued=demo_load().issued_key)
    assert demo_load().issued_key is None, "the demo service has its key"

    assert demo_key_ensure(var_dir=tmp_path) == first
    assert demo_keys() == 1


def test_a_revoked_demo_key_is_replaced_by_a_new_one(tmp_path) -> None:
    first = demo_key_ensure(var_dir=tmp_path, issued=demo_load().issued_key)
    api_key_revoke(api_key=ApiKey.objects.get(service__name=DEMO_SERVICE))

    second = demo_key_ensure(var_dir=tmp_path)

    assert second != first
    assert demo_key_usable(second)
    assert not demo_key_usable(first)
    assert demo_key_path(tmp_path).read_text() == second + "\n"


def test_without_the_file_a_run_makes_a_key_of_its_own_and_leaves_the_others(tmp_path) -> None:
    made_before = demo_load().issued_key  # e.g. printed by load_demo before make run kept keys

    secret = demo_key_ensure(var_dir=tmp_path)

    assert secret != made_before.secret
    assert ApiKey.objects.get(key_hash=made_before.api_key.key_hash).revoked_at is None
    assert ApiKey.objects.filter(service__name=DEMO_SERVICE, name=DEMO_KEY_NAME).count() == 1


def test_a_kept_key_of_another_service_is_never_printed(tmp_path) -> None:
    demo_load()
    other = api_key_create(service=ServiceFactory(name="billing"))
    demo_key_path(tmp_path).write_text(other.secret + "\n")

    secret = demo_key_ensure(var_dir=tmp_path)

    assert secret != other.secret
    assert demo_key_usable(secret)


def test_without_the_demo_service_there_is_no_demo_key(tmp_path) -> None:
    assert demo_key_ensure(var_dir=tmp_path) is None
    assert not demo_key_path(tmp_path).exists()
