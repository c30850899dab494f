from scheduler_split.scheduler import filters


class DiskFilter(filters.ResourceFilter):
    """Rejects a host without enough local disk left for the request's
    root, ephemeral and swap disks.

    Reads the request's ``DISK_GB`` and the host's disk inventory
    (total, reserved, allocation ratio) and usage.
    """

    resource_class = 'DISK_GB'
