from scheduler_split.scheduler import weights


class NumInstancesWeigher(weights.BaseHostWeigher):
    """Scores a host by its instances: more weigh more (a positive
    ``num_instances_weight_multiplier`` packs, a negative one spreads).

    Reads the number of consumers holding allocations on the host.
    """

    option = 'num_instances_weight_multiplier'

    def raw_weight(self, host_state, spec_obj):
        return host_state.num_instances
