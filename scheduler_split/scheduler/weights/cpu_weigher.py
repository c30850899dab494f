from scheduler_split.scheduler import weights


class CPUWeigher(weights.FreeResourceWeigher):
    """Scores a host by its free vCPUs: more weigh more (a positive
    ``cpu_weight_multiplier`` spreads, a negative one packs).

    Reads the host's vCPU inventory and usage.
    """

    option = 'cpu_weight_multiplier'
    resource_class = 'VCPU'
