from scheduler_split.scheduler import weights


class IoOpsWeigher(weights.BaseHostWeigher):
    """Scores a host by its builds in flight: more weigh more (the
    default negative ``io_ops_weight_multiplier`` prefers quiet hosts).

    Reads the host's ``num_io_ops``.
    """

    option = 'io_ops_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.num_io_ops
