"""The per-process holder of the config snapshot: the hot path reads it, a thread keeps it fresh.

The thread polls the config version (one tiny query) every `poll_interval_s`, off the hot path,
and rebuilds only when it moved. When PostgreSQL is down the last snapshot stays in force; a
process that starts while PostgreSQL is down loads the last-known-good file instead.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.db import DatabaseError, close_old_connections
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from apps.common.exceptions import ApplicationError
from apps.limits.snapshot import Snapshot, config_version_current, snapshot_build
from apps.limits.snapshot_file import snapshot_load, snapshot_save

logger = logging.getLogger(__name__)


class ConfigUnavailable(ApplicationError):
    code = "config_unavailable"
    status_code = 503


class SnapshotHolder:
    def __init__(
        self,
        *,
        path: Path,
        poll_interval_s: float,
        build: Callable[[], Snapshot] = snapshot_build,
        current_version: Callable[[], int] = config_version_current,
    ) -> None:
        self._path = path
        self._poll_interval_s = poll_interval_s
        self._build = build
        self._current_version = current_version
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self._poller: threading.Thread | None = None
        self.loaded_from_file = False
        self.last_refresh_at = 0.0

    def get(self) -> Snapshot:
        """The snapshot in force. Only the first call of a process may touch the database."""
        snapshot = self._snapshot
        if snapshot is not None:
            return snapshot
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self._first_load()
                self._start_polling()
            return self._snapshot

    def refresh(self) -> bool:
        """Rebuild if the version moved. Returns whether the snapshot changed."""
        try:
            version = self._current_version()
            if self._snapshot is not None and version == self._snapshot.version and not self.loaded_from_file:
                self.last_refresh_at = time.time()
                return False
            snapshot = self._build()
        except DatabaseError:
            # PostgreSQL unreachable: keep serving the snapshot we have.
            logger.exception("Config refresh failed; keeping snapshot version %s", self.version)
            return False
        self._install(snapshot)
        return True

    @property
    def version(self) -> int | None:
        return self._snapshot.version if self._snapshot else None

    def _first_load(self) -> Snapshot:
        try:
            snapshot = self._build()
        except DatabaseError:
            logger.exception("Database unreachable at start; loading the last-known-good snapshot %s", self._path)
            return self._load_file()
        self._save_file(snapshot)
        self.last_refresh_at = time.time()
        return snapshot

    def _load_file(self) -> Snapshot:
        try:
            snapshot = snapshot_load(self._path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ConfigUnavailable(
                "The configuration cannot be read: the database is unreachable and there is no "
                f"usable last-known-good snapshot at {self._path} ({error})."
            ) from error
        self.loaded_from_file = True
        return snapshot

    def _install(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot
        self.loaded_from_file = False
        self.last_refresh_at = time.time()
        self._save_file(snapshot)

    def _save_file(self, snapshot: Snapshot) -> None:
        try:
            snapshot_save(snapshot, self._path)
        except OSError:
            # Not fatal: we only lose the fallback for a future cold start.
            logger.exception("Could not write the last-known-good snapshot to %s", self._path)

    def _start_polling(self) -> None:
        if self._poll_interval_s <= 0:
            return
        self._poller = threading.Thread(target=self._poll_forever, name="config-snapshot-poller", daemon=True)
        self._poller.start()

    def _poll_forever(self) -> None:
        while True:
            time.sleep(self._poll_interval_s)
            try:
                self.refresh()
            except Exception:  # the poller must never die; the next round tries again
                logger.exception("Unexpected error while refreshing the config snapshot")
            finally:
                # The poller's own connection: drop it if broken so the next round reconnects.
                close_old_connections()


_holder: SnapshotHolder | None = None
_holder_lock = threading.Lock()


def snapshot_holder() -> SnapshotHolder:
    """This process's holder, created on first use (after a server forks its workers)."""
    global _holder
    if _holder is None:
        with _holder_lock:
            if _holder is None:
                from django.conf import settings

                _holder = SnapshotHolder(
                    path=settings.QUOTA_SNAPSHOT_PATH, poll_interval_s=settings.QUOTA_SNAPSHOT_POLL_S
                )
    return _holder


def snapshot_current() -> Snapshot:
    return snapshot_holder().get()


def snapshot_holder_reset() -> None:
    """Forget this process's holder (tests; the next call builds a fresh one from settings)."""
    global _holder
    _holder = None


# --- What this process serves, for /metrics, /readyz and the dashboard --------------------------------
@dataclass(frozen=True)
class ConfigSnapshotState:
    """What this process knows about its config snapshot; `version` is None until the first check loads it."""

    version: int | None
    age_s: float | None
    from_file: bool


def config_snapshot_state(*, now: float | None = None) -> ConfigSnapshotState:
    """This process's snapshot, without loading it: a scrape or probe must not trigger a config build.

    The age counts from the last time the snapshot was confirmed current against the database;
    a snapshot read from the last-known-good file counts from when it was built.
    """
    holder = snapshot_holder()
    if holder.version is None:
        return ConfigSnapshotState(version=None, age_s=None, from_file=False)
    snapshot = holder.get()  # already loaded: no database access
    confirmed_at = holder.last_refresh_at or snapshot.built_at
    now = time.time() if now is None else now
    return ConfigSnapshotState(
        version=snapshot.version, age_s=max(0.0, now - confirmed_at), from_file=holder.loaded_from_file
    )


SNAPSHOT_GAUGES = {
    "quota_config_snapshot_loaded": "1 once this process has loaded its config snapshot.",
    "quota_config_snapshot_version": "Version of the config snapshot in force.",
    "quota_config_snapshot_age_seconds": "Seconds since the snapshot was last confirmed current against the database.",
    "quota_config_snapshot_from_file": "1 while serving the last-known-good snapshot file (database was unreachable).",
}


class ConfigSnapshotCollector(Collector):
    """Gauges of the answering process's config snapshot (each worker has its own)."""

    def describe(self) -> Iterator[GaugeMetricFamily]:
        # Lets registries learn the names without collecting (which needs Django's apps loaded).
        for name, documentation in SNAPSHOT_GAUGES.items():
            yield GaugeMetricFamily(name, documentation)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        state = config_snapshot_state()
        yield _gauge("quota_config_snapshot_loaded", state.version is not None)
        if state.version is None:
            # Nothing to report yet, and not a reason to load it: the first check does that.
            return
        yield _gauge("quota_config_snapshot_version", state.version)
        yield _gauge("quota_config_snapshot_age_seconds", state.age_s or 0.0)
        yield _gauge("quota_config_snapshot_from_file", state.from_file)


def _gauge(name: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, SNAPSHOT_GAUGES[name], value=float(value))
