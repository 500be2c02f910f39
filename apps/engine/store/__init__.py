"""Stores decide checks: RedisStore (production, one script call per check or batch) and
MemoryStore (the reference models in-process, for the embedded default and as the test oracle)."""
