"""The demo data set: the seed scenarios, loaded through the same import as any other file.

It goes into an empty database once. A database where an operation was ever configured (one exists, or the change
history records one) holds the operator's configuration, which the demo never overwrites: `make run` starts again
and again on the same database, and an operator who raised a demo limit keeps it.
"""

from dataclasses import dataclass
from pathlib import Path

from django.contrib.contenttypes.models import ContentType
from django.db import transaction

from apps.apikeys.models import Service
from apps.apikeys.services import IssuedKey, api_key_create
from apps.history.models import ChangeEvent
from apps.limits.config_io.apply import config_import
from apps.limits.config_io.report import ImportReport
from apps.limits.config_io.yaml_io import config_yaml_load
from apps.limits.models import Operation

DEMO_PATH = Path(__file__).resolve().parent.parent / "demo.yaml"
DEMO_SERVICE = "demo-service"


@dataclass(frozen=True)
class DemoLoaded:
    report: ImportReport | None  # None when the database was configured already and the demo was left out
    issued_key: IssuedKey | None  # None when the demo service already had an active key (or was not loaded)

    def lines(self) -> list[str]:
        if self.report is None:
            return [
                "not loaded: this database holds a configuration already (operations configured now or before), "
                "which the demo data never overwrites."
            ]
        return self.report.lines()


def configuration_ever_made() -> bool:
    """Whether an operation exists or ever existed here (everything else a configuration limits hangs off one;
    customers alone are also made by traffic, API keys and services by a first integration)."""
    if Operation.objects.exists():
        return True
    operation_type = ContentType.objects.get_for_model(Operation)
    return ChangeEvent.objects.filter(content_type=operation_type).exists()


def demo_load(*, force: bool = False) -> DemoLoaded:
    """Into an empty database: import demo.yaml and give the demo service a key if it has none. Into one that holds
    a configuration: nothing, unless `force` (then demo.yaml is imported over it: what the demo names is set back to
    the demo's values, nothing else is touched)."""
    with transaction.atomic():
        if not force and configuration_ever_made():
            return DemoLoaded(report=None, issued_key=None)
        report = config_import(document=config_yaml_load(DEMO_PATH.read_text(encoding="utf-8")))
        service = Service.objects.get(name=DEMO_SERVICE)
        issued = None
        if not service.api_keys.filter(revoked_at__isnull=True).exists():
            issued = api_key_create(service=service, name="demo")
    return DemoLoaded(report=report, issued_key=issued)
