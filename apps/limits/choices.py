"""The vocabulary of limits: modes, failure policies, rule actions, and what a key may be made of (the
algorithms: algorithms.py, from the engine registry)."""

from typing import Any

from django.db import models

from apps.common.validators import ATTRIBUTE_NAME_PATTERN
from apps.engine.registry import ALGORITHMS

# Named periods that are plain lengths of time for the non-calendar algorithms.
PERIOD_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
# service: the calling service (its name); api_key: the calling key (its prefix, never the secret).
KEY_BY_FIELDS = ("customer", "resource", "ip", "service", "api_key")
ATTRIBUTE_KEY_PREFIX = "attr:"
DEFAULT_KEY_BY = ["customer", "resource"]


# Every registered algorithm as a choice, its member named by its upper-cased name: built from the registry, so
# no algorithm is spelled here. Code that treats some algorithms apart asks their entry (Limit.entry) what they
# are, never their name. (A functional enum: mypy cannot see members made from data.)
Algorithm = models.TextChoices(  # type: ignore[call-overload]
    "Algorithm", [(name.upper(), (name, entry.label)) for name, entry in ALGORITHMS.items()]
)


class CalendarPeriod(models.TextChoices):
    DAY = "day", "day"
    WEEK = "week", "week"
    MONTH = "month", "month"


class Mode(models.TextChoices):
    ENFORCE = "enforce", "enforce"
    SHADOW = "shadow", "shadow (count, never reject)"
    DISABLED = "disabled", "disabled"


class StoreFailurePolicy(models.TextChoices):
    OPEN = "open", "open: admit"
    CLOSED = "closed", "closed: refuse with 503"
    DATABASE = "database", "database: count in PostgreSQL (sub-minute limits: each instance's share)"
    LOCAL = "local", "local: enforce in process, limit ÷ instances"


class RuleAction(models.TextChoices):
    ALLOW = "allow", "allow (bypass limits)"
    DENY = "deny", "deny (always reject)"


class RuleSource(models.TextChoices):
    """Who owns an access rule: the admin (and the YAML import), or the external source document, whose refresh
    replaces its rules as a set (apps.toggles.services) and leaves the others alone."""

    ADMIN = "admin", "admin or YAML"
    EXTERNAL = "external", "external source"


def key_by_errors(key_by: Any) -> list[str]:
    if not isinstance(key_by, list):
        return ["Must be a list, for example [customer, resource]."]
    errors = []
    for entry in key_by:
        if not isinstance(entry, str):
            errors.append(f"“{entry}” is not text.")
        elif entry.startswith(ATTRIBUTE_KEY_PREFIX):
            if not ATTRIBUTE_NAME_PATTERN.match(entry[len(ATTRIBUTE_KEY_PREFIX) :]):
                errors.append(f"“{entry}”: after attr: comes an attribute name (letters, digits, _ . -; max 64).")
        elif entry not in KEY_BY_FIELDS:
            errors.append(f"“{entry}” is not one of customer, resource, ip, service, api_key or attr:<name>.")
    if len(set(map(str, key_by))) != len(key_by):
        errors.append("Each entry may appear only once.")
    return errors
