"""The tables of the scheduler database: the resource providers with
their inventories, traits, aggregates and allocations, the consumers and
consumer groups the claims enforce, the host aggregates, and the
schedulers' own service records. Each table is on
``SchedulerBase`` (here), whose metadata ``db.migration`` compares with
``migrations/scheduler``.
"""

import sqlalchemy as sa
from sqlalchemy import orm

from scheduler_split.db import models
from scheduler_split.db import types


class SchedulerBase(orm.DeclarativeBase):
    pass


class ResourceProvider(models.Timestamps, SchedulerBase):
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
    changed_at = sa.Column(types.DateTime(), default=models.now,
                           onupdate=models.now)


class Inventory(models.Timestamps, SchedulerBase):
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


class Trait(models.Timestamps, SchedulerBase):
    """A trait any provider may have: a standard one (os-traits) or an
    operator's ``CUSTOM_*``, recorded the first time it is used."""
    __tablename__ = 'traits'
    __table_args__ = (sa.UniqueConstraint('name', name='uniq_traits0name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)


class ResourceProviderTrait(models.Timestamps, SchedulerBase):
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


class ResourceProviderAggregate(models.Timestamps, SchedulerBase):
    """An aggregate a provider was put in through the Placement API (its
    host's host aggregates count on top)."""
    __tablename__ = 'resource_provider_aggregates'
    __table_args__ = (sa.Index(
        'resource_provider_aggregates_aggregate_uuid_idx',
        'aggregate_uuid'),)
    resource_provider_id = sa.Column(
        sa.Integer, sa.ForeignKey('resource_providers.id'), primary_key=True)
    aggregate_uuid = sa.Column(sa.String(36), primary_key=True)


class ResourceClass(models.Timestamps, SchedulerBase):
    """A custom resource class (``CUSTOM_*``); the standard ones come
    from the os-resource-classes library."""
    __tablename__ = 'resource_classes'
    __table_args__ = (sa.UniqueConstraint('name',
                                          name='uniq_resource_classes0name'),)
    id = sa.Column(sa.Integer, primary_key=True)
    name = sa.Column(sa.String(255), nullable=False)


class Allocation(models.Timestamps, SchedulerBase):
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


class Consumer(models.Timestamps, SchedulerBase):
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


class ConsumerGroup(models.Timestamps, SchedulerBase):
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


class ConsumerGroupMember(models.Timestamps, SchedulerBase):
    __tablename__ = 'consumer_group_members'
    __table_args__ = (
        sa.UniqueConstraint('group_id', 'consumer_id'),
        sa.Index('consumer_group_members_consumer_id_idx', 'consumer_id'))
    id = sa.Column(sa.Integer, primary_key=True)
    group_id = sa.Column(sa.Integer, sa.ForeignKey('consumer_groups.id'),
                         nullable=False)
    consumer_id = sa.Column(sa.String(36), nullable=False)


class Aggregate(models.Timestamps, SchedulerBase):
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


class AggregateHost(models.Timestamps, SchedulerBase):
    __tablename__ = 'aggregate_hosts'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'host',
                            name='uniq_aggregate_hosts0aggregate_id0host'),
        sa.Index('aggregate_hosts_host_idx', 'host'))
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey('aggregates.id'),
                             nullable=False)
    host = sa.Column(sa.String(255), nullable=False)


class AggregateMetadata(models.Timestamps, SchedulerBase):
    __tablename__ = 'aggregate_metadata'
    __table_args__ = (
        sa.UniqueConstraint('aggregate_id', 'key',
                            name='uniq_aggregate_metadata0aggregate_id0key'),)
    id = sa.Column(sa.Integer, primary_key=True)
    aggregate_id = sa.Column(sa.Integer, sa.ForeignKey('aggregates.id'),
                             nullable=False)
    key = sa.Column(sa.String(255), nullable=False)
    value = sa.Column(sa.String(255), nullable=False)


class SchedulerService(models.Timestamps, SchedulerBase):
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
