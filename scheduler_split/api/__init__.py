"""The REST API (a subset of the Nova compute API v2.1)."""
