"""The tables of a cell database (one per cell, cell0 included): the
instances, with their build plans, tags, faults and actions, the cell's
services, and the migrations of its instances. Each table is on
``CellBase`` (here), whose metadata ``db.migration`` compares with
``migrations/cell``.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from scheduler_split.db import models
from scheduler_split.db import types


class CellBase(orm.DeclarativeBase):
    pass


class Instance(models.Timestamps, CellBase):
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


class BuildPlan(models.Timestamps, CellBase):
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


class InstanceFault(models.Timestamps, CellBase):
    __tablename__ = 'instance_faults'
    __table_args__ = (sa.Index('instance_faults_instance_uuid_idx',
                               'instance_uuid'),)
    id = sa.Column(sa.Integer, primary_key=True)
    instance_uuid = sa.Column(sa.String(36), nullable=False)
    code = sa.Column(sa.Integer, nullable=False)
    message = sa.Column(sa.String(255), nullable=False)
    details = sa.Column(types.MediumText())
    host = sa.Column(sa.String(255))


class InstanceAction(models.Timestamps, CellBase):
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


class InstanceActionEvent(models.Timestamps, CellBase):
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


class Service(models.Timestamps, CellBase):
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


class Migration(models.Timestamps, CellBase):
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
