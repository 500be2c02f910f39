"""Reading and writing the configuration's YAML: only what the format needs, nothing a document can blow up."""

import pytest

from apps.limits.config_io import ConfigInvalid, config_yaml_dump, config_yaml_load
from apps.limits.config_io.yaml_io import MAX_DEPTH, MAX_DOCUMENT_BYTES, MAX_NODES, config_yaml_read


def refusal(text: str) -> list[str]:
    with pytest.raises(ConfigInvalid) as caught:
        config_yaml_load(text)
    return caught.value.errors


def test_an_anchor_is_refused_naming_its_line_and_column() -> None:
    errors = refusal("operations:\n  - {name: Op, description: &text hello}\n")

    assert errors == [
        "line 2, column 29: anchors and aliases (&name, *name) are not allowed in a configuration "
        "file; write each value out in full"
    ]


def test_an_alias_to_an_anchor_is_refused_at_the_anchor() -> None:
    errors = refusal("plans: [{name: &p free}]\ncustomers: [{id: a, plan: *p}]\n")

    assert errors[0].startswith("line 1, column 16: anchors and aliases")


def test_the_deepest_document_the_format_needs_loads() -> None:
    text = "limits:\n  - {name: x, key_by: [customer], match: {tier: gold}}\n"

    assert config_yaml_load(text) == {"limits": [{"name": "x", "key_by": ["customer"], "match": {"tier": "gold"}}]}
    assert MAX_DEPTH >= 4


def test_a_document_nested_deeper_than_the_cap_is_refused() -> None:
    errors = refusal("limits: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))

    assert errors == [f"line 1, column {MAX_DEPTH + 8}: nested deeper than {MAX_DEPTH} levels"]


def test_a_document_with_more_values_than_the_cap_is_refused() -> None:
    errors = refusal("limits: [" + "0, " * MAX_NODES + "0]")

    assert errors == [
        f"the file has more than {MAX_NODES:,} values; split it (a file may hold only some of the sections)"
    ]


def test_a_number_longer_than_any_value_the_format_holds_is_refused() -> None:
    errors = refusal("limits: [{limit: " + "9" * 101 + "}]")

    assert errors == [
        "line 1, column 18: a number of 101 characters is longer than any value a configuration file holds"
    ]


def test_the_export_never_writes_anchors_even_for_values_it_shares() -> None:
    shared = ["customer", "resource"]
    document = {"limits": [{"name": "a", "key_by": shared}, {"name": "b", "key_by": shared}]}

    text = config_yaml_dump(document)

    assert "&" not in text
    assert "*" not in text
    assert config_yaml_load(text) == document


def test_reading_stops_one_byte_past_the_cap() -> None:
    class Endless:
        requested: list[int] = []

        def read(self, size: int) -> bytes:
            self.requested.append(size)
            return b"#" * size

    stream = Endless()
    with pytest.raises(ConfigInvalid, match="the file is larger than 2 MiB"):
        config_yaml_read(stream)

    assert stream.requested == [MAX_DOCUMENT_BYTES + 1]


def test_reading_refuses_text_that_is_not_utf8() -> None:
    import io

    with pytest.raises(ConfigInvalid, match="the file is not UTF-8 text"):
        config_yaml_read(io.BytesIO("名前".encode("utf-16")))
