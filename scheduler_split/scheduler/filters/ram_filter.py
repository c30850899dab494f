from scheduler_split.scheduler import filters


class RamFilter(filters.ResourceFilter):
    """Rejects a host without enough memory left for the request.

    Reads the request's ``MEMORY_MB`` and the host's memory inventory
    (total, reserved, allocation ratio) and usage.
    """

    resource_class = 'MEMORY_MB'
