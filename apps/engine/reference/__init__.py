"""Pure-Python reference models, one module per algorithm.

Each module is a set of pure functions over an immutable state (None = never used), with time
passed in as integer epoch milliseconds:

    evaluate(state, params, now, cost) -> (admits, retry_after_ms | None)   cost >= 1
    consume(state, params, now, cost, lease) -> new state
    report(state, params, now) -> (remaining, reset_ms)
    expires_at(state, params, now) -> epoch ms after which the state equals "never used"

The Lua fragments in apps/engine/lua/ do the same integer arithmetic, and the property tests prove
that both make the same decisions. The MemoryStore runs these models behind a lock.
"""
