"""The scenario's configuration in the platform's database (Django): what `generate_traffic --setup` does.

Kept out of the package's __init__ so the generator itself imports no Django.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from apps.apikeys.models import Service
from apps.apikeys.services import api_key_create
from apps.limits.config_io import config_import
from apps.limits.models import Limit
from apps.quality.synthetic.scenario import SERVICE, Scenario, config_document


@dataclass(frozen=True, slots=True)
class SetupDone:
    lines: list[str]
    api_key: str | None  # a fresh key of the scenario's service, when one was asked for


def audit_supported() -> bool:
    """Whether limits have the `audit` flag (issue 17's decision log) in this database's schema."""
    return any(field.name == "audit" for field in Limit._meta.get_fields())


def synthetic_setup(*, scenario: Scenario, issue_key: bool) -> SetupDone:
    """Import the scenario's operations, plans, customers, limits and service (again: nothing changes), and
    issue an API key of the service when `issue_key`."""
    with transaction.atomic():
        report = config_import(document=config_document(scenario, audit=audit_supported()))
        secret = None
        if issue_key:
            secret = api_key_create(service=Service.objects.get(name=SERVICE), name="generate_traffic").secret
    return SetupDone(report.lines(), secret)
