from scheduler_split.scheduler import weights


class RAMWeigher(weights.FreeResourceWeigher):
    """Scores a host by its free memory: more weighs more (a positive
    ``ram_weight_multiplier`` spreads, a negative one packs).

    Reads the host's memory inventory and usage.
    """

    option = 'ram_weight_multiplier'
    resource_class = 'MEMORY_MB'
