"""Quota Platform client SDK (no Django)."""
