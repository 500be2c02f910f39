import pytest
from django.db import OperationalError

from apps.limits.snapshot import snapshot_build
from apps.limits.snapshot_file import snapshot_save
from apps.limits.snapshot_holder import ConfigUnavailable, SnapshotHolder
from tests.limits.factories import LimitFactory

pytestmark = pytest.mark.django_db


def unreachable() -> None:
    raise OperationalError("connection refused")


def test_the_first_read_builds_from_the_database_and_keeps_a_last_known_good_file(tmp_path) -> None:
    LimitFactory(name="first")
    holder = SnapshotHolder(path=tmp_path / "snapshot.json", poll_interval_s=0)

    snapshot = holder.get()

    assert "first" in {limit.name for limits in snapshot.limits_by_operation.values() for limit in limits}
    assert (tmp_path / "snapshot.json").exists()


def test_a_committed_change_is_picked_up_by_refresh(tmp_path, django_capture_on_commit_callbacks) -> None:
    holder = SnapshotHolder(path=tmp_path / "snapshot.json", poll_interval_s=0)
    before = holder.get().version
    with django_capture_on_commit_callbacks(execute=True):
        LimitFactory(name="later")

    assert holder.refresh() is True
    assert holder.get().version > before
    assert holder.refresh() is False


def test_a_process_started_while_the_database_is_down_serves_the_last_known_good_file(tmp_path) -> None:
    LimitFactory(name="remembered")
    snapshot_save(snapshot_build(), tmp_path / "snapshot.json")
    holder = SnapshotHolder(path=tmp_path / "snapshot.json", poll_interval_s=0, build=unreachable)

    snapshot = holder.get()

    assert holder.loaded_from_file
    assert "remembered" in {limit.name for limits in snapshot.limits_by_operation.values() for limit in limits}


def test_without_database_or_file_it_says_so_in_words(tmp_path) -> None:
    holder = SnapshotHolder(path=tmp_path / "missing.json", poll_interval_s=0, build=unreachable)

    with pytest.raises(ConfigUnavailable, match="database is unreachable"):
        holder.get()


def test_a_refresh_while_the_database_is_down_keeps_the_snapshot_in_force(tmp_path) -> None:
    holder = SnapshotHolder(path=tmp_path / "snapshot.json", poll_interval_s=0, current_version=unreachable)
    holder._build = snapshot_build
    snapshot = holder.get()

    assert holder.refresh() is False
    assert holder.get() is snapshot
