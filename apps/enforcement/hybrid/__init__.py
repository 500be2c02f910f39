"""Hybrid counting: limits decided in this process on its own count and what the other instances reported, and the
/sync exchange of the SDK's local limiters."""
