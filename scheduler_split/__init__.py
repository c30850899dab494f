"""scheduler-split: a compute control plane with a split scheduler."""
