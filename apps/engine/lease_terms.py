"""The terms every lease is held on, whichever limit holds it: what "never expires" is, how long an allocation's
storage lives, and how much one resync may change. The lease set's model (the registry entry whose `lease_set`
is set), the key layout, the stores and the lease API read them here.
"""

from __future__ import annotations

from apps.engine.types import MAX_SAFE_INT

# An allocation's record (what releasing it logs and books) lives this long after its last write; releasing works
# without it. The lease set holding allocations has no TTL: allocations never lapse while held (their number is
# bounded by the limit's quantity, and PostgreSQL keeps a copy the set is rebuilt from after a Redis loss).
ALLOCATION_TTL_MS = 7 * 86_400_000
FOREVER = MAX_SAFE_INT  # an allocation's expiry (exact in Lua too)
# The most allocations one resync adds or drops: its Redis work (allocations.lua, ~3 µs a member) stays a few ms.
MAX_RESYNC_CHANGES = 1_000
