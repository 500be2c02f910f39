"""The demo data set: the seed scenarios, loaded through the same import as any other file."""

from dataclasses import dataclass
from pathlib import Path

from django.db import transaction

from apps.apikeys.models import Service
from apps.apikeys.services import IssuedKey, api_key_create
from apps.limits.config_io.apply import config_import
from apps.limits.config_io.report import ImportReport
from apps.limits.config_io.yaml_io import config_yaml_load

DEMO_PATH = Path(__file__).resolve().parent.parent / "demo.yaml"
DEMO_SERVICE = "demo-service"


@dataclass(frozen=True)
class DemoLoaded:
    report: ImportReport
    issued_key: IssuedKey | None  # None when the demo service already had an active key


def demo_load() -> DemoLoaded:
    """Import demo.yaml (a second run changes nothing) and give the demo service a key if it has none."""
    with transaction.atomic():
        report = config_import(document=config_yaml_load(DEMO_PATH.read_text(encoding="utf-8")))
        service = Service.objects.get(name=DEMO_SERVICE)
        issued = None
        if not service.api_keys.filter(revoked_at__isnull=True).exists():
            issued = api_key_create(service=service, name="demo")
    return DemoLoaded(report=report, issued_key=issued)
