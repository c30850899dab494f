"""Versioned objects: what crosses the bus and what the databases hold.

Importing this package registers every object; each class is also an
attribute of this package (``objects.Instance``), set by the registry.
"""


def register_all():
    __import__('scheduler_split.objects.flavor')
    __import__('scheduler_split.objects.instance')
    __import__('scheduler_split.objects.instance_fault')
    __import__('scheduler_split.objects.instance_group')
    __import__('scheduler_split.objects.keypair')
    __import__('scheduler_split.objects.migration')
    __import__('scheduler_split.objects.request_spec')
    __import__('scheduler_split.objects.selection')
    __import__('scheduler_split.objects.build_request')
    __import__('scheduler_split.objects.cell_mapping')
    __import__('scheduler_split.objects.service')
    __import__('scheduler_split.notifications')
