"""generate_traffic --setup-only: the scenario's configuration through the import, and a key shown once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from apps.apikeys.models import ApiKey
from apps.customers.models import Customer
from apps.limits.models import Limit
from apps.quality.synthetic.scenario import AGGRESSIVE_PLAN, OPENINGS_LIMIT, SERVICE, SESSIONS_LIMIT


@pytest.mark.django_db
def test_setup_only_imports_the_scenario_and_issues_a_key_once() -> None:
    err = StringIO()
    keys_before = ApiKey.objects.filter(service__name=SERVICE).count()  # the live tests' platform may have one

    call_command("generate_traffic", "--setup-only", "--common", "3", "--aggressive", "2", "--prefix", "s", stderr=err)
    call_command("generate_traffic", "--setup-only", "--common", "3", "--aggressive", "2", "--prefix", "s",
                 "--api-key", "given", stderr=StringIO())  # fmt: skip

    assert Customer.objects.filter(external_id__startswith="s-").count() == 5
    assert Customer.objects.get(external_id="s-a01").plan.name == AGGRESSIVE_PLAN
    assert Limit.objects.get(name=SESSIONS_LIMIT).quantity == 4
    assert Limit.objects.get(name=OPENINGS_LIMIT).algorithm == "sliding_log"
    assert ApiKey.objects.filter(service__name=SERVICE).count() == keys_before + 1  # not again when a key is given
    assert "Issued API key" in err.getvalue()


@pytest.mark.django_db
def test_without_a_key_or_setup_the_command_says_what_to_give() -> None:
    with pytest.raises(CommandError, match="--api-key"):
        call_command("generate_traffic", "--duration", "1", stderr=StringIO())
