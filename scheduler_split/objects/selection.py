from oslo_serialization import jsonutils
from oslo_versionedobjects import fields

from scheduler_split.objects import base


@base.ObjectRegistry.register
class Selection(base.SchedulerSplitObject):
    """One host the scheduler chose, claimed or as an alternate.

    ``allocation_request`` is the JSON of the resources to claim there
    (``{"VCPU": 1, ...}``): the chosen host of a list is already claimed,
    an alternate is claimed by the cell conductor when it is tried.
    """
    VERSION = '1.0'

    fields = {
        'compute_node_uuid': fields.UUIDField(),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'cell_uuid': fields.UUIDField(),
        'limits': fields.DictOfIntegersField(nullable=True,
                                             default=None),
        'allocation_request': fields.StringField(nullable=True),
        'allocation_request_version': fields.StringField(nullable=True),
    }

    @property
    def resources(self):
        return jsonutils.loads(self.allocation_request or '{}')
