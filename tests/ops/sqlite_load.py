"""One process of the embedded default's write load on its SQLite file: `python -m tests.ops.sqlite_load ROLE SECONDS`.

Run with the embedded default's settings (no DATABASE_URL, VAR_DIR naming a migrated database). Each role does what
`make run`'s processes do to the database, back to back instead of every few seconds:

- ledger: a decision ledger round (decisions_write: usage minutes, rollup marks and the writer's heartbeat);
- rollup: the rollup_usage job (minutes into hours and days);
- admin: an operator saving a customer in the admin (read, then write, in one transaction, with its history);
- reader: the dashboard's and the usage pages' reads over the usage tables.

It prints one JSON line: operations done, those that failed on "database is locked", and any other error. With
`--stock`, the connection uses Django's stock SQLite options (no WAL, deferred transactions, a 5 s busy timeout):
the configuration the fix replaces, so the same load shows what it did before.
"""

from __future__ import annotations

import json
import os
import sys
import time

import django
from django.conf import settings

SENDING_CUSTOMERS = 20


def main(role: str, seconds: float, *, stock: bool) -> dict[str, object]:
    from django.db import OperationalError, close_old_connections, transaction

    from apps.customers.models import Customer
    from apps.enforcement.counters.recovery import Spending
    from apps.enforcement.ledger.pending import decisions_write
    from apps.usage.models import UsageMinute
    from apps.usage.services import DecisionCounts, usage_rollup

    pid = os.getpid()

    def ledger_round(n: int) -> None:
        minute = int(time.time() * 1000) // 60_000 - n % 3
        rows = [
            DecisionCounts(f"customer-{c}", "PutRecords", minute, allowed=n % 7 + 1, denied=n % 2, costs={"calls": 1})
            for c in range(SENDING_CUSTOMERS)
        ]
        decisions_write(rows, Spending(), writer=f"ledger-{pid}")

    def admin_save(n: int) -> None:
        with transaction.atomic():
            customer, _ = Customer.objects.get_or_create(external_id=f"admin-{pid}")
            customer.name = f"renamed {n}"
            customer.save()

    def read(n: int) -> None:
        list(UsageMinute.objects.values("customer").order_by("customer").distinct())
        UsageMinute.objects.filter(operation="PutRecords").count()

    step = {"ledger": ledger_round, "rollup": lambda n: usage_rollup(), "admin": admin_save, "reader": read}[role]
    done = locked = 0
    other: list[str] = []
    deadline = time.monotonic() + seconds
    n = 0
    while time.monotonic() < deadline:
        n += 1
        try:
            step(n)
            done += 1
        except OperationalError as error:
            if "database is locked" in str(error):
                locked += 1
            else:
                other.append(repr(error))
            close_old_connections()
    return {"role": role, "stock": stock, "done": done, "locked": locked, "other": other[:3]}


if __name__ == "__main__":
    stock = "--stock" in sys.argv
    role, seconds = [argument for argument in sys.argv[1:] if argument != "--stock"]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quota_platform.settings")
    if stock:
        settings.DATABASES["default"]["OPTIONS"] = {}
    django.setup()
    print(json.dumps(main(role, float(seconds), stock=stock)), flush=True)
