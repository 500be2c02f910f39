"""Deciding checks: parse, resolve against the snapshot, one engine call, shape the answer and its headers."""
