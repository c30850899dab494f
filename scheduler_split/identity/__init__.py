"""Identity endpoints the all-in-one serves when no Keystone is there."""
