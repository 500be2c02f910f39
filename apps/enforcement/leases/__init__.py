"""Concurrency leases and allocation quotas: acquire, renew and release a slot; a service's own count of live
objects."""
