from scheduler_split.scheduler import weights


class ServerGroupSoftAffinityWeigher(weights.SoftGroupWeigher):
    """Scores, for a member of a soft-affinity group, a host holding
    more members higher.

    Reads the request's ``instance_group`` (its policy and the hosts of
    its members) and the host's name.
    """

    policy = 'soft-affinity'
    sign = 1

    option = 'soft_affinity_weight_multiplier'
