from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import resource_request

CONF = conf.CONF


@base.ObjectRegistry.register
class SchedulerRetries(base.SchedulerSplitObject):
    """The retry record of a build: which attempt, which hosts so far."""
    VERSION = '1.0'

    fields = {
        'num_attempts': fields.IntegerField(default=1),
        'hosts': fields.ListOfStringsField(default=[]),
    }


@base.ObjectRegistry.register
class RequestSpec(base.SchedulerSplitObject):
    """What the scheduler needs to place the instances of one request."""
    # 1.1: instance_group
    # 1.2: image_properties
    # 1.3: requested_cell
    VERSION = '1.3'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(nullable=True),
        'flavor': fields.ObjectField('Flavor'),
        'image_ref': fields.StringField(nullable=True),
        'num_instances': fields.IntegerField(default=1),
        'availability_zone': fields.StringField(nullable=True, default=None),
        'scheduler_hints': fields.DictOfListOfStringsField(default={}),
        'ignore_hosts': fields.ListOfStringsField(nullable=True,
                                                  default=None),
        'force_hosts': fields.ListOfStringsField(nullable=True,
                                                 default=None),
        'force_nodes': fields.ListOfStringsField(nullable=True,
                                                 default=None),
        'retry': fields.ObjectField('SchedulerRetries', nullable=True,
                                    default=None),
        'instance_group': fields.ObjectField('InstanceGroup', nullable=True,
                                             default=None),
        # The image's properties as the image service holds them, for
        # ImagePropertiesFilter (architecture, hypervisor type, ...).
        'image_properties': fields.DictOfStringsField(nullable=True,
                                                      default={}),
        # The cell a move must stay in (the instance's): only its hosts
        # are considered. None for a boot, which may go to any cell.
        'requested_cell': fields.UUIDField(nullable=True, default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = tuple(int(p) for p in target_version.split('.'))
        if target < (1, 3):
            primitive.pop('requested_cell', None)
        if target < (1, 2):
            primitive.pop('image_properties', None)
        if target < (1, 1):
            primitive.pop('instance_group', None)

    @property
    def resource_request(self):
        """The request groups of one instance: its resources and traits
        as the flavor's extra specs and the image's properties ask them
        (``resource_request.ResourceRequest``); ``InvalidRequest`` when
        they ask the impossible."""
        image = self.image_properties if self.obj_attr_is_set(
            'image_properties') else None
        flavor = self.flavor
        # Read once per flavor and image: a select reads it many times
        # (each filter, the claim, the selections). Callers never change
        # what it returns.
        try:
            key = (flavor.vcpus, flavor.memory_mb, flavor.disk_gb,
                   tuple(sorted((flavor.get('extra_specs') or {}).items())),
                   tuple(sorted(image.items())) if image else None)
            hash(key)
        except TypeError:
            key = None
        cached = self.__dict__.get('_resource_request')
        if key is not None and cached is not None and cached[0] == key:
            return cached[1]
        request = resource_request.ResourceRequest.of(flavor, image)
        if key is not None:
            self.__dict__['_resource_request'] = (key, request)
        return request

    @property
    def resources(self):
        """The resource amounts one instance of this request claims:
        every class of every request group, zeros left out."""
        return self.resource_request.totals()

    @classmethod
    def get_by_instance_uuid(cls, ctx, instance_uuid):
        with engines.reader(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(api_models.RequestSpec).where(
                api_models.RequestSpec.instance_uuid == instance_uuid)).first()
            if row is None:
                raise exception.NotFound(
                    'RequestSpec not found for instance %s' % instance_uuid)
            return cls.from_json(row.spec)

    @classmethod
    def of_instance(cls, ctx, instance):
        """The request ``instance`` was booted with (its zone, group,
        hints, image), or, for a server that has none stored, one made
        from the instance: what a move or a rebuild starts from."""
        try:
            return cls.get_by_instance_uuid(ctx, instance.uuid)
        except exception.NotFound:
            return cls(instance_uuid=instance.uuid,
                       project_id=instance.project_id,
                       user_id=instance.user_id, flavor=instance.flavor,
                       image_ref=instance.image_ref)

    def save(self, ctx):
        """Write this spec back as its instance's (a rebuild's new image,
        an unshelve's zone): what later moves of the server read."""
        with engines.writer(CONF.api_database.connection) as session:
            result = session.execute(
                sa.update(api_models.RequestSpec).where(
                    api_models.RequestSpec.instance_uuid == self.instance_uuid)
                .values(spec=self.to_json()))
            if result.rowcount == 0:
                session.add(api_models.RequestSpec(
                    instance_uuid=self.instance_uuid, spec=self.to_json()))

    @classmethod
    def get_availability_zones(cls, ctx, instance_uuids):
        """``{instance uuid: the zone its request asked for, or None}`` of
        those of ``instance_uuids`` that have a request spec, in one
        query (a page of a server list asks once for all its servers)."""
        uuids = list(instance_uuids)
        if not uuids:
            return {}
        spec = api_models.RequestSpec
        with engines.reader(CONF.api_database.connection) as session:
            rows = session.execute(sa.select(
                spec.instance_uuid, spec.spec).where(
                spec.instance_uuid.in_(uuids))).all()
        return {uuid: cls.from_json(text).availability_zone
                for uuid, text in rows}
