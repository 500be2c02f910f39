"""GET /metrics: the Prometheus text, what the check path recorded, the config snapshot, every worker summed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from django.db import DatabaseError
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from apps.common.metrics import decision_recorded
from apps.limits.snapshot import Snapshot
from apps.limits.snapshot_file import snapshot_save
from apps.limits.snapshot_holder import SnapshotHolder, snapshot_holder
from tests.servers import repository_root


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(text: str, name: str, **labels: str) -> float | None:
    return samples(text).get((name, tuple(sorted(labels.items()))))


def scrape(client) -> str:  # type: ignore[no-untyped-def]
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def install_holder(monkeypatch, holder: SnapshotHolder) -> SnapshotHolder:  # type: ignore[no-untyped-def]
    monkeypatch.setattr("apps.limits.snapshot_holder._holder", holder)
    return holder


def test_metrics_are_served_as_prometheus_text_with_the_platform_metric_names(client) -> None:
    decision_recorded(
        operation="PutRecords", outcome="OK", shadow_denied=True, degraded=True, seconds=0.002, endpoint="check"
    )

    response = client.get("/metrics")

    assert response.status_code == 200
    assert response["Content-Type"] == CONTENT_TYPE_LATEST
    names = {family.name for family in text_string_to_metric_families(response.content.decode())}
    assert {"quota_decisions", "quota_shadow_denials", "quota_degraded_decisions", "quota_check_seconds"} <= names


def test_counters_in_the_scrape_move_by_exactly_what_was_recorded(client) -> None:
    before = scrape(client)

    for outcome, shadow_denied in [("OVER_LIMIT", False)] * 3 + [("OK", True)]:
        decision_recorded(
            operation="ScrapedOp",
            outcome=outcome,
            shadow_denied=shadow_denied,
            degraded=False,
            seconds=0.001,
            endpoint="check",
        )
    after = scrape(client)

    def moved(name: str, **labels: str) -> float:
        return (sample(after, name, **labels) or 0.0) - (sample(before, name, **labels) or 0.0)

    assert moved("quota_decisions_total", operation="ScrapedOp", outcome="OVER_LIMIT") == 3
    assert moved("quota_decisions_total", operation="ScrapedOp", outcome="OK") == 1
    assert moved("quota_shadow_denials_total", operation="ScrapedOp") == 1
    assert moved("quota_degraded_decisions_total", operation="ScrapedOp") == 0
    assert moved("quota_check_seconds_count", endpoint="check") == 4


def test_the_snapshot_gauges_report_the_loaded_config(client, monkeypatch, tmp_path: Path) -> None:
    holder = install_holder(
        monkeypatch,
        SnapshotHolder(
            path=tmp_path / "snapshot.json",
            poll_interval_s=0,
            build=lambda: Snapshot(version=42, built_at=time.time()),
            current_version=lambda: 42,
        ),
    )
    holder.get()

    text = scrape(client)

    assert sample(text, "quota_config_snapshot_loaded") == 1
    assert sample(text, "quota_config_snapshot_version") == 42
    assert sample(text, "quota_config_snapshot_from_file") == 0
    assert 0 <= sample(text, "quota_config_snapshot_age_seconds") < 5  # type: ignore[operator]


def test_a_snapshot_served_from_the_last_known_good_file_is_flagged_and_aged_from_its_build(
    client, monkeypatch, tmp_path: Path
) -> None:
    path = tmp_path / "snapshot.json"
    snapshot_save(Snapshot(version=7, built_at=time.time() - 120), path)

    def database_down() -> Snapshot:
        raise DatabaseError("connection refused")

    install_holder(
        monkeypatch, SnapshotHolder(path=path, poll_interval_s=0, build=database_down, current_version=lambda: 7)
    ).get()

    text = scrape(client)

    assert sample(text, "quota_config_snapshot_version") == 7
    assert sample(text, "quota_config_snapshot_from_file") == 1
    assert 119 <= sample(text, "quota_config_snapshot_age_seconds") < 130  # type: ignore[operator]


def test_a_scrape_does_not_load_a_snapshot_that_no_check_has_loaded_yet(client) -> None:
    # No django_db mark: loading the snapshot would touch the database, which pytest-django refuses here.
    text = scrape(client)

    assert sample(text, "quota_config_snapshot_loaded") == 0
    assert sample(text, "quota_config_snapshot_version") is None
    assert snapshot_holder().version is None


def test_a_metrics_token_setting_makes_scrapes_without_it_unauthorized(client, settings) -> None:
    settings.QUOTA_METRICS_TOKEN = "scrape-secret"

    missing = client.get("/metrics")
    wrong = client.get("/metrics", headers={"Authorization": "Bearer guessed"})
    right = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})

    assert missing.status_code == 401
    assert missing["WWW-Authenticate"].startswith("Bearer")
    assert wrong.status_code == 401
    assert right.status_code == 200
    assert b"quota_decisions" in right.content


RECORDER = """
import django
django.setup()
from apps.common.metrics import decision_recorded
for _ in range({count}):
    decision_recorded(operation="PutRecords", outcome="OK", shadow_denied=False, degraded=False,
                      seconds=0.001, endpoint="check")
"""

SCRAPER = """
import django
django.setup()
from django.test import RequestFactory
from apps.ops.views import metrics
response = metrics(RequestFactory().get("/metrics"))
assert response.status_code == 200, response.status_code
print(response.content.decode())
"""


def python_in_multiprocess_mode(code: str, multiproc_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter, as a gunicorn worker would run, with the metrics folder set."""
    env = {
        **os.environ,
        "PROMETHEUS_MULTIPROC_DIR": str(multiproc_dir),
        "DJANGO_SETTINGS_MODULE": "quota_platform.settings",
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=repository_root(),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def run_python(code: str, multiproc_dir: Path) -> str:
    result = python_in_multiprocess_mode(code, multiproc_dir)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_in_multiprocess_mode_a_scrape_sums_the_decisions_of_every_worker_process(tmp_path: Path) -> None:
    multiproc_dir = tmp_path / "prometheus"
    multiproc_dir.mkdir()

    run_python(RECORDER.format(count=3), multiproc_dir)
    run_python(RECORDER.format(count=4), multiproc_dir)
    text = run_python(SCRAPER, multiproc_dir)

    assert sample(text, "quota_decisions_total", operation="PutRecords", outcome="OK") == 7
    assert sample(text, "quota_check_seconds_count", endpoint="check") == 7
    # The answering process's own snapshot gauges are served next to the files' totals.
    assert sample(text, "quota_config_snapshot_loaded") == 0


@pytest.mark.slow
def test_a_multiprocess_folder_that_does_not_exist_stops_the_process_at_import(tmp_path: Path) -> None:
    result = python_in_multiprocess_mode(
        "import django; django.setup(); import apps.common.metrics", tmp_path / "missing"
    )

    assert result.returncode != 0
    assert "is not a directory" in result.stderr
