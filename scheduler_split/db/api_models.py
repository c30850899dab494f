"""The tables of the API database: the cells and what maps hosts and
instances to them, the build requests and request specs of servers not
yet in a cell, and what the API alone keeps (flavors, server groups,
quotas, key pairs and the built-in image catalog). Each table is on
``ApiBase`` (here), whose metadata ``db.migration`` compares with
``migrations/api``.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from scheduler_split.db import models
from scheduler_split.db import types


class ApiBase(orm.DeclarativeBase):
    pass


class CellMapping(models.Timestamps, ApiBase):
    __tablename__ = 'cell_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    transport_url = sa.Column(sa.Text, nullable=False)
    database_connection = sa.Column(sa.Text, nullable=False)
    disabled = sa.Column(sa.Boolean, nullable=False, default=False)


class HostMapping(models.Timestamps, ApiBase):
    __tablename__ = 'host_mappings'
    id = sa.Column(sa.Integer, primary_key=True)
    host = sa.Column(sa.String(255), nullable=False, unique=True)
    cell_id = sa.Column(sa.Integer, sa.ForeignKey('cell_mappings.id'),
                        nullable=False)


class InstanceMapping(models.Timestamps, ApiBase):
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


class BuildRequest(models.Timestamps, ApiBase):
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


class RequestSpec(models.Timestamps, ApiBase):
    __tablename__ = 'request_specs'
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False, unique=True)
    spec = sa.Column(types.MediumText(), nullable=False)


class Flavor(models.Timestamps, ApiBase):
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


class FlavorExtraSpec(models.Timestamps, ApiBase):
    __tablename__ = 'flavor_extra_specs'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(sa.Integer, sa.ForeignKey('flavors.id'),
                          nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=True)


class FlavorProject(models.Timestamps, ApiBase):
    """A project that may see and use a private flavor."""
    __tablename__ = 'flavor_projects'
    __table_args__ = (sa.UniqueConstraint('flavor_id', 'project_id'),)
    id = sa.Column(sa.Integer, primary_key=True)
    flavor_id = sa.Column(sa.Integer,
                          sa.ForeignKey('flavors.id', ondelete='CASCADE'),
                          nullable=False)
    project_id = sa.Column(sa.String(255), nullable=False)


class InstanceGroup(models.Timestamps, ApiBase):
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


class InstanceGroupMember(models.Timestamps, ApiBase):
    __tablename__ = 'instance_group_members'
    __table_args__ = (sa.UniqueConstraint('group_id', 'instance_uuid'),
                      sa.Index('instance_group_members_instance_uuid_idx',
                               'instance_uuid'))
    id = sa.Column(sa.Integer, primary_key=True)
    group_id = sa.Column(sa.Integer, sa.ForeignKey('instance_groups.id'),
                         nullable=False)
    instance_uuid = sa.Column(sa.String(36), nullable=False)


class Quota(models.Timestamps, ApiBase):
    """A project's limit of one resource, overriding the defaults."""
    __tablename__ = 'quotas'
    __table_args__ = (sa.UniqueConstraint('project_id', 'resource'),)
    id = sa.Column(sa.Integer, primary_key=True)
    project_id = sa.Column(sa.String(255), nullable=False)
    resource = sa.Column(sa.String(255), nullable=False)
    hard_limit = sa.Column(sa.Integer, nullable=False)


class QuotaClass(models.Timestamps, ApiBase):
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


class KeyPair(models.Timestamps, ApiBase):
    __tablename__ = 'key_pairs'
    __table_args__ = (sa.UniqueConstraint('user_id', 'name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)
    user_id = sa.Column(sa.String(255), nullable=False)
    fingerprint = sa.Column(sa.String(255))
    public_key = sa.Column(sa.Text)
    type = sa.Column(sa.String(10), nullable=False, default='ssh')


class Image(models.Timestamps, ApiBase):
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
