"""The decision log's key layout and entry parsing (apps/engine/decision_log.py)."""

from __future__ import annotations

import pytest

from apps.engine.decision_log import LOG_MATCH, LogEntry, log_key, log_key_of, log_match, parse_entry
from apps.engine.keys import KeyLayout


def test_the_stream_shares_the_hash_tag_of_the_counter() -> None:
    assert log_key("q", "c=acme") == "q:dlog:{c=acme}"
    assert log_key(KeyLayout("q"), "{n=x}") == "q:dlog:{n=x}"
    assert log_key_of("q", "q:c:{c=acme}:fw:per-minute:c=acme") == "q:dlog:{c=acme}"
    assert "q" + LOG_MATCH == log_match("q") == "q:dlog:*"


@pytest.mark.parametrize("tag", ["", "{}", "a{b", "a}b"])
def test_a_tag_with_braces_or_nothing_is_refused(tag: str) -> None:
    with pytest.raises(ValueError, match="not a hash tag"):
        log_key("q", tag)


def test_parse_entry_reads_every_field_as_its_type() -> None:
    fields = {
        "t": "1700000000123", "e": "allow", "c": "acme", "o": "search", "l": "per-minute", "a": "fixed_window",
        "k": "q:c:{c=acme}:fw:per-minute", "n": "3", "q": "100", "p": "60000", "b": "0", "w": "1700000000000",
        "g": "1", "m": "exact", "i": "host:12", "s": "", "x": "0",
    }  # fmt: skip
    entry = parse_entry("1700000000123-0", fields)
    assert entry == LogEntry(
        "1700000000123-0", 1700000000123, "allow", "acme", "search", "per-minute", "fixed_window",
        "q:c:{c=acme}:fw:per-minute", 3, 100, 60000, 0, 1700000000000, True, "exact", "host:12", "", 0,
    )  # fmt: skip
    assert entry.without_id().entry_id == ""
    assert entry.without_id().at_ms == entry.at_ms


def test_an_expire_entry_needs_only_its_few_fields() -> None:
    entry = parse_entry("5-1", {"t": "5", "e": "expire", "k": "q:c:{c=a}:cc:x", "s": "YQ.ff", "c": "a"})
    assert (entry.kind, entry.lease, entry.customer, entry.cost, entry.shadow) == ("expire", "YQ.ff", "a", 0, False)


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"e": "allow"}, "no time"), ({"t": "5"}, "no time"), ({"t": "x", "e": "allow"}, "invalid literal")],
)
def test_a_broken_entry_is_refused(fields: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_entry("1-0", fields)
