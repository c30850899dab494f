import functools

from oslo_utils import uuidutils
from oslo_utils import versionutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split import servicegroup

# The version of this release's services, recorded with every heartbeat.
# Bump it with every change of an RPC API (or of what a service expects of
# the others) and add a line to the history saying which RPC versions the
# services of that version serve.
SERVICE_VERSION = 19

# What a service of each version understands, by index. ``auto`` in
# [upgrade_levels] caps a client at the entry of the oldest service of the
# kind it talks to that is still running.
SERVICE_VERSION_HISTORY = (
    # 0: the release before service versions; its records have none.
    {'compute_rpc': '1.0', 'conductor_rpc': '1.0', 'scheduler_rpc': '1.0'},
    # 1: Selection 1.1 carries the host's availability zone: compute 1.1,
    #    conductor 1.1, scheduler 1.1.
    {'compute_rpc': '1.1', 'conductor_rpc': '1.1', 'scheduler_rpc': '1.1'},
    # 2: Instance 1.2 carries accessIPv4/accessIPv6: compute 1.2,
    #    conductor 1.2.
    {'compute_rpc': '1.2', 'conductor_rpc': '1.2', 'scheduler_rpc': '1.1'},
    # 3: computes read and write instance records and their service
    #    record through their cell conductor: conductor 1.3.
    {'compute_rpc': '1.2', 'conductor_rpc': '1.3', 'scheduler_rpc': '1.1'},
    # 4: the super-conductor answers consumers_needing_claims for the
    #    scheduler's heal: conductor 1.4.
    {'compute_rpc': '1.2', 'conductor_rpc': '1.4', 'scheduler_rpc': '1.1'},
    # 5: the scheduler keeps the operator's status of hosts and answers
    #    for services and hypervisors: scheduler 1.2; computes carry their
    #    service record's status (which the conductor's heartbeat answers
    #    with) and their hypervisor's details in their reports.
    {'compute_rpc': '1.2', 'conductor_rpc': '1.4', 'scheduler_rpc': '1.2'},
    # 6: the scheduler keeps host aggregates and answers for availability
    #    zones: scheduler 1.3.
    {'compute_rpc': '1.2', 'conductor_rpc': '1.4', 'scheduler_rpc': '1.3'},
    # 7: computes take stop/start/reboot/pause/unpause/suspend/resume
    #    casts and Instance 1.3 (the lock and tags): compute 1.3;
    #    conductor 1.5 (Instance 1.3, instance_save with a fault).
    {'compute_rpc': '1.3', 'conductor_rpc': '1.5', 'scheduler_rpc': '1.3'},
    # 8: RequestSpec 1.2 carries the image's properties (for
    #    ImagePropertiesFilter): compute 1.4, conductor 1.6, scheduler 1.4.
    {'compute_rpc': '1.4', 'conductor_rpc': '1.6', 'scheduler_rpc': '1.4'},
    # 9: a compute's heartbeat records its service only when it starts;
    #    after an operator deleted the record it stays deleted until the
    #    compute restarts: conductor 1.7 (service_heartbeat's ``create``).
    {'compute_rpc': '1.4', 'conductor_rpc': '1.7', 'scheduler_rpc': '1.4'},
    # 10: moves: the scheduler moves a claim between consumers (a
    #     migration holds the source host during a move) and keeps a move
    #     to its cell: scheduler 1.5; RequestSpec 1.3 and Migration 1.0:
    #     compute 1.5, conductor 1.8.
    {'compute_rpc': '1.5', 'conductor_rpc': '1.8', 'scheduler_rpc': '1.5'},
    # 11: the super-conductor reconciles claims: it pages through the
    #     scheduler's consumers and releases those nothing needs; the
    #     scheduler no longer asks the conductor: scheduler 1.6.
    {'compute_rpc': '1.5', 'conductor_rpc': '1.8', 'scheduler_rpc': '1.6'},
    # 12: a compute's save of an instance carries the action event it
    #     records, written in the same transaction: conductor 1.9.
    {'compute_rpc': '1.5', 'conductor_rpc': '1.9', 'scheduler_rpc': '1.6'},
    # 13: the scheduler places several requests in one call (the
    #     super-conductor's coalescing of boots): scheduler 1.7.
    {'compute_rpc': '1.5', 'conductor_rpc': '1.9', 'scheduler_rpc': '1.7'},
    # 14: builds keep a plan in their cell, from which the cell conductor
    #     casts a lost build again or on to its next alternate; a compute
    #     that restarted mid-build gives the build back to it
    #     (give_back_build): conductor 1.10.
    {'compute_rpc': '1.5', 'conductor_rpc': '1.10', 'scheduler_rpc': '1.7'},
    # 15: rebuilds on a server's own host: the scheduler checks the host
    #     for a new image (check_rebuild): scheduler 1.8; the
    #     super-conductor's rebuild_instance: conductor 1.11; the
    #     compute's rebuild_in_place and Instance 1.4 (user data, kernel,
    #     ramdisk, root device): compute 1.6.
    {'compute_rpc': '1.6', 'conductor_rpc': '1.11', 'scheduler_rpc': '1.8'},
    # 16: shelve, shelve-offload and unshelve: the compute's
    #     shelve_instance, shelve_offload_instance and unshelve_instance
    #     and Instance 1.5 (system metadata): compute 1.7; the
    #     super-conductor's unshelve_instance and the cell conductor's
    #     unshelve reschedule: conductor 1.12; the scheduler answers the
    #     Placement API's reads: scheduler 1.9.
    {'compute_rpc': '1.7', 'conductor_rpc': '1.12', 'scheduler_rpc': '1.9'},
    # 17: schedules on traits and any resource class; the Placement API
    #     writes the trait catalog and a provider's traits through the
    #     scheduler: scheduler 1.10.
    {'compute_rpc': '1.7', 'conductor_rpc': '1.12',
     'scheduler_rpc': '1.10'},
    # 18: the Placement API writes resource providers (made, renamed,
    #     re-parented, deleted), their inventories and aggregates through
    #     the scheduler: scheduler 1.11.
    {'compute_rpc': '1.7', 'conductor_rpc': '1.12',
     'scheduler_rpc': '1.11'},
    # 19: computes upload the data of their servers' images: the
    #     compute's snapshot_instance, and shelve_instance uploading the
    #     shelved image: compute 1.8.
    {'compute_rpc': '1.8', 'conductor_rpc': '1.12',
     'scheduler_rpc': '1.11'},
)

# The binary names services record themselves under.
COMPUTE = 'scheduler-split-compute'
CONDUCTOR = 'scheduler-split-conductor'
SCHEDULER = 'scheduler-split-scheduler'

_FIELDS = ('host', 'binary', 'topic', 'disabled', 'last_seen_up', 'version')
_ALL_FIELDS = _FIELDS + ('id', 'uuid', 'disabled_reason', 'forced_down',
                         'created_at', 'updated_at')


def heartbeat_row(session, model, host, binary, topic,
                  version=SERVICE_VERSION, create=True):
    """Create or refresh the record of a service of ``version`` (this
    release's by default). Without ``create`` a missing record (deleted
    by the operator) stays missing: None."""
    row = _refresh(session, model.__table__, host, binary, version)
    if row is not None:
        return row
    row = session.scalars(sa.select(model).where(
        model.host == host, model.binary == binary)).first()
    if row is None:
        if not create:
            return None
        row = model(host=host, binary=binary, topic=topic, report_count=0)
        session.add(row)
    if row.uuid is None:
        row.uuid = uuidutils.generate_uuid()
    row.report_count += 1
    row.last_seen_up = base.naive_utc(base.utcnow())
    row.version = version
    session.flush()
    return row


@functools.lru_cache(maxsize=None)
def _refresh_statements(table):
    """The heartbeat of a record that exists (and has its uuid) as one
    UPDATE, and the read of the row it refreshed: built once per table."""
    where = (table.c.host == sa.bindparam('b_host'),
             table.c.binary == sa.bindparam('b_binary'))
    update = table.update().where(*where, table.c.uuid.isnot(None)).values(
        report_count=table.c.report_count + 1)
    return update, update.returning(*table.c), sa.select(table).where(*where)


def _refresh(session, table, host, binary, version):
    """Refresh an existing record in one statement (two where UPDATE
    cannot return the row: MySQL, MariaDB); the row, or None when there
    is no record with a uuid to refresh."""
    update, returning, select = _refresh_statements(table)
    conn = session.connection()
    params = dict(b_host=host, b_binary=binary, version=version,
                  last_seen_up=base.naive_utc(base.utcnow()))
    if conn.dialect.update_returning:
        return conn.execute(returning, params).first()
    if conn.execute(update, params).rowcount != 1:
        return None
    return conn.execute(select, dict(b_host=host, b_binary=binary)).first()


def minimum_version(session, model, binary):
    """The lowest service version of the running ``binary`` services.

    A record without a version is of the release before service versions
    (0). None when no such service is running.
    """
    return session.scalar(sa.select(
        sa.func.min(sa.func.coalesce(model.version, 0))).where(
        model.binary == binary, servicegroup.recent(model.last_seen_up)))


@base.ObjectRegistry.register
class Service(base.SchedulerSplitObject):
    """A service record in a cell database, with its last heartbeat."""
    # 1.0: initial
    # 1.1: version
    # 1.2: id, uuid, disabled_reason, forced_down, created_at, updated_at
    VERSION = '1.2'

    fields = {
        'id': fields.IntegerField(nullable=True, default=None),
        'uuid': fields.UUIDField(nullable=True, default=None),
        'disabled_reason': fields.StringField(nullable=True, default=None),
        'forced_down': fields.BooleanField(default=False),
        'created_at': fields.DateTimeField(nullable=True, default=None),
        'updated_at': fields.DateTimeField(nullable=True, default=None),
        'host': fields.StringField(),
        'binary': fields.StringField(),
        'topic': fields.StringField(),
        'disabled': fields.BooleanField(default=False),
        'last_seen_up': fields.DateTimeField(nullable=True),
        'version': fields.IntegerField(nullable=True, default=None),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 2):
            for name in _ALL_FIELDS[len(_FIELDS):]:
                primitive.pop(name, None)
        if target < (1, 1):
            primitive.pop('version', None)

    def status(self):
        """What the operator said of this service, as a compute carries
        it to the scheduler."""
        return {'disabled': self.disabled,
                'disabled_reason': self.disabled_reason,
                'forced_down': self.forced_down,
                'updated_at': (self.updated_at.isoformat()
                               if self.updated_at else None)}

    @classmethod
    def heartbeat(cls, ctx, host, binary, topic, version=SERVICE_VERSION,
                  create=True):
        """Create the record if needed, mark the service seen now and
        record its service ``version`` (by default this release's; a
        conductor recording a compute's heartbeat passes the compute's).
        Without ``create`` (a heartbeat after the first of a process) a
        record the operator deleted is not made again:
        ``ServiceNotFound``.
        """
        for last in (False, True):
            try:
                with engines.writer(ctx.cell_db) as session:
                    row = heartbeat_row(session, cell_models.Service, host,
                                        binary, topic, version,
                                        create=create)
                    if row is None:
                        raise exception.ServiceNotFound(host=host,
                                                        binary=binary)
                    return base.apply_row(cls(), row, _ALL_FIELDS)
            except sa.exc.IntegrityError:
                # Two first heartbeats of one service at once (a call
                # sent again while the first was held up, through two
                # conductors): the other created the record, which the
                # next try refreshes.
                if last:
                    raise

    @classmethod
    def get_all(cls, ctx, binary=None, host=None):
        with engines.reader(ctx.cell_db) as session:
            query = sa.select(cell_models.Service).order_by(
                cell_models.Service.host)
            if binary is not None:
                query = query.where(cell_models.Service.binary == binary)
            if host is not None:
                query = query.where(cell_models.Service.host == host)
            rows = list(session.scalars(query))
        services = []
        for row in rows:
            if row.uuid is None:
                # Recorded by a service of the release before uuids.
                row.uuid = cls._give_uuid(ctx, row.id)
            services.append(base.apply_row(cls(), row, _ALL_FIELDS))
        return services

    @staticmethod
    def _give_uuid(ctx, service_id):
        service = cell_models.Service
        with engines.writer(ctx.cell_db) as session:
            session.execute(sa.update(service).where(
                service.id == service_id, service.uuid.is_(None)).values(
                uuid=uuidutils.generate_uuid()))
            return session.scalar(sa.select(service.uuid).where(
                service.id == service_id))

    @classmethod
    def get_by_host_and_binary(cls, ctx, host, binary):
        found = cls.get_all(ctx, binary=binary, host=host)
        return found[0] if found else None

    @classmethod
    def update_status(cls, ctx, service_id, **changes):
        """Write ``changes`` (disabled, disabled_reason, forced_down) to
        the record ``service_id``; the record as written, or None if it
        is gone."""
        service = cell_models.Service
        with engines.writer(ctx.cell_db) as session:
            row = session.get(service, service_id)
            if row is None:
                return None
            for name, value in changes.items():
                setattr(row, name, value)
            # Always a new time, even if nothing changed, so that the
            # status read from this record supersedes older readings.
            row.updated_at = base.naive_utc(base.utcnow())
            session.flush()
            return base.apply_row(cls(), row, _ALL_FIELDS)

    @classmethod
    def destroy(cls, ctx, service_id):
        with engines.writer(ctx.cell_db) as session:
            return session.execute(sa.delete(cell_models.Service).where(
                cell_models.Service.id == service_id)).rowcount == 1

    @classmethod
    def get_minimum_version(cls, ctx, binary):
        """The lowest service version of the ``binary`` services running
        in the targeted cell database, or None if none runs."""
        with engines.reader(ctx.cell_db) as session:
            return minimum_version(session, cell_models.Service, binary)


def rpc_version_for(service_version, api):
    """The version of RPC API ``api`` ('compute_rpc', ...) services of
    ``service_version`` serve (a newer one than this release knows is
    served at this release's)."""
    index = min(service_version, SERVICE_VERSION)
    return SERVICE_VERSION_HISTORY[index][api]
