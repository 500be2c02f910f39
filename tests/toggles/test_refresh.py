import datetime as dt
import json
import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.limits.models import Override
from apps.limits.snapshot import config_version_current, snapshot_build
from apps.ops.tasks import refresh_toggles_task
from apps.toggles.models import FeatureToggle, ToggleSource
from apps.toggles.services import toggles_refresh
from tests.customers.factories import CustomerFactory
from tests.limits.factories import LimitFactory
from tests.toggles.factories import FeatureToggleFactory, LocalHttpSource

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("toggles_settings")]

STARTS = "2026-01-01T00:00:00+00:00"
DOCUMENT: dict[str, Any] = {
    "toggles": [
        {"name": "new-ui", "enabled": True, "payload": {"pct": 10}, "description": "the new dashboard"},
        {"name": "bulk-export", "enabled": False},
    ],
    "overrides": [
        {"customer": "acct-1", "limit": "daily", "quantity": 100, "reason": "VIP"},
        {"customer": "acct-1", "limit": "daily", "resource": "stream-1", "unlimited": True, "starts": STARTS},
    ],
}


@pytest.fixture(autouse=True)
def configuration() -> None:
    LimitFactory(name="daily", quantity=10)
    CustomerFactory(external_id="acct-1")


@pytest.fixture
def lkg_path(settings) -> Path:  # type: ignore[no-untyped-def]
    return settings.QUOTA_TOGGLES_LKG_PATH


@pytest.fixture
def source_file(tmp_path: Path) -> Path:
    return tmp_path / "source" / "toggles.json"


@pytest.fixture
def local_source() -> Iterator[LocalHttpSource]:
    with LocalHttpSource() as source:
        yield source


def write(path: Path, document: Any) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return str(path)


def toggles_state() -> dict[str, tuple[bool, Any, str]]:
    return {toggle.name: (toggle.enabled, toggle.payload, toggle.source) for toggle in FeatureToggle.objects.all()}


def overrides_state() -> list[tuple[str, int | None, bool, str]]:
    return sorted((o.resource, o.quantity, o.unlimited, o.reason) for o in Override.objects.all())


def row_stamps() -> list[dt.datetime]:
    toggles = FeatureToggle.objects.order_by("name").values_list("updated_at", flat=True)
    overrides = Override.objects.order_by("resource").values_list("updated_at", flat=True)
    return [*toggles, *overrides]


def closed_local_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- applying a document ---------------------------------------------------------------------


def test_a_file_source_creates_external_toggles_and_overrides(source_file: Path) -> None:
    report = toggles_refresh(source=write(source_file, DOCUMENT))

    assert toggles_state() == {
        "new-ui": (True, {"pct": 10}, ToggleSource.EXTERNAL),
        "bulk-export": (False, None, ToggleSource.EXTERNAL),
    }
    assert FeatureToggle.objects.get(name="new-ui").description == "the new dashboard"
    assert overrides_state() == [("", 100, False, "VIP"), ("stream-1", None, True, "")]
    assert Override.objects.get(resource="stream-1").starts == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert (report.fetched_ok, report.used_last_known_good, report.error) == (True, False, None)
    assert (report.toggles_created, report.toggles_updated, report.toggles_disabled) == (2, 0, 0)
    assert (report.overrides_created, report.overrides_updated) == (2, 0)


def test_the_applied_document_becomes_the_last_known_good_file(source_file: Path, lkg_path: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))

    assert json.loads(lkg_path.read_text()) == DOCUMENT
    assert [path.name for path in lkg_path.parent.iterdir()] == ["toggles-lkg.json"]  # no temporary file left


def test_a_last_known_good_file_that_cannot_be_written_is_reported_but_the_document_is_applied(
    source_file: Path, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")

    report = toggles_refresh(source=write(source_file, DOCUMENT), lkg_path=blocker / "toggles-lkg.json")

    assert report.fetched_ok
    assert report.error.startswith(f"applied, but the last-known-good file {blocker / 'toggles-lkg.json'} could not")
    assert set(toggles_state()) == {"new-ui", "bulk-export"}


def test_the_source_and_last_known_good_path_come_from_the_settings(settings, source_file: Path) -> None:  # type: ignore[no-untyped-def]
    settings.QUOTA_TOGGLES_SOURCE = write(source_file, DOCUMENT)

    report = toggles_refresh()

    assert report.source == str(source_file)
    assert settings.QUOTA_TOGGLES_LKG_PATH.exists()


def test_a_changed_document_updates_by_name_and_by_override_identity(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))
    changed = json.loads(json.dumps(DOCUMENT))
    changed["toggles"][0]["enabled"] = False
    changed["overrides"][1] = {**changed["overrides"][1], "unlimited": False, "quantity": 5}

    report = toggles_refresh(source=write(source_file, changed))

    assert toggles_state()["new-ui"] == (False, {"pct": 10}, ToggleSource.EXTERNAL)
    assert overrides_state() == [("", 100, False, "VIP"), ("stream-1", 5, False, "")]
    assert (report.toggles_created, report.toggles_updated) == (0, 1)
    assert (report.overrides_created, report.overrides_updated) == (0, 1)


def test_a_payload_of_true_replacing_1_is_a_change(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, {"toggles": [{"name": "beta", "enabled": True, "payload": 1}]}))

    report = toggles_refresh(
        source=write(source_file, {"toggles": [{"name": "beta", "enabled": True, "payload": True}]})
    )

    assert report.toggles_updated == 1
    assert FeatureToggle.objects.get(name="beta").payload is True


def test_a_toggle_made_in_the_admin_is_taken_over_by_the_source(source_file: Path) -> None:
    FeatureToggleFactory(name="new-ui", enabled=False, description="made by hand", source=ToggleSource.ADMIN)

    report = toggles_refresh(source=write(source_file, {"toggles": [{"name": "new-ui", "enabled": True}]}))

    toggle = FeatureToggle.objects.get(name="new-ui")
    assert (toggle.enabled, toggle.description, toggle.source) == (True, "", ToggleSource.EXTERNAL)
    assert report.toggles_updated == 1


def test_an_external_toggle_the_source_drops_is_switched_off_and_kept(source_file: Path) -> None:
    FeatureToggleFactory(name="old-flag", enabled=True, source=ToggleSource.EXTERNAL)
    FeatureToggleFactory(name="hand-made", enabled=True, source=ToggleSource.ADMIN)

    report = toggles_refresh(source=write(source_file, {"toggles": [{"name": "new-ui", "enabled": True}]}))

    assert toggles_state() == {
        "old-flag": (False, None, ToggleSource.EXTERNAL),
        "hand-made": (True, None, ToggleSource.ADMIN),
        "new-ui": (True, None, ToggleSource.EXTERNAL),
    }
    assert (report.toggles_created, report.toggles_disabled) == (1, 1)


def test_a_document_without_a_toggles_key_leaves_the_toggles_alone(source_file: Path) -> None:
    FeatureToggleFactory(name="old-flag", enabled=True, source=ToggleSource.EXTERNAL)

    report = toggles_refresh(source=write(source_file, {"overrides": DOCUMENT["overrides"]}))

    assert toggles_state() == {"old-flag": (True, None, ToggleSource.EXTERNAL)}
    assert (report.overrides_created, report.toggles_disabled) == (2, 0)


def test_overrides_the_source_no_longer_lists_are_kept(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))

    toggles_refresh(source=write(source_file, {"overrides": []}))

    assert len(overrides_state()) == 2


def test_the_report_carries_the_time_it_was_given(source_file: Path) -> None:
    now = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)

    report = toggles_refresh(source=write(source_file, {}), now=now)

    assert report.as_dict()["refreshed_at"] == "2026-03-01T12:00:00+00:00"


def test_with_no_source_configured_nothing_happens(lkg_path: Path) -> None:
    write(lkg_path, DOCUMENT)

    report = toggles_refresh()

    assert (report.source, report.fetched_ok, report.used_last_known_good, report.error) == ("", False, False, None)
    assert not FeatureToggle.objects.exists()


# --- publishing: idempotence and the config version ----------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_unchanged_document_changes_no_row_and_leaves_the_config_version_alone(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))
    stamps, version = row_stamps(), config_version_current()

    report = toggles_refresh(source=write(source_file, DOCUMENT))

    assert row_stamps() == stamps
    assert config_version_current() == version
    assert not report.changed
    assert report.config_version == version


@pytest.mark.django_db(transaction=True)
def test_a_change_at_the_source_is_published_within_one_refresh(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))
    before = config_version_current()
    changed = json.loads(json.dumps(DOCUMENT))
    changed["toggles"][0]["payload"] = {"pct": 50}

    report = toggles_refresh(source=write(source_file, changed))

    assert config_version_current() > before
    assert report.config_version == config_version_current()
    assert snapshot_build().toggles["new-ui"].payload == {"pct": 50}


@pytest.mark.django_db(transaction=True)
def test_applying_the_same_last_known_good_again_leaves_the_config_version_alone(
    source_file: Path, lkg_path: Path
) -> None:
    write(lkg_path, DOCUMENT)
    missing = str(source_file.parent / "missing.json")
    toggles_refresh(source=missing)
    stamps, version = row_stamps(), config_version_current()

    report = toggles_refresh(source=missing)

    assert report.used_last_known_good
    assert not report.changed
    assert (row_stamps(), config_version_current()) == (stamps, version)


# --- the source fails: last-known-good --------------------------------------------------------


def test_a_missing_source_file_falls_back_to_the_last_known_good_file(source_file: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))
    FeatureToggle.objects.filter(name="new-ui").update(enabled=False)  # drifted since
    source_file.unlink()

    report = toggles_refresh(source=str(source_file))

    assert toggles_state()["new-ui"] == (True, {"pct": 10}, ToggleSource.EXTERNAL)
    assert (report.fetched_ok, report.used_last_known_good) == (False, True)
    assert report.toggles_updated == 1
    assert report.error == f"source: cannot read {source_file}: No such file or directory"


def test_a_closed_local_port_falls_back_to_the_last_known_good_file(settings, lkg_path: Path) -> None:  # type: ignore[no-untyped-def]
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = True
    write(lkg_path, DOCUMENT)
    port = closed_local_port()

    report = toggles_refresh(source=f"http://127.0.0.1:{port}/toggles.json")

    assert report.used_last_known_good
    assert report.error == f"source: cannot reach http://127.0.0.1:{port}/toggles.json: connection refused"
    assert set(toggles_state()) == {"new-ui", "bulk-export"}


def test_without_a_last_known_good_file_a_failed_source_changes_nothing(source_file: Path, lkg_path: Path) -> None:
    report = toggles_refresh(source=str(source_file))

    assert not FeatureToggle.objects.exists()
    assert (report.fetched_ok, report.used_last_known_good) == (False, False)
    assert report.error.endswith(f"no last-known-good file at {lkg_path} yet, so nothing changed")


def test_a_source_back_after_an_outage_is_applied(source_file: Path, lkg_path: Path) -> None:
    write(lkg_path, DOCUMENT)
    toggles_refresh(source=str(source_file))
    changed = {"toggles": [{"name": "new-ui", "enabled": False}]}

    report = toggles_refresh(source=write(source_file, changed))

    assert report.fetched_ok
    assert toggles_state() == {
        "new-ui": (False, None, ToggleSource.EXTERNAL),
        "bulk-export": (False, None, ToggleSource.EXTERNAL),
    }
    assert json.loads(lkg_path.read_text()) == changed


def test_an_unreadable_last_known_good_file_is_reported_and_nothing_changes(source_file: Path, lkg_path: Path) -> None:
    write(lkg_path, "{broken")

    report = toggles_refresh(source=str(source_file))

    assert not report.used_last_known_good
    assert "the last-known-good file" in report.error
    assert report.error.endswith("was refused too, nothing changed: not valid JSON: line 1, column 2: "
                                 "Expecting property name enclosed in double quotes")  # fmt: skip
    assert not FeatureToggle.objects.exists()


# --- invalid documents ------------------------------------------------------------------------


def test_an_invalid_document_keeps_the_last_known_good_and_names_the_entries(source_file: Path, lkg_path: Path) -> None:
    toggles_refresh(source=write(source_file, DOCUMENT))
    good = lkg_path.read_text()
    invalid = {
        "toggles": [{"name": "brand-new", "enabled": True}, {"name": "beta", "enabled": "yes"}],
        "overrides": [{"customer": "nobody", "limit": "daily", "quantity": 1}],
    }

    report = toggles_refresh(source=write(source_file, invalid))

    assert report.error == (
        "source: toggles[1] (name: beta): enabled: must be true or false, not text; "
        "overrides[0] (customer: nobody, limit: daily): customer: unknown customer “nobody”: "
        "neither the customers section nor the database has it"
    )
    assert (report.fetched_ok, report.used_last_known_good) == (False, True)
    assert "brand-new" not in toggles_state()
    assert lkg_path.read_text() == good


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ("[1, 2", "not valid JSON: line 1, column 6: Expecting ',' delimiter"),
        (
            '{"toggles": [{"name": "b", "enabled": true, "payload": NaN}]}',
            "not valid JSON: NaN is not a JSON value",
        ),
        ('["toggles"]', "the document must be a JSON object with toggles, overrides and access_rules, not a list"),
        ({"toggle": []}, "unknown key “toggle”; the keys are toggles, overrides, access_rules"),
        ({"toggles": {}}, "toggles: must be a list ([] for none), not a mapping"),
        ({"toggles": ["beta"]}, "toggles[0]: must be an object with name and enabled, not text"),
        ({"toggles": [{"name": "beta"}]}, "toggles[0] (name: beta): enabled: required"),
        ({"toggles": [{"enabled": True}]}, "toggles[0]: name: required"),
        (
            {"toggles": [{"name": "beta", "enabled": True, "colour": "red"}]},
            "toggles[0] (name: beta): colour: unknown key; the keys are name, enabled, payload, description",
        ),
        (
            {"toggles": [{"name": "has space", "enabled": True}]},
            "toggles[0] (name: has space): name: “has space” may only contain letters, digits and _ . : - "
            "and must start with a letter or digit.",
        ),
        (
            {"toggles": [{"name": "beta", "enabled": True}, {"name": "beta", "enabled": False}]},
            "toggles[1] (name: beta): the same name as toggles[0]",
        ),
        (
            {"overrides": [{"customer": "acct-1", "limit": "daily", "quantity": 0}]},
            "overrides[0] (customer: acct-1, limit: daily): quantity: must be at least 1, not 0",
        ),
    ],
)
def test_an_invalid_document_is_refused_with_an_error_naming_the_entry_and_key(
    source_file: Path, document: Any, error: str
) -> None:
    report = toggles_refresh(source=write(source_file, document))

    assert report.error.startswith(f"source: {error}; no last-known-good file")
    assert not FeatureToggle.objects.exists()
    assert not Override.objects.exists()


def test_an_entry_that_breaks_a_model_rule_rolls_back_the_whole_document(source_file: Path) -> None:
    document = {
        "toggles": [{"name": "new-ui", "enabled": True}],
        "overrides": [{"customer": "acct-1", "limit": "daily", "quantity": 5, "unlimited": True}],
    }

    report = toggles_refresh(source=write(source_file, document))

    assert report.error.startswith(
        "source: overrides[0] (customer: acct-1, limit: daily): quantity: Leave the quantity empty for an unlimited"
    )
    assert not FeatureToggle.objects.exists()
    assert not Override.objects.exists()


def test_a_payload_the_database_cannot_store_is_refused_as_invalid(source_file: Path) -> None:
    report = toggles_refresh(source=write(source_file, {"toggles": [{"name": "b", "enabled": True, "payload": "\0"}]}))

    assert report.error.startswith("source: the database refused a value:")
    assert not FeatureToggle.objects.exists()


def test_a_document_over_the_size_cap_is_refused(source_file: Path) -> None:
    big = {"toggles": [{"name": "big", "enabled": True, "payload": "x" * (1024 * 1024)}]}

    report = toggles_refresh(source=write(source_file, big))

    assert "is larger than the 1 MiB a toggles document may have" in report.error
    assert not FeatureToggle.objects.exists()


# --- URL sources --------------------------------------------------------------------------------


def test_with_private_sources_allowed_a_local_http_source_is_fetched_once_and_applied(
    settings,  # type: ignore[no-untyped-def]
    local_source: LocalHttpSource,
) -> None:
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = True
    local_source.serve(DOCUMENT)

    report = toggles_refresh(source=local_source.url)

    assert local_source.connections == 1
    assert report.fetched_ok
    assert set(toggles_state()) == {"new-ui", "bulk-export"}


def test_with_private_sources_refused_a_loopback_url_is_refused_before_connecting(
    local_source: LocalHttpSource, lkg_path: Path
) -> None:
    local_source.serve(DOCUMENT)
    write(lkg_path, {"toggles": [{"name": "from-lkg", "enabled": True}]})

    report = toggles_refresh(source=f"https://localhost:{local_source.port}/toggles.json")

    assert local_source.connections == 0
    assert "a loopback address; refused" in report.error
    assert report.used_last_known_good
    assert set(toggles_state()) == {"from-lkg"}


def test_an_http_error_from_the_source_falls_back_to_the_last_known_good(
    settings,  # type: ignore[no-untyped-def]
    local_source: LocalHttpSource,
    lkg_path: Path,
) -> None:
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = True
    local_source.serve(status=500, body=b"oops")
    write(lkg_path, DOCUMENT)

    report = toggles_refresh(source=local_source.url)

    assert report.used_last_known_good
    assert report.error == f"source: {local_source.url} answered HTTP 500 Internal Server Error"


def test_the_report_names_a_url_source_without_its_query_string(
    settings,  # type: ignore[no-untyped-def]
    local_source: LocalHttpSource,
) -> None:
    settings.QUOTA_TOGGLES_ALLOW_PRIVATE = True

    report = toggles_refresh(source=f"{local_source.url}?token=secret")

    assert report.source == local_source.url
    assert local_source.requests == ["/toggles.json?token=secret"]


# --- report, log and task ---------------------------------------------------------------------


def test_the_refresh_logs_a_one_line_summary(source_file: Path) -> None:
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("apps.toggles.services")
    logger.addHandler(handler)
    try:
        toggles_refresh(source=write(source_file, DOCUMENT))
    finally:
        logger.removeHandler(handler)

    assert [record.getMessage() for record in records] == [
        f"toggles refresh from {source_file}: fetched and applied; toggles 2 created, 0 updated, 0 disabled; "
        f"overrides 2 created, 0 updated; access rules 0 created, 0 updated, 0 deleted; "
        f"config version {config_version_current()}"
    ]


def test_the_task_returns_the_report_as_a_dict(settings, source_file: Path) -> None:  # type: ignore[no-untyped-def]
    settings.QUOTA_TOGGLES_SOURCE = write(source_file, DOCUMENT)

    result = refresh_toggles_task.apply().get()

    assert json.loads(json.dumps(result)) == result
    assert result["source"] == str(source_file)
    assert (result["fetched_ok"], result["toggles_created"], result["overrides_created"]) == (True, 2, 2)
    assert result["error"] is None


def test_without_a_source_the_minutely_refresh_logs_nothing_at_info(caplog, tmp_path: Path) -> None:
    with caplog.at_level(logging.INFO, logger="apps.toggles.services"):
        report = toggles_refresh(source="", lkg_path=tmp_path / "lkg.json")

    assert "no source configured" in report.summary()
    assert [record for record in caplog.records if record.levelno >= logging.INFO] == []
