"""Names the configuration does not know: say so in the answer, and keep them from growing the database.

Any service key can name customers and operations no one configured. An unknown operation is answered
(no limit names it) with `warnings: ["unknown_operation"]`, or refused with 404 under
QUOTA_UNKNOWN_OPERATIONS=reject; an unknown customer gets the limits for everyone and the warning
"unknown_customer". Each new name becomes rows (a customer, usage per minute), so one service may bring
in at most QUOTA_NEW_NAMES_PER_SERVICE_DAY of them per UTC day (Store.name_admit: one set per service
and day in Redis, one extra round trip the first time a process sees a name that day); past that, a
check's new names are replaced by OTHER_NAME, so they are counted (and limited) together, and the
answer warns "new_names_over_budget". Dry runs write nothing, so they neither spend nor need the budget.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence

from django.conf import settings

from apps.apikeys.selectors import ApiPrincipal
from apps.common import metrics
from apps.common.exceptions import NotFound
from apps.enforcement.counters.guarded_store import engine_call
from apps.engine import CheckItem
from apps.engine.name_budget import MemoryNameBudget
from apps.limits.snapshot import Snapshot

OTHER_NAME = "(other)"
DAY_NS = 86_400 * 10**9
UNKNOWN_OPERATION, UNKNOWN_CUSTOMER, OVER_BUDGET = "unknown_operation", "unknown_customer", "new_names_over_budget"
WARNING_BY_KIND = {"operation": UNKNOWN_OPERATION, "customer": UNKNOWN_CUSTOMER}
OTHERS = {f"{kind}:{OTHER_NAME}" for kind in WARNING_BY_KIND}  # the shared name is never refused

# While Redis is unreachable each process counts on its own (the store counts for all of them otherwise).
fallback_budget = MemoryNameBudget()
# Names this process saw admitted, by UTC day: a name costs the store one call per process and day.
MAX_REMEMBERED = 100_000
_remembered: set[tuple[int, str, str]] = set()


def names_checked(
    principal: ApiPrincipal, items: Sequence[CheckItem], snapshot: Snapshot
) -> list[tuple[CheckItem, tuple[str, ...]]]:
    """Each item with its new names past the budget replaced by OTHER_NAME, and the warnings for its
    answer; at most one store call for all of them. Raises NotFound (404 unknown_operation) for an
    unknown operation under QUOTA_UNKNOWN_OPERATIONS=reject, before anything is counted."""
    news = [_new_names(item, snapshot) for item in items]
    if not any(news):  # every name is configured: nothing to warn about, no budget to ask
        return [(item, ()) for item in items]
    if settings.QUOTA_UNKNOWN_OPERATIONS == "reject":
        for item, new in zip(items, news, strict=True):
            if "operation" in new:
                raise NotFound(
                    f"No operation named “{item.operation}” is configured; ask an operator to add it.",
                    code=UNKNOWN_OPERATION,
                )
    wanted = {
        f"{kind}:{name}"
        for item, new in zip(items, news, strict=True)
        if not item.dry_run
        for kind, name in new.items()
    }
    refused = _refused(principal.service, wanted)
    return [_checked(item, new, refused) for item, new in zip(items, news, strict=True)]


def _new_names(item: CheckItem, snapshot: Snapshot) -> dict[str, str]:
    new = {}
    if item.operation not in snapshot.operations:
        new["operation"] = item.operation
    if item.customer not in snapshot.customers:
        new["customer"] = item.customer
    return new


def _checked(item: CheckItem, new: dict[str, str], refused: set[str]) -> tuple[CheckItem, tuple[str, ...]]:
    warnings = [WARNING_BY_KIND[kind] for kind in ("operation", "customer") if kind in new]
    if item.dry_run:  # writes nothing, so it needs no budget
        return item, tuple(warnings)
    over = {kind: OTHER_NAME for kind, name in new.items() if f"{kind}:{name}" in refused}
    if over:
        item = dataclasses.replace(
            item, operation=over.get("operation", item.operation), customer=over.get("customer", item.customer)
        )
        warnings.append(OVER_BUDGET)
    return item, tuple(warnings)


def _refused(service: str, wanted: set[str]) -> set[str]:
    """Which of `wanted` the service's budget refuses today; names this process saw admitted cost nothing."""
    day = time.time_ns() // DAY_NS
    asked = sorted(name for name in wanted if (day, service, name) not in _remembered and name not in OTHERS)
    if not asked:
        return set()
    per_day = settings.QUOTA_NEW_NAMES_PER_SERVICE_DAY
    answers = engine_call(
        lambda store: store.names_admit(service, asked, per_day),
        fallback=lambda: fallback_budget.admit(service, asked, per_day),
    )
    if len(_remembered) >= MAX_REMEMBERED:
        _remembered.clear()  # a flood of names: start over (each costs one store call again)
    _remembered.update((day, service, name) for name, ok in zip(asked, answers, strict=True) if ok)
    refused = {name for name, ok in zip(asked, answers, strict=True) if not ok}
    for name in refused:
        metrics.new_name_over_budget(service=service, kind=name.split(":", 1)[0])
    return refused
