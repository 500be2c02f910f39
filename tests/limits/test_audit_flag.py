"""A limit's `audit` flag (issue 17): off by default, set from YAML or the admin, carried by the snapshot into the
engine's LimitSpec, whose decisions the store then writes to the decision log."""

import pytest

from apps.enforcement.decisions.specs import limit_spec_of
from apps.limits.config_io import config_export
from apps.limits.models import Limit
from apps.limits.snapshot import snapshot_build
from apps.limits.snapshot_file import snapshot_from_json, snapshot_to_json
from tests.limits.config_io.helpers import import_text
from tests.limits.factories import LimitFactory

pytestmark = pytest.mark.django_db

AUDITED = """
operations: [{name: Op}]
limits:
  - {name: logged, operation: Op, algorithm: fixed_window, limit: 10, period: 60, audit: true}
  - {name: quiet, operation: Op, algorithm: fixed_window, limit: 10, period: 60}
"""


def test_a_limit_is_not_audited_unless_asked() -> None:
    assert LimitFactory().audit is False


def test_audit_is_read_from_yaml_and_written_back() -> None:
    import_text(AUDITED)
    assert dict(Limit.objects.values_list("name", "audit")) == {"logged": True, "quiet": False}
    exported = {entry["name"]: entry["audit"] for entry in config_export()["limits"]}
    assert exported == {"logged": True, "quiet": False}
    assert import_text(AUDITED.replace("audit: true", "audit: false")).lines() != ["no changes"]
    assert not Limit.objects.get(name="logged").audit


def test_audit_reaches_the_engine_through_the_snapshot() -> None:
    import_text(AUDITED)
    snapshot = snapshot_build()
    configs = {config.name: config for config in snapshot.limits_by_operation["Op"]}
    assert (configs["logged"].audit, configs["quiet"].audit) == (True, False)
    assert snapshot_from_json(snapshot_to_json(snapshot)) == snapshot
    assert limit_spec_of(configs["logged"]).audit
    assert not limit_spec_of(configs["quiet"]).audit
