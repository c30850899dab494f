from scheduler_split.scheduler import weights


class ServerGroupSoftAntiAffinityWeigher(weights.SoftGroupWeigher):
    """Scores, for a member of a soft-anti-affinity group, a host holding
    fewer members higher.

    Reads the request's ``instance_group`` (its policy and the hosts of
    its members) and the host's name.
    """

    policy = 'soft-anti-affinity'
    sign = -1

    option = 'soft_anti_affinity_weight_multiplier'
