"""One module per algorithm, each declaring an `ENTRY` (base.Algorithm); apps/engine/registry.py collects them."""
