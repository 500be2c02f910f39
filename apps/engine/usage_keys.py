"""Usage keys: one hash per customer x operation x service x key prefix x UTC minute, and the minute index
(keys.py's docstring has the layout; KeyLayout mixes this in)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import unquote

from apps.engine.key_text import enc
from apps.engine.types import InvalidCheck

if TYPE_CHECKING:
    from apps.engine.types import CheckItem


class UsageKeyParts(NamedTuple):
    """What a usage key names (KeyLayout.parse_usage)."""

    customer: str
    operation: str
    service: str
    api_key: str
    minute: int


def _usage_dimensions(service: str, api_key: str) -> str:
    """The "s=<service>:k=<key>:" part of a usage key, each left out when empty (the module docstring)."""
    return (f"s={enc(service)}:" if service else "") + (f"k={enc(api_key)}:" if api_key else "")


class UsageKeys:
    """Builds and parses the usage keys of one prefix (mixed into KeyLayout)."""

    prefix: str

    def usage_base(self, item: CheckItem) -> str:
        """The usage key of `item` without its minute (the script appends the minute of Redis time)."""
        base = f"{self.prefix}:u:{{c={enc(item.customer)}}}:{enc(item.operation)}:"
        return base + _usage_dimensions(item.service, item.api_key) if item.service or item.api_key else base

    def usage_key(self, customer: str, operation: str, minute: int, service: str = "", api_key: str = "") -> str:
        """The usage hash of one customer x operation x service x key prefix x UTC minute (epoch_ms // 60000)."""
        return f"{self.prefix}:u:{{c={enc(customer)}}}:{enc(operation)}:{_usage_dimensions(service, api_key)}{minute}"

    def usage_index_key(self, minute: int) -> str:
        """The set listing the usage keys written during `minute`."""
        return f"{self.prefix}:ui:{minute}"

    def parse_usage_key(self, key: str) -> tuple[str, str, int]:
        """Split a usage key into (customer, operation, minute)."""
        parts = self.parse_usage(key)
        return parts.customer, parts.operation, parts.minute

    def parse_usage(self, key: str) -> UsageKeyParts:
        """A usage key's customer, operation, service, key prefix and minute ("" for a part it leaves out)."""
        head = f"{self.prefix}:u:{{c="
        if not key.startswith(head):
            raise InvalidCheck(f"not a usage key: {key!r}")
        customer, rest = key[len(head) :].split("}:", 1)
        operation, *middle, minute = rest.split(":")
        got = {part[:2]: unquote(part[2:]) for part in middle}
        if len(got) != len(middle) or not set(got) <= {"s=", "k="}:
            raise InvalidCheck(f"not a usage key: {key!r}")
        return UsageKeyParts(unquote(customer), unquote(operation), got.get("s=", ""), got.get("k=", ""), int(minute))

    def is_away_usage_key(self, key: str) -> bool:
        """A usage hash tagged by an IP or a limit (a cluster slot's part of a check): records only."""
        return key.startswith(f"{self.prefix}:u:{{") and not key.startswith(f"{self.prefix}:u:{{c=")

    def parse_away_usage_key(self, key: str) -> tuple[str, int]:
        """(operation, minute) of an away usage hash `<prefix>:u:{<tag>}:<operation>:<minute>`."""
        parts = key.split("}:", 1)[1].split(":")
        return unquote(parts[0]), int(parts[-1])
