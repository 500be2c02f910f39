"""The sections of the configuration file, in the order they are written and applied.

Each section may refer only to sections before it, so applying them in this order finds every
reference; --prune deletes in the reverse order, so dependents go before what they depend on.
"""

from apps.limits.choices import RuleSource
from apps.limits.config_io.sections.base import REFERENCE_TARGETS, Entry, Identity, Key, Lookup, Section, Unresolved
from apps.limits.config_io.sections.catalog import CustomerSection, OperationSection, PlanSection, ServiceSection
from apps.limits.config_io.sections.policies import AccessRuleSection, LimitSection, OverrideSection

SECTIONS: tuple[Section, ...] = (
    OperationSection(),
    PlanSection(),
    CustomerSection(),
    LimitSection(),
    OverrideSection(),
    AccessRuleSection(),
    ServiceSection(),
)
SECTION_BY_NAME = {section.name: section for section in SECTIONS}
# The same sections as the external source document writes them (only access rules have an owner).
SOURCE_SECTION_BY_NAME = {**SECTION_BY_NAME, "access_rules": AccessRuleSection(source=RuleSource.EXTERNAL)}

__all__ = [
    "REFERENCE_TARGETS",
    "SECTIONS",
    "SECTION_BY_NAME",
    "SOURCE_SECTION_BY_NAME",
    "Entry",
    "Identity",
    "Key",
    "Lookup",
    "Section",
    "Unresolved",
]
