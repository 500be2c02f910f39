"""A file with any invalid entry is refused whole, and the message names the entry and the key."""

import pytest

from apps.engine.registry import ALGORITHM_NAMES
from apps.limits.config_io import ConfigInvalid, config_import, config_yaml_load
from apps.limits.models import Limit, Operation
from tests.limits.config_io.helpers import import_text, refusal, row_counts
from tests.limits.factories import LimitFactory, OperationFactory

pytestmark = pytest.mark.django_db

GOOD_AND_ONE_BAD = """
operations: [{name: ModifyShardCount}, {name: PutRecords}]
customers: [{id: acct-1}]
limits:
  - {name: good, operation: ModifyShardCount, algorithm: calendar, limit: 10, period: day}
  - {name: also-good, operation: PutRecords, algorithm: token_bucket, limit: 1000, period: second}
  - {name: foo, operation: PutRecords, algorithm: fixed_window, limit: 5, period: month}
"""


def limit_yaml(**keys: object) -> str:
    entry = {"name": "x", "operation": "Op", "algorithm": "fixed_window", "limit": 10, "period": "minute", **keys}
    body = ", ".join(f"{key}: {value}" for key, value in entry.items())
    return f"operations: [{{name: Op}}]\nlimits: [{{{body}}}]"


def test_it_writes_nothing_when_one_entry_is_invalid() -> None:
    before = row_counts()

    message = refusal(GOOD_AND_ONE_BAD)

    assert "limits[2] (name: foo): period: month is a calendar period" in message
    assert "nothing was written" in message
    assert row_counts() == before


def test_it_lists_every_invalid_entry_not_only_the_first() -> None:
    text = """
limits:
  - {name: a, operation: Op, algorithm: fixed_window, limit: 0, period: minute}
  - {name: b, operation: Op, algorithm: sliding, limit: 1, period: minute}
operations: [{name: Op}]
"""
    with pytest.raises(ConfigInvalid) as caught:
        import_text(text)

    assert caught.value.errors == [
        "limits[0] (name: a): limit: must be at least 1, not 0",
        f"limits[1] (name: b): algorithm: “sliding” is not one of {', '.join(ALGORITHM_NAMES)}",
    ]


def test_a_month_period_is_refused_for_a_window_algorithm_because_it_is_a_calendar_period() -> None:
    message = refusal(limit_yaml(period="month"))

    assert "limits[0] (name: x): period: month is a calendar period" in message


def test_a_period_in_seconds_is_refused_for_a_calendar_limit() -> None:
    message = refusal(limit_yaml(algorithm="calendar", period=86400))

    assert "limits[0] (name: x): period: a calendar limit counts per day, week or month, not 86400" in message


def test_an_unknown_period_name_is_refused() -> None:
    message = refusal(limit_yaml(period="fortnight"))

    assert "period: “fortnight” is neither whole seconds nor one of second, minute, hour, day, week, month" in message


def test_an_unknown_key_inside_an_entry_is_refused() -> None:
    message = refusal(limit_yaml(quantity=5))

    assert "limits[0] (name: x): quantity: unknown key; the keys are name, description, operation" in message


def test_an_unknown_section_is_refused() -> None:
    message = refusal("operations: []\nlimit: []")

    assert "unknown section “limit”; the sections are operations, plans, customers, limits" in message


def test_a_section_that_is_not_a_list_is_refused() -> None:
    message = refusal("limits:\n")

    assert "limits: must be a list ([] for none), not null" in message


def test_a_file_that_is_not_a_mapping_is_refused() -> None:
    message = refusal("- name: x")

    assert "the file must be a mapping of sections" in message


def test_a_reference_to_an_operation_neither_in_the_file_nor_the_database_is_refused() -> None:
    message = refusal("limits: [{name: x, operation: Nowhere, algorithm: fixed_window, limit: 1, period: 60}]")

    assert (
        "limits[0] (name: x): operation: unknown operation “Nowhere”: "
        "neither the operations section nor the database has it"
    ) in message


def test_a_reference_to_an_operation_already_in_the_database_is_accepted() -> None:
    OperationFactory(name="Existing")

    import_text("limits: [{name: x, operation: Existing, algorithm: fixed_window, limit: 1, period: 60}]")

    assert Limit.objects.get().operation.name == "Existing"


def test_a_reference_to_an_operation_the_same_file_defines_later_is_accepted() -> None:
    import_text(limit_yaml(name="later").replace("operations: [{name: Op}]\n", "") + "\noperations: [{name: Op}]")

    assert Limit.objects.get().operation.name == "Op"


def test_a_reference_to_an_unknown_api_key_is_refused() -> None:
    message = refusal("access_rules: [{action: deny, api_key_prefix: qp_00000000}]")

    assert "access_rules[0] (action: deny, api_key_prefix: qp_00000000): api_key_prefix: " in message
    assert "unknown API key prefix “qp_00000000”" in message


def test_a_naive_datetime_is_refused() -> None:
    text = "access_rules: [{action: deny, ip: 192.0.2.1, expires: 2030-01-01T00:00:00}]"

    message = refusal(text)

    assert "access_rules[0] (action: deny, ip: 192.0.2.1): expires: “2030-01-01T00:00:00” has no UTC offset" in message


def test_a_date_without_a_time_is_refused_as_naive() -> None:
    message = refusal("access_rules: [{action: deny, ip: 192.0.2.1, expires: 2030-01-01}]")

    assert "expires: “2030-01-01T00:00:00” has no UTC offset" in message


def test_text_that_is_not_a_date_is_refused_where_a_date_is_expected() -> None:
    message = refusal("access_rules: [{action: deny, ip: 192.0.2.1, expires: soon}]")

    assert "expires: “soon” is not an ISO 8601 date and time" in message


def test_bad_yaml_syntax_is_refused_with_its_line_and_column() -> None:
    message = refusal("operations:\n  - {name: Op\nlimits: []\n")

    assert "not valid YAML: line 3, column 7" in message


def test_a_key_repeated_in_one_mapping_is_refused() -> None:
    message = refusal("operations: [{name: A, name: B}]")

    assert "not valid YAML: line 1, column 24: the key “name” appears twice" in message


def test_a_wrong_type_is_refused_with_the_type_found() -> None:
    message = refusal(limit_yaml(limit="ten"))

    assert "limits[0] (name: x): limit: must be a whole number, not text" in message


def test_a_number_where_text_is_expected_is_refused_with_a_hint_to_quote_it() -> None:
    message = refusal("customers: [{id: 123456789012}]")

    assert 'customers[0] (id: 123456789012): id: must be text, not a number (put it in quotes: "123456789012")' in (
        message
    )


def test_a_missing_required_key_is_refused() -> None:
    message = refusal("operations: [{name: Op}]\nlimits: [{name: x, operation: Op, algorithm: calendar, period: day}]")

    assert "limits[0] (name: x): limit: required" in message


def test_an_entry_that_is_not_a_mapping_is_refused() -> None:
    message = refusal("operations: [Op]")

    assert "operations[0]: must be a mapping of keys, not text" in message


def test_two_entries_with_the_same_identity_are_refused() -> None:
    message = refusal("operations: [{name: Op}, {name: Other}, {name: Op, description: again}]")

    assert "operations[2] (name: Op): the same entry as operations[0]" in message


def test_a_model_validation_error_names_the_entry_and_the_key_of_the_file() -> None:
    with pytest.raises(ConfigInvalid) as caught:
        import_text(limit_yaml(burst=5, unit="bad unit") + "\ncustomers: [{id: acct-1, timezone: Mars/Olympus}]")

    assert caught.value.errors == [
        "customers[0] (id: acct-1): timezone: “Mars/Olympus” is not a known time zone; use an IANA name such as "
        "Europe/Berlin or UTC.",
        "limits[0] (name: x): burst: Burst is only for token bucket, leaky bucket and GCRA limits.",
        "limits[0] (name: x): unit: The unit must be a short name such as requests, records or bytes.",
    ]
    assert Operation.objects.count() == 0


def test_a_rule_that_matches_nothing_is_refused_without_a_key() -> None:
    message = refusal("access_rules: [{action: allow, reason: nobody}]")

    assert "access_rules[0] (action: allow): A rule must match a customer, an IP or CIDR, or an API key." in message


def test_an_entry_referring_to_a_refused_entry_says_so() -> None:
    message = refusal(limit_yaml(operation="'bad name'").replace("{name: Op}", "{name: 'bad name'}"))

    assert "operations[0] (name: bad name): name: “bad name” may only contain letters" in message
    assert "limits[0] (name: x): refers to the operation “bad name”, which was refused" in message


def test_an_empty_file_changes_nothing() -> None:
    report = config_import(document=config_yaml_load(""))

    assert report.lines() == ["no changes"]


def test_an_error_quotes_a_couple_of_hundred_characters_of_a_long_value_with_its_start_and_end() -> None:
    value = "start-" + "x" * 10_000 + "-end"

    with pytest.raises(ConfigInvalid) as caught:
        import_text(limit_yaml(algorithm=value))

    [error] = caught.value.errors
    assert error.startswith("limits[0] (name: x): algorithm: “start-xxx")
    assert "…[9,810 characters left out]…" in error
    assert error.endswith(f"xxx-end” is not one of {', '.join(ALGORITHM_NAMES)}")
    assert len(error) < 400


def test_the_label_of_an_entry_quotes_its_name_shortened_too() -> None:
    with pytest.raises(ConfigInvalid) as caught:
        import_text(limit_yaml(name="n" * 5_000, limit=0))

    [error] = caught.value.errors
    assert error.startswith("limits[0] (name: nnn")
    assert error.endswith("nnn): limit: must be at least 1, not 0")
    assert len(error) < 300


def test_a_value_a_model_validator_quotes_whole_is_shortened_in_the_message() -> None:
    with pytest.raises(ConfigInvalid) as caught:
        import_text(f"customers: [{{id: acct-1, timezone: Mars/{'x' * 50_000}}}]")

    messages = [error for error in caught.value.errors if "timezone" in error]
    assert any(error.startswith("customers[0] (id: acct-1): timezone: “Mars/xxx") for error in messages), messages
    assert any(error.endswith("is not a known time zone; use an IANA name such as Europe/Berlin or UTC.")
               for error in messages), messages  # fmt: skip
    assert max(len(error) for error in caught.value.errors) < 700


def test_a_refusal_lists_the_first_hundred_problems_and_counts_the_rest() -> None:
    entries = "\n".join(f"  - {{name: op-{index}, colour: red}}" for index in range(250))

    with pytest.raises(ConfigInvalid) as caught:
        import_text(f"operations:\n{entries}")

    errors = caught.value.errors
    assert len(errors) == 101
    assert errors[0] == "operations[0] (name: op-0): colour: unknown key; the keys are name, description"
    assert errors[-1] == "… and 150 more problems like these; nothing was written"


EVERY_KIND_OF_MISTAKE = """
operations:
  - {name: Op1, descriptionx: a typo in a key}
  - {name: Op2}
limits:
  - {name: l1, operation: Op2, algorithm: fixed_window, limit: -5, period: minute}
  - {name: l2, operation: Op2, algorithm: sliding_window, limit: 10, period: minute, burst: 5}
  - {name: l3, operation: Op3, algorithm: fixed_window, limit: 10, period: minute}
  - {name: l4, operation: Op2, algorithm: concurrency, limit: 10, period: minute, sync_ms: 100}
  - {name: l1, operation: Op2, algorithm: fixed_window, limit: 5, period: minute}
"""


def test_one_run_lists_the_mistakes_of_every_kind_the_first_pass_and_the_models_find() -> None:
    before = row_counts()

    message = refusal(EVERY_KIND_OF_MISTAKE)

    # The first pass: an unknown key, a bad value, an unknown reference, a repeated entry.
    assert "operations[0] (name: Op1): descriptionx: unknown key" in message
    assert "limits[0] (name: l1): limit: must be at least 1, not -5" in message
    assert "limits[2] (name: l3): operation: unknown operation “Op3”" in message
    # The models' own checks of the entries that passed it, in the same run (they used to wait for a second one).
    assert "limits[1] (name: l2): burst: Burst is only for token bucket" in message
    assert "limits[3] (name: l4): sync_ms: Hybrid counting is for" in message
    assert row_counts() == before


def test_prune_problems_are_listed_with_the_others_in_sections_without_a_refused_entry() -> None:
    OperationFactory(name="Kept")
    LimitFactory(name="uses-kept", operation=Operation.objects.get(name="Kept"))
    text = """
operations: [{name: Op}]
customers: [{id: acct-1, timezone: Mars/Olympus}]
"""
    with pytest.raises(ConfigInvalid) as refused:
        import_text(text, prune=True)

    message = str(refused.value)
    assert "customers[0] (id: acct-1): timezone" in message
    assert "operations: cannot delete Kept: still used by limits uses-kept" in message


def test_an_operation_the_file_names_without_a_limit_is_warned_about() -> None:
    text = """
operations: [{name: ModifyShardCount}, {name: ModifyShardCuont}]
limits:
  - {name: daily, operation: ModifyShardCount, algorithm: calendar, limit: 10, period: day}
"""
    report = import_text(text, dry_run=True)

    assert report.warnings == [
        "operation “ModifyShardCuont” has no limit: checks on it are allowed and count against nothing"
    ]
    assert report.lines()[-1] == f"warning: {report.warnings[0]}"
    assert import_text("operations: [{name: ModifyShardCount}]\n" + text.split("\n", 2)[2]).warnings == []
    import_text(text)
    assert import_text(text).warnings == []  # importing it again changes nothing: no warning either
