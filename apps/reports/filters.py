"""What a usage report covers: one value object shared by the admin form, the API, the command and jobs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from apps.reports.exports import export_filename
from apps.usage.models import UsageMinute

# Most names a report may list in customers, operations, services or API keys.
MAX_NAMES = 100
# The longest service name and key prefix usage rows hold.
SERVICE_LENGTH = UsageMinute._meta.get_field("service").max_length or 100
API_KEY_LENGTH = UsageMinute._meta.get_field("api_key").max_length or 16


@dataclass(frozen=True, slots=True)
class UsageFilters:
    """Rows of one granularity with start <= bucket < end; empty `customers`, `operations`, `services` (calling
    services' names; "" names checks made without one) or `api_keys` (key prefixes) means all."""

    granularity: str
    start: dt.datetime
    end: dt.datetime
    customers: tuple[str, ...] = ()
    operations: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    api_keys: tuple[str, ...] = ()

    def info(self, *, generated: dt.datetime | None = None) -> dict[str, object]:
        """The filters as an export states them (the JSON header, the XLSX "about" sheet)."""
        described: dict[str, object] = {
            "granularity": self.granularity,
            "from": self.start.astimezone(dt.UTC).isoformat(),
            "to": self.end.astimezone(dt.UTC).isoformat(),
            "customers": list(self.customers),
            "operations": list(self.operations),
            "services": list(self.services),
            "api_keys": list(self.api_keys),
        }
        if generated is not None:
            described["generated"] = generated.astimezone(dt.UTC).isoformat()
        return described

    def filename(self, fmt: str) -> str:
        return export_filename(self.granularity, self.start, self.end, fmt)
