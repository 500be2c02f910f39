"""Configuration as code: the YAML import and export of operations, plans, customers, limits,
overrides, access rules and services (every key: docs/design.md, "Configuration reference").

    document = config_yaml_load(config_yaml_read(file))
    report = config_import(document=document, prune=False, dry_run=True)
    text = config_yaml_dump(config_export())
"""

from apps.limits.config_io.apply import config_import
from apps.limits.config_io.demo import DEMO_SERVICE, DemoLoaded, demo_load
from apps.limits.config_io.export import config_export
from apps.limits.config_io.report import ConfigInvalid, ImportReport, SectionReport
from apps.limits.config_io.yaml_io import MAX_DOCUMENT_BYTES, config_yaml_dump, config_yaml_load, config_yaml_read

__all__ = [
    "DEMO_SERVICE",
    "MAX_DOCUMENT_BYTES",
    "ConfigInvalid",
    "DemoLoaded",
    "ImportReport",
    "SectionReport",
    "config_export",
    "config_import",
    "config_yaml_dump",
    "config_yaml_load",
    "config_yaml_read",
    "demo_load",
]
