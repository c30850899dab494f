"""No tests: the plugin only changes how Tempest's own classes run."""
