"""manage.py load_demo: the seed scenarios, through the import, into an empty database only: safe to run twice, and
an operator's configuration (their edits to the demo's own limits too) is never overwritten unless --force."""

import hashlib
import re
from io import StringIO

import pytest
from django.core.management import call_command

from apps.apikeys.models import ApiKey
from apps.customers.models import Customer
from apps.limits.models import AccessRule, Limit, Override
from tests.api_fixtures import client_with
from tests.enforcement.fallback.test_failure_policies import dead_redis  # noqa: F401 -- a fixture used here
from tests.limits.config_io.helpers import row_counts, row_state
from tests.limits.factories import OperationFactory

pytestmark = pytest.mark.django_db

KEY_LINE = re.compile(r"^  (qp_[0-9a-f]{8}\.\S+)$", re.MULTILINE)


def load_demo(*args: str) -> str:
    out = StringIO()
    call_command("load_demo", *args, stdout=out)
    return out.getvalue()


def test_it_loads_the_seed_scenarios() -> None:
    load_demo()

    daily = Limit.objects.get(operation__name="ModifyShardCount")
    assert (daily.algorithm, daily.quantity, daily.calendar_period, daily.key_by) == (
        "calendar",
        10,
        "day",
        ["customer", "resource"],
    )
    assert daily.on_store_failure == "closed"
    put_records = Limit.objects.filter(operation__name="PutRecords")
    assert sorted((limit.unit, limit.quantity, limit.period_seconds) for limit in put_records) == [
        ("bytes", 1048576, 1),
        ("records", 1000, 1),
    ]
    assert Limit.objects.filter(key_by=["ip"], plan=None).exists()
    assert Limit.objects.get(algorithm="concurrency").operation.name == "OpenSession"
    assert Override.objects.get(customer__external_id="acct-vip").quantity == 100
    assert AccessRule.objects.get(action="deny").ip == "203.0.113.0/24"
    assert set(Customer.objects.values_list("plan__name", flat=True)) == {"free", "pro"}


def test_it_prints_a_key_for_the_demo_service_that_matches_the_stored_hash() -> None:
    output = load_demo()

    secret = KEY_LINE.search(output).group(1)
    api_key = ApiKey.objects.get(service__name="demo-service")
    assert api_key.key_hash == hashlib.sha256(secret.encode()).hexdigest()
    assert "it will not be shown again" in output


def test_running_it_twice_creates_nothing_the_second_time() -> None:
    load_demo()
    counts, state = row_counts(), row_state()

    output = load_demo()

    assert row_counts() == counts
    assert row_state() == state
    assert "not loaded: this database holds a configuration already" in output
    assert "Nothing changed" in output
    assert KEY_LINE.search(output) is None


def test_an_edited_demo_limit_is_kept_and_only_force_sets_it_back() -> None:
    load_demo()
    Limit.objects.filter(name="modify-shard-count-daily").update(quantity=20)

    load_demo()
    assert Limit.objects.get(name="modify-shard-count-daily").quantity == 20

    output = load_demo("--force")
    assert Limit.objects.get(name="modify-shard-count-daily").quantity == 10
    assert "limit 20 → 10" in output
    assert "demo-service already has an active API key" in output


def test_a_database_that_ever_had_an_operation_gets_no_demo() -> None:
    operation = OperationFactory(name="OwnOperation")
    assert "not loaded" in load_demo()
    operation.delete()  # the operator emptied the configuration: the history still holds it

    assert "not loaded" in load_demo()
    assert not Limit.objects.exists()


@pytest.mark.usefixtures("dead_redis")
def test_with_the_store_down_the_demo_scaling_quota_refuses_and_the_others_follow_their_policy(service_key) -> None:
    load_demo()
    api = client_with(service_key)

    def check(operation: str) -> tuple[int, str | None]:
        body = {"customer": "acct-1", "operation": operation, "resource": "stream-1", "ip": "198.51.100.7"}
        response = api.post("/api/v1/check", body, format="json")
        return response.status_code, response.json().get("error", {}).get("code")

    assert check("ModifyShardCount") == (503, "store_unavailable")
    assert check("DescribeStream") == (200, None)  # the default policy: counted in PostgreSQL meanwhile
