from scheduler_split.scheduler import weights


class BuildFailureWeigher(weights.BaseHostWeigher):
    """Scores a host whose builds keep failing lower: the compute counts
    its failed builds in a row, and a success resets the count.

    Reads the host's reported ``failed_builds``.
    """

    option = 'build_failure_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return -host_state.failed_builds
