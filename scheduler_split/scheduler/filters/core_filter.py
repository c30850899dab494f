from scheduler_split.scheduler import filters


class CoreFilter(filters.ResourceFilter):
    """Rejects a host without enough vCPUs left for the request.

    Reads the request's ``VCPU`` and the host's vCPU inventory (total,
    reserved, allocation ratio) and usage.
    """

    resource_class = 'VCPU'
