"""The store on a Redis Cluster: ClusterStore (store.py), checks over several slots (spread.py), atomic batches over
several slots (atomic_slots.py), and what they share about slots (slots.py)."""

from apps.engine.store.cluster.slots import CrossSlotCheck
from apps.engine.store.cluster.store import ClusterStore, slot_groups

__all__ = ["ClusterStore", "CrossSlotCheck", "slot_groups"]
