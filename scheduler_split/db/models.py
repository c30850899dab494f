"""Tables of the three databases: API, cell (one per cell) and scheduler.

Each database has its own declarative base, so each has its own metadata
and its own alembic tree under ``migrations/``.
"""

import datetime

import sqlalchemy as sa
from sqlalchemy import orm

from scheduler_split.db import types


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class _Timestamps:
    created_at = sa.Column(types.DateTime(), default=_now, nullable=False)
    updated_at = sa.Column(types.DateTime(), onupdate=_now)


class ApiBase(orm.DeclarativeBase):
    pass


class CellBase(orm.DeclarativeBase):
    pass


class SchedulerBase(orm.DeclarativeBase):
    pass


# --- API database -----------------------------------------------------------

class CellMapping(_Timestamps, ApiBase):
    __tablename__ = 'cell_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    transport_url = sa.Column(sa.Text, nullable=False)
    database_connection = sa.Column(sa.Text, nullable=False)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)


class HostMapping(_Timestamps, ApiBase):
    __tablename__ = 'host_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False, unique=True)
    cell_id = sa.Column(sa.Integer, sa.ForeignKey('cell_mappings.id'),
                        nullable=False)


class InstanceMapping(_Timestamps, ApiBase):
    __tablename__ = 'instance_mappings'
    __table_args__ = (sa.Index('instance_mappings_project_id_idx',
                               'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    cell_id = sa.Column(sa.Integer, sa.ForeignKey('cell_mappings.id'),
                        nullable=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=True)
    queued_for_delete = sa.Column(sa.Boolean, nullable=False, default=False)
    # What the instance counts against its project's quota of cores and
    # ram (NULL for instances booted before quotas were counted).
    vcpus = sa.Column(sa.Integer)
    memory_mb = sa.Column(sa.Integer)


class BuildRequest(_Timestamps, ApiBase):
    __tablename__ = 'build_requests'
    __table_args__ = (sa.Index('build_requests_project_id_idx',
                               'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    # The serialized Instance object the API answers with until the
    # instance exists in a cell.
    instance = sa.Column(types.MediumText(), nullable=False)
    # When a super-conductor took the build request to schedule it; NULL
    # while its boot still waits on the bus (or was lost with it).
    taken_at = sa.Column(types.DateTime(), nullable=True)
    # The host of the super-conductor that took it.
    taken_by = sa.Column(sa.String(255), nullable=True)
    # How often a super-conductor cast the boot again because no one took
    # it.
    redrives = sa.Column(sa.Integer, nullable=False, default=0,
                         server_default='0')


class RequestSpec(_Timestamps, ApiBase):
    __tablename__ = 'request_specs'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    spec = sa.Column(types.MediumText(), nullable=False)


class Flavor(_Timestamps, ApiBase):
    __tablename__ = 'flavors'
    id = sa.Column(sa.Integer, primary_key=True)
    flavorid = sa.Column(sa.String(255), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    memory_mb = sa.Column(sa.Integer, nullable=False)
    vcpus = sa.Column(sa.Integer, nullable=False)
    root_gb = sa.Column(sa.Integer, nullable=False)
    ephemeral_gb = sa.Column(sa.Integer, nullable=False, default=0)
    swap = sa.Column(sa.Integer, nullable=False, default=0)
    rxtx_factor = sa.Column(sa.Float, nullable=False, default=1.0)
    is_public = sa.Column(sa.Boolean, nullable=False, default=True)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    description = sa.Column(sa.Text, nullable=True)
    extra_specs = orm.relationship('FlavorExtraSpec', lazy='selectin',
                                   cascade='all, delete-orphan')
    projects = orm.relationship('FlavorProject', lazy='selectin',
                                cascade='all, delete-orphan')


class FlavorExtraSpec(_Timestamps, ApiBase):
    __tablename__ = 'flavor_extra_specs'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(sa.Integer, sa.ForeignKey('flavors.id'),
                          nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=True)


class FlavorProject(_Timestamps, ApiBase):
    """A project that may see and use a private flavor."""
    __tablename__ = 'flavor_projects'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(sa.Integer,
                          sa.ForeignKey('flavors.id', ondelete='CASCADE'),
                          nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)


class InstanceGroup(_Timestamps, ApiBase):
    """A server group: instances placed together or apart by policy."""
    __tablename__ = 'instance_groups'
    __table_args__ = (sa.Index('instance_groups_project_id_idx',
                               'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    policy = sa.Column(sa.String(255), nullable=False)
    # JSON object, e.g. {"max_server_per_host": 2}.
    rules = sa.Column(sa.Text, nullable=False, default='{}')
    members = orm.relationship('InstanceGroupMember', lazy='selectin',
                               cascade='all, delete-orphan',
                               order_by='InstanceGroupMember.id')


class InstanceGroupMember(_Timestamps, ApiBase):
    __tablename__ = 'instance_group_members'
    __table_args__ = (sa.UniqueConstraint('group_id', 'instance_uuid'),
                      sa.Index('instance_group_members_instance_uuid_idx',
                               'instance_uuid'))
    id = sa.Column(sa.Integer, primary_key=True)
    group_id = sa.Column(sa.Integer, sa.ForeignKey('instance_groups.id'),
                         nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)


class Quota(_Timestamps, ApiBase):
    """A project's limit of one resource, overriding the defaults."""
    __tablename__ = 'quotas'
    __table_args__ = (sa.UniqueConstraint('project_id', 'resource'),)
    id = sa.Column(sa.Integer, primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class QuotaClass(_Timestamps, ApiBase):
    """A quota class's limit of one resource; the class "default" holds
    the defaults every project starts from."""
    __tablename__ = 'quota_classes'
    __table_args__ = (sa.UniqueConstraint('class_name', 'resource'),)
    id = sa.Column(sa.Integer, primary_key=True)
    class_name = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class ProjectQuotaLock(ApiBase):
    """One row per project that creates counted resources: whoever
    checks a quota and records what it counts updates it first, so that
    two such transactions of one project take turns."""
    __tablename__ = 'project_quota_locks'
    project_id = sa.Column(sa.String(255), primary_key=True)
    generation = sa.Column(sa.Integer, nullable=False, default=0)


class KeyPair(_Timestamps, ApiBase):
    __tablename__ = 'key_pairs'
    __table_args__ = (sa.UniqueConstraint('user_id', 'name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False)
    fingerprint = sa.Column(sa.String(255))
    public_key = sa.Column(sa.Text)
    type = sa.Column(sa.String(10), nullable=False, default='ssh')


class Image(_Timestamps, ApiBase):
    """An image users made in the built-in image catalog (``[glance]
    source = builtin``): Glance's image record, with its custom
    properties and tags in it as JSON. The data of an upload is not kept
    (the fake driver boots nothing from it), only its size and checksums.
    A deleted image keeps its row (``deleted``), as in Glance, so that
    its id is never given again."""
    __tablename__ = 'images'
    __table_args__ = (sa.Index('images_owner_idx', 'owner'),
                      sa.Index('images_visibility_idx', 'visibility'),
                      sa.Index('images_created_at_idx', 'created_at'))
    id = sa.Column(sa.String(36), primary_key=True)
    name = sa.Column(sa.String(255))
    status = sa.Column(sa.String(30), nullable=False)
    visibility = sa.Column(sa.String(9), nullable=False)
    protected = sa.Column(sa.Boolean, nullable=False, default=False)
    os_hidden = sa.Column(sa.Boolean, nullable=False, default=False)
    # The project that owns the image.
    owner = sa.Column(sa.String(255))
    disk_format = sa.Column(sa.String(20))
    container_format = sa.Column(sa.String(20))
    size = sa.Column(sa.BigInteger)
    checksum = sa.Column(sa.String(32))
    os_hash_algo = sa.Column(sa.String(64))
    os_hash_value = sa.Column(sa.String(128))
    min_disk = sa.Column(sa.Integer, nullable=False, default=0)
    min_ram = sa.Column(sa.Integer, nullable=False, default=0)
    # JSON: {name: value} of the custom properties (values are strings),
    # serialized with sorted keys; a list of tags.
    properties = sa.Column(types.MediumText(), nullable=False)
    tags = sa.Column(types.MediumText(), nullable=False)
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    deleted_at = sa.Column(types.DateTime())


# --- cell database ----------------------------------------------------------

class Instance(_Timestamps, CellBase):
    __tablename__ = 'instances'
    __table_args__ = (sa.Index('instances_project_id_deleted_idx',
                               'project_id', 'deleted'),
                      sa.Index('instances_host_deleted_idx',
                               'host', 'deleted'))
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    display_name = sa.Column(sa.String(255))
    display_description = sa.Column(sa.Text)
    hostname = sa.Column(sa.String(255))
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255))
    host = sa.Column(sa.String(255))
    node = sa.Column(sa.String(255))
    vm_state = sa.Column(sa.String(255), nullable=False)
    task_state = sa.Column(sa.String(255))
    power_state = sa.Column(sa.Integer, nullable=False, default=0)
    flavor = sa.Column(types.MediumText(), nullable=False)
    image_ref = sa.Column(sa.String(255))
    availability_zone = sa.Column(sa.String(255))
    key_name = sa.Column(sa.String(255))
    metadata_ = sa.Column('metadata', types.MediumText())
    reservation_id = sa.Column(sa.String(255))
    launch_index = sa.Column(sa.Integer)
    launched_at = sa.Column(types.DateTime())
    terminated_at = sa.Column(types.DateTime())
    deleted_at = sa.Column(types.DateTime())
    deleted = sa.Column(sa.Boolean, nullable=False, default=False)
    access_ip_v4 = sa.Column(sa.String(39))
    access_ip_v6 = sa.Column(sa.String(39))
    locked = sa.Column(sa.Boolean, nullable=False, default=False,
                       server_default=sa.false())
    locked_by = sa.Column(sa.String(255))
    locked_reason = sa.Column(sa.String(255))
    user_data = sa.Column(types.MediumText())
    kernel_id = sa.Column(sa.String(255))
    ramdisk_id = sa.Column(sa.String(255))
    root_device_name = sa.Column(sa.String(255))
    system_metadata = sa.Column(types.MediumText())


class BuildPlan(_Timestamps, CellBase):
    """What a build in a cell still has to go on with, while it is
    unfinished: the host it was cast to (which holds its claim; NULL
    once that host gave the build back), the same-cell alternates not
    tried yet, the attempts so far and the request spec. The cell
    conductor casts the build again, or on to the next alternate, from
    it when a message or a compute was lost (``conductor/tasks/
    recover.py``); a build starts only on the host it names."""
    __tablename__ = 'build_plans'
    __table_args__ = (sa.Index('build_plans_instance_uuid_idx',
                               'instance_uuid', unique=True),)
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    host = sa.Column(sa.String(255))
    node = sa.Column(sa.String(255))
    # JSON: the RequestSpec, the list of Selections, the SchedulerRetries
    # (oslo primitives).
    request_spec = sa.Column(types.MediumText(), nullable=False)
    alternates = sa.Column(types.MediumText(), nullable=False)
    retry = sa.Column(sa.Text, nullable=False)
    # How many times the build was cast again to ``host``.
    recasts = sa.Column(sa.Integer, nullable=False, default=0,
                        server_default='0')


class InstanceTag(CellBase):
    """One tag of a server (2.26); ``resource_id`` is its uuid."""
    __tablename__ = 'instance_tags'
    __table_args__ = (sa.Index('instance_tags_tag_idx', 'tag'),)
    resource_id = sa.Column(sa.String(36), primary_key=True)
    tag = sa.Column(sa.String(80), primary_key=True)


class InstanceFault(_Timestamps, CellBase):
    __tablename__ = 'instance_faults'
    __table_args__ = (sa.Index('instance_faults_instance_uuid_idx',
                               'instance_uuid'),)
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    code = sa.Column(sa.Integer, nullable=False)
    message = sa.Column(sa.String(255), nullable=False)
    details = sa.Column(types.MediumText())
    host = sa.Column(sa.String(255))


class InstanceAction(_Timestamps, CellBase):
    """One user-visible operation on an instance (a create, a delete)."""
    __tablename__ = 'instance_actions'
    __table_args__ = (sa.Index('instance_actions_instance_uuid_idx',
                               'instance_uuid'),
                      sa.UniqueConstraint('instance_uuid', 'request_id'))
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    request_id = sa.Column(sa.String(255), nullable=False)
    action = sa.Column(sa.String(255), nullable=False)
    project_id = sa.Column(sa.String(255))
    user_id = sa.Column(sa.String(255))
    start_time = sa.Column(types.DateTime(), nullable=False)
    message = sa.Column(sa.String(255))


class InstanceActionEvent(_Timestamps, CellBase):
    """A step of an action: scheduling, a build attempt on a host, ..."""
    __tablename__ = 'instance_actions_events'
    __table_args__ = (sa.Index('instance_actions_events_action_id_idx',
                               'action_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    action_id = sa.Column(sa.Integer, sa.ForeignKey('instance_actions.id'),
                          nullable=False)
    event = sa.Column(sa.String(255), nullable=False)
    start_time = sa.Column(types.DateTime(), nullable=False)
    finish_time = sa.Column(types.DateTime())
    result = sa.Column(sa.String(255))
    host = sa.Column(sa.String(255))
    details = sa.Column(types.MediumText())


class Service(_Timestamps, CellBase):
    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('host', 'binary'),
                      sa.Index('services_uuid_idx', 'uuid', unique=True))
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False)
    binary = sa.Column(sa.String(255), nullable=False)
    topic = sa.Column(sa.String(255), nullable=False)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    disabled_reason = sa.Column(sa.String(255))
    report_count = sa.Column(sa.Integer, nullable=False, default=0)
    last_seen_up = sa.Column(types.DateTime())
    # The service version (objects/service.py SERVICE_VERSION) of the code
    # that last heartbeat; NULL from the release before service versions.
    version = sa.Column(sa.Integer)
    # The id of the compute API from 2.53.
    uuid = sa.Column(sa.String(36))
    forced_down = sa.Column(sa.Boolean, nullable=False, default=False,
                            server_default=sa.false())


class Migration(_Timestamps, CellBase):
    """One move of an instance: a resize, a cold or live migration or an
    evacuation. Its ``uuid`` is also the scheduler consumer that holds the
    source host's resources while the move is under way."""
    __tablename__ = 'migrations'
    __table_args__ = (
        sa.Index('migrations_uuid_idx', 'uuid', unique=True),
        sa.Index('migrations_instance_uuid_status_idx', 'instance_uuid',
                 'status'),
        sa.Index('migrations_source_compute_status_idx', 'source_compute',
                 'status'),
        sa.Index('migrations_dest_compute_status_idx', 'dest_compute',
                 'status'),
        sa.Index('migrations_updated_at_idx', 'updated_at'),
    )
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    # migration, resize, live-migration, evacuation
    migration_type = sa.Column(sa.String(32), nullable=False)
    status = sa.Column(sa.String(255), nullable=False)
    source_compute = sa.Column(sa.String(255))
    source_node = sa.Column(sa.String(255))
    dest_compute = sa.Column(sa.String(255))
    dest_node = sa.Column(sa.String(255))
    dest_host = sa.Column(sa.String(255))
    # The flavors before and after (the same for a migration): their ids
    # as the API shows them, and each whole as the instance held it.
    old_instance_type_id = sa.Column(sa.Integer)
    new_instance_type_id = sa.Column(sa.Integer)
    old_flavor = sa.Column(types.MediumText())
    new_flavor = sa.Column(types.MediumText())
    # The vm state to come back to (ACTIVE or STOPPED); for an
    # evacuation, the one to end in.
    old_vm_state = sa.Column(sa.String(255))
    user_id = sa.Column(sa.String(255))
    project_id = sa.Column(sa.String(255))
    deleted_at = sa.Column(types.DateTime())
    deleted = sa.Column(sa.Boolean, nullable=False, default=False,
                        server_default=sa.false())


# --- scheduler database -----------------------------------------------------

class ResourceProvider(_Timestamps, SchedulerBase):
    """A resource provider: a compute node, as the scheduler claims
    against it, or one made through the Placement API (no ``host``),
    either a root or a child in the tree of ``root_provider_id``."""
    __tablename__ = 'resource_providers'
    __table_args__ = (
        sa.UniqueConstraint('host', 'name'),
        # The hosts each select re-reads the status of (host_manager).
        sa.Index('resource_providers_service_disabled_idx',
                 'service_disabled'),
        sa.Index('resource_providers_forced_down_idx', 'forced_down'),
        # What the periodic reload of every scheduler reads (host_manager).
        sa.Index('resource_providers_changed_at_idx', 'changed_at'),
        sa.Index('resource_providers_parent_provider_id_idx',
                 'parent_provider_id'),
        sa.Index('resource_providers_root_provider_id_idx',
                 'root_provider_id'),
        sa.Index('resource_providers_name_idx', 'name'))
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    # The compute host; None for a provider made through the Placement
    # API, which no compute reports and no server is placed on.
    host = sa.Column(sa.String(255), nullable=True)
    name = sa.Column(sa.String(255), nullable=False)
    # The tree: the parent (None for a root) and the root (None: the
    # provider is its own root).
    parent_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey(
            'resource_providers.id',
            name='resource_providers_parent_provider_id_fkey'))
    root_provider_id = sa.Column(sa.Integer)
    cell_uuid = sa.Column(sa.String(36))
    availability_zone = sa.Column(sa.String(255))
    # Bumped by every claim and release; a claim that saw an older value
    # lost a race.
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    # What the compute itself reports.
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)
    last_report_at = sa.Column(types.DateTime())
    # Which scheduler (its host manager) wrote last_report_at: a reload
    # reads the report times other schedulers wrote since the last one.
    reported_by = sa.Column(sa.String(36))
    # What the operator said of the host's compute service (os-services),
    # which no report of the compute overrides; ``status_updated_at`` is
    # the time of the cell record the status was read from, so that an
    # older reading never replaces a newer one.
    service_disabled = sa.Column(sa.Boolean, nullable=False, default=False,
                                 server_default=sa.false())
    disabled_reason = sa.Column(sa.String(255))
    forced_down = sa.Column(sa.Boolean, nullable=False, default=False,
                            server_default=sa.false())
    status_updated_at = sa.Column(types.DateTime())
    # What the compute reports of its hypervisor.
    host_ip = sa.Column(sa.String(39))
    hypervisor_type = sa.Column(sa.String(255))
    hypervisor_version = sa.Column(sa.Integer)
    cpu_arch = sa.Column(sa.String(32))
    cpu_info = sa.Column(sa.Text)
    # What the compute counts of its builds: failures in a row (reset by
    # a success) and builds in flight.
    failed_builds = sa.Column(sa.Integer, nullable=False, default=0,
                              server_default='0')
    num_io_ops = sa.Column(sa.Integer, nullable=False, default=0,
                           server_default='0')
    # Which scheduler (its host manager) made every change of the
    # provider since the oldest one its next reload reads, so that the
    # reload skips them: its memory holds them already. Empty when
    # another scheduler changed it meanwhile, or a write did not say:
    # then every scheduler reads the row (claims.CHANGED_BY). Before
    # changed_at, so that MySQL, which assigns the columns of an UPDATE
    # from left to right, computes it from the row's former changed_at.
    changed_by = sa.Column(sa.String(36), onupdate=sa.null())
    # When what a scheduler keeps in memory of the provider last changed,
    # its liveness (last_report_at) apart: a report that said something
    # new, a claim or a release, the operator's status. Set by every
    # insert and update but those of a report's time alone, which keep
    # it; the periodic reload of each scheduler reads the providers
    # changed since its last one. Rows written before the column have
    # none, and are read by the first load only.
    changed_at = sa.Column(types.DateTime(), default=_now, onupdate=_now)


class Inventory(_Timestamps, SchedulerBase):
    __tablename__ = 'inventories'
    __table_args__ = (sa.UniqueConstraint('resource_provider_id',
                                          'resource_class'),)
    id = sa.Column(sa.Integer, primary_key=True)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), nullable=False)
    resource_class = sa.Column(sa.String(255), nullable=False)
    total = sa.Column(sa.Integer, nullable=False)
    reserved = sa.Column(sa.Integer, nullable=False, default=0)
    allocation_ratio = sa.Column(sa.Float, nullable=False, default=1.0)
    # What one allocation may take: at least min_unit, at most max_unit
    # (None: the total), a multiple of step_size.
    min_unit = sa.Column(sa.Integer, nullable=False, default=1,
                         server_default='1')
    max_unit = sa.Column(sa.Integer, nullable=True)
    step_size = sa.Column(sa.Integer, nullable=False, default=1,
                          server_default='1')


class Trait(_Timestamps, SchedulerBase):
    """A trait any provider may have: a standard one (os-traits) or an
    operator's ``CUSTOM_*``, recorded the first time it is used."""
    __tablename__ = 'traits'
    __table_args__ = (sa.UniqueConstraint('name', name='uniq_traits0name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)


class ResourceProviderTrait(_Timestamps, SchedulerBase):
    """A trait a provider has. ``reported``: its compute reported it, and
    its next report may take it away; an operator's stays."""
    __tablename__ = 'resource_provider_traits'
    __table_args__ = (sa.Index('resource_provider_traits_trait_id_idx',
                               'trait_id'),)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    trait_id = sa.Column(sa.Integer, sa.ForeignKey('traits.id'),
                         primary_key=True)
    reported = sa.Column(sa.Boolean, nullable=False, default=False,
                         server_default=sa.false())


class ResourceProviderAggregate(_Timestamps, SchedulerBase):
    """An aggregate a provider was put in through the Placement API (its
    host's host aggregates count on top)."""
    __tablename__ = 'resource_provider_aggregates'
    __table_args__ = (sa.Index(
        'resource_provider_aggregates_aggregate_uuid_idx',
        'aggregate_uuid'),)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    aggregate_uuid = sa.Column(sa.String(36), primary_key=True)


class ResourceClass(_Timestamps, SchedulerBase):
    """A custom resource class (``CUSTOM_*``); the standard ones come
    from the os-resource-classes library."""
    __tablename__ = 'resource_classes'
    __table_args__ = (sa.UniqueConstraint('name',
                                          name='uniq_resource_classes0name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)


class Allocation(_Timestamps, SchedulerBase):
    """What one instance (the consumer) holds of one provider."""
    __tablename__ = 'allocations'
    __table_args__ = (
        sa.UniqueConstraint('resource_provider_id', 'consumer_id',
                            'resource_class'),
        sa.Index('allocations_consumer_id_idx', 'consumer_id'))
    id = sa.Column(sa.Integer, primary_key=True)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), nullable=False)
    consumer_id = sa.Column(sa.String(36), nullable=False)
    resource_class = sa.Column(sa.String(255), nullable=False)
    used = sa.Column(sa.Integer, nullable=False)


class Consumer(_Timestamps, SchedulerBase):
    """A consumer whose allocations were written through the Placement
    API, with its owner, type and generation. The consumers of the
    scheduler's claims (servers, moves) have none."""
    __tablename__ = 'consumers'
    __table_args__ = (
        sa.UniqueConstraint('uuid', name='uniq_consumers0uuid'),
        sa.Index('consumers_project_id_user_id_idx', 'project_id',
                 'user_id'))
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False)
    consumer_type = sa.Column(sa.String(255))
    generation = sa.Column(sa.Integer, nullable=False, default=0,
                           server_default='0')


class ConsumerGroup(_Timestamps, SchedulerBase):
    """A server group as claims enforce it: a hard policy and a generation.

    Every claim of a member bumps the generation with the same guarded
    update as a provider's, so two members' claims never both decide on
    what they read before the other wrote.
    """
    __tablename__ = 'consumer_groups'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    policy = sa.Column(sa.String(255), nullable=False)
    max_per_host = sa.Column(sa.Integer, nullable=False, default=1)
    generation = sa.Column(sa.Integer, nullable=False, default=0)


class ConsumerGroupMember(_Timestamps, SchedulerBase):
    __tablename__ = 'consumer_group_members'
    __table_args__ = (
        sa.UniqueConstraint('group_id', 'consumer_id'),
        sa.Index('consumer_group_members_consumer_id_idx', 'consumer_id'))
    id = sa.Column(sa.Integer, primary_key=True)
    group_id = sa.Column(sa.Integer, sa.ForeignKey('consumer_groups.id'),
                         nullable=False)
    consumer_id = sa.Column(sa.String(36), nullable=False)


class Aggregate(_Timestamps, SchedulerBase):
    """A host aggregate: hosts grouped by the operator, with metadata the
    filters and weighers read (an ``availability_zone`` key makes it a
    zone). Soft-deleted as Nova shows it: ``deleted`` is 0 while it lives
    and its own id once deleted, so names are unique among live ones."""
    __tablename__ = 'aggregates'
    __table_args__ = (
        sa.UniqueConstraint('name', 'deleted',
                            name='uniq_aggregates0name0deleted'),)
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False)
    # Bumped by every change of the aggregate, its hosts or metadata: the
    # sum over all aggregates tells a scheduler whether to reload them.
    generation = sa.Column(sa.Integer, nullable=False, default=0,
                           server_default='0')
    deleted = sa.Column(sa.Integer, nullable=False, default=0,
                        server_default='0')
    deleted_at = sa.Column(types.DateTime())
    hosts = orm.relationship('AggregateHost', lazy='selectin',
                             cascade='all, delete-orphan',
                             order_by='AggregateHost.id')
    metadata_items = orm.relationship('AggregateMetadata', lazy='selectin',
                                      cascade='all, delete-orphan',
                                      order_by='AggregateMetadata.id')


class AggregateHost(_Timestamps, SchedulerBase):
    __tablename__ = 'aggregate_hosts'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uniq_aggregate_hosts0aggregate_id0host'),
        sa.Index('aggregate_hosts_host_idx', 'host'))
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey('aggregates.id'),
                             nullable=False)
    host = sa.Column(sa.String(255), nullable=False)


class AggregateMetadata(_Timestamps, SchedulerBase):
    __tablename__ = 'aggregate_metadata'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate_id0key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey('aggregates.id'),
                             nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class SchedulerService(_Timestamps, SchedulerBase):
    """A scheduler process, as it records itself in its own database so
    that clients can ask (through the scheduler) what the schedulers
    understand."""
    __tablename__ = 'services'
    __table_args__ = (sa.UniqueConstraint('host', 'binary'),
                      sa.Index('services_uuid_idx', 'uuid', unique=True))
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False)
    binary = sa.Column(sa.String(255), nullable=False)
    topic = sa.Column(sa.String(255), nullable=False)
    report_count = sa.Column(sa.Integer, nullable=False, default=0)
    last_seen_up = sa.Column(types.DateTime())
    version = sa.Column(sa.Integer)
    uuid = sa.Column(sa.String(36))
