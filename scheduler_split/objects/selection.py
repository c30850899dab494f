from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import fields

from scheduler_split.objects import base
from scheduler_split.objects import resource_request


@base.ObjectRegistry.register
class Selection(base.SchedulerSplitObject):
    """One host the scheduler chose, claimed or as an alternate.

    ``allocation_request`` is the JSON of what to claim there: the chosen
    host of a list is already claimed, an alternate is claimed by the cell
    conductor when it is tried. Version ``1.0`` is the resources
    (``{"VCPU": 1, ...}``); version ``1.1`` is ``{"resources": {...},
    "group": {"uuid", "policy", "max_per_host"}, "request": {...}}`` for
    a member of a server group whose policy the claim must enforce, or a
    request whose groups and traits say how its amounts spread over the
    host's provider tree (``ResourceRequest.to_primitive``).

    ``availability_zone`` is the zone the host reported to the scheduler;
    a conductor gives it to an instance whose user asked for no zone.
    """
    # 1.0: initial
    # 1.1: availability_zone
    VERSION = '1.1'

    fields = {
        'compute_node_uuid': fields.UUIDField(),
        'service_host': fields.StringField(),
        'nodename': fields.StringField(),
        'cell_uuid': fields.UUIDField(),
        'limits': fields.DictOfIntegersField(nullable=True,
                                             default=None),
        'allocation_request': fields.StringField(nullable=True),
        'allocation_request_version': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True, default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        if versionutils.convert_version_to_tuple(target_version) < (1, 1):
            primitive.pop('availability_zone', None)

    @classmethod
    def for_claim(cls, resources, group=None, request=None, **kwargs):
        """A Selection whose allocation request claims ``resources`` (as a
        member of ``group`` if given; spread as ``request``, a
        ``ResourceRequest`` or its primitive, says if given)."""
        if group or request is not None:
            if request is not None and not isinstance(request, dict):
                request = request.to_primitive()
            request = {'resources': resources, 'group': group,
                       'request': request}
            version = '1.1'
        else:
            request, version = resources, '1.0'
        return cls(allocation_request=jsonutils.dumps(request),
                   allocation_request_version=version, **kwargs)

    def _request(self):
        request = jsonutils.loads(self.allocation_request or '{}')
        if self.get('allocation_request_version') == '1.1':
            return request
        return {'resources': request}

    @property
    def resources(self):
        return self._request()['resources']

    @property
    def request(self):
        """The ``ResourceRequest`` the claim spreads over the tree, or
        None (the resources all from the compute node)."""
        primitive = self._request().get('request')
        if not primitive:
            return None
        return resource_request.ResourceRequest.from_primitive(primitive)

    @property
    def group(self):
        """The server group the claim enforces, or None."""
        return self._request().get('group')
