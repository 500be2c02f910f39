"""The configuration models, listed once: what the config snapshot is compiled from and the change history follows.

They are named by label, so this module imports no app. apps/limits/signals.py republishes the snapshot after a
committed change to any of them; apps/history/registry.py records who changed what in them.
"""

CONFIG_MODELS: tuple[str, ...] = (
    "customers.Plan",
    "customers.Customer",
    "limits.Operation",
    "limits.Limit",
    "limits.Override",
    "limits.AccessRule",
    "apikeys.Service",
    "apikeys.ApiKey",
    "toggles.FeatureToggle",
)
# Many-to-many fields of configuration models: changing one changes the configuration too.
CONFIG_MANY_TO_MANY: dict[str, tuple[str, ...]] = {"apikeys.Service": ("operations",)}
# Fields a save may touch without changing the configuration (bookkeeping).
BOOKKEEPING_FIELDS = frozenset({"last_used_at"})
