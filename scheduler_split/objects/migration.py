"""The moves of instances, in their cell's database.

A migration record follows one move (a resize, a cold or a live migration,
an evacuation) from the moment it is asked for to its end. Its ``uuid`` is
also the scheduler consumer that holds the source host's resources while
the move is under way: the instance's own consumer holds the
destination's, so both hosts stay accounted for until the move is
confirmed, reverted or fails.
"""

from oslo_utils import uuidutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import flavor as flavor_obj

# migration_type values, as the compute API shows them.
MIGRATION = 'migration'
RESIZE = 'resize'
LIVE_MIGRATION = 'live-migration'
EVACUATION = 'evacuation'
TYPES = (MIGRATION, RESIZE, LIVE_MIGRATION, EVACUATION)
# The instance action each kind of move records its steps under.
ACTIONS = {MIGRATION: 'migrate', RESIZE: 'resize',
           LIVE_MIGRATION: 'live-migration', EVACUATION: 'evacuate'}

# status values, as Nova names them.
# Cold migration and resize: pre-migrating -> migrating -> post-migrating
# -> finished (waits for the user) -> confirming -> confirmed, or
# reverting -> reverted; error on a failure.
PRE_MIGRATING = 'pre-migrating'
MIGRATING = 'migrating'
POST_MIGRATING = 'post-migrating'
FINISHED = 'finished'
CONFIRMING = 'confirming'
CONFIRMED = 'confirmed'
REVERTING = 'reverting'
REVERTED = 'reverted'
ERROR = 'error'
# Live migration: accepted -> queued -> preparing -> running ->
# completed; failed when it is rolled back.
ACCEPTED = 'accepted'
QUEUED = 'queued'
PREPARING = 'preparing'
RUNNING = 'running'
COMPLETED = 'completed'
FAILED = 'failed'
CANCELLED = 'cancelled'
# Evacuation: accepted -> pre-migrating -> done (rebuilt on the
# destination) -> completed once the source compute came back and cleaned
# up; failed or error.
DONE = 'done'

# A migration in one of these holds nothing any more: its consumer's
# allocations (the source host's) are gone or must go.
ENDED = frozenset((CONFIRMED, REVERTED, ERROR, FAILED, COMPLETED,
                   CANCELLED))
# A service is working on a move in one of these: none may stay in one
# forever (see the cell conductor's fail_lost_moves).
UNDER_WAY = (ACCEPTED, QUEUED, PREPARING, RUNNING, PRE_MIGRATING,
             MIGRATING, POST_MIGRATING)
# Live migrations that servers/{id}/migrations shows (in progress).
LIVE_IN_PROGRESS = (ACCEPTED, QUEUED, PREPARING, RUNNING)

_SIMPLE = ('id', 'uuid', 'instance_uuid', 'migration_type', 'status',
           'source_compute', 'source_node', 'dest_compute', 'dest_node',
           'dest_host', 'old_instance_type_id', 'new_instance_type_id',
           'old_vm_state', 'user_id', 'project_id', 'created_at',
           'updated_at', 'deleted', 'deleted_at')


@base.ObjectRegistry.register
class Migration(base.SchedulerSplitObject):
    """One move of an instance."""
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(nullable=True, default=None),
        'uuid': fields.UUIDField(),
        'instance_uuid': fields.UUIDField(),
        'migration_type': fields.StringField(),
        'status': fields.StringField(),
        'source_compute': fields.StringField(nullable=True, default=None),
        'source_node': fields.StringField(nullable=True, default=None),
        'dest_compute': fields.StringField(nullable=True, default=None),
        'dest_node': fields.StringField(nullable=True, default=None),
        'dest_host': fields.StringField(nullable=True, default=None),
        'old_instance_type_id': fields.IntegerField(nullable=True,
                                                    default=None),
        'new_instance_type_id': fields.IntegerField(nullable=True,
                                                    default=None),
        'old_flavor': fields.ObjectField('Flavor', nullable=True,
                                         default=None),
        'new_flavor': fields.ObjectField('Flavor', nullable=True,
                                         default=None),
        'old_vm_state': fields.StringField(nullable=True, default=None),
        'user_id': fields.StringField(nullable=True, default=None),
        'project_id': fields.StringField(nullable=True, default=None),
        'created_at': fields.DateTimeField(nullable=True, default=None),
        'updated_at': fields.DateTimeField(nullable=True, default=None),
        'deleted': fields.BooleanField(default=False),
        'deleted_at': fields.DateTimeField(nullable=True, default=None),
    }

    @property
    def ended(self):
        return self.status in ENDED

    @property
    def action(self):
        """The instance action this move's steps go under."""
        return ACTIONS[self.migration_type]

    @property
    def is_resize(self):
        return self.migration_type == RESIZE

    @property
    def is_live(self):
        return self.migration_type == LIVE_MIGRATION

    @classmethod
    def for_move(cls, ctx, instance, migration_type, status,
                 new_flavor=None):
        """The record of a move of ``instance`` asked for by ``ctx``'s
        user, not created yet: from the host, node and vm state the
        instance has now, to ``new_flavor`` (a resize) or the flavor it
        has."""
        new_flavor = new_flavor or instance.flavor
        return cls(instance_uuid=instance.uuid,
                   migration_type=migration_type, status=status,
                   source_compute=instance.host, source_node=instance.node,
                   old_instance_type_id=instance.flavor.get('id'),
                   new_instance_type_id=new_flavor.get('id'),
                   old_flavor=instance.flavor, new_flavor=new_flavor,
                   old_vm_state=instance.vm_state, user_id=ctx.user_id,
                   project_id=ctx.project_id)

    @classmethod
    def _from_row(cls, row):
        migration = cls()
        for name in _SIMPLE:
            setattr(migration, name, getattr(row, name))
        for name in ('old_flavor', 'new_flavor'):
            text = getattr(row, name)
            setattr(migration, name,
                    flavor_obj.Flavor.from_json(text) if text else None)
        migration.obj_reset_changes()
        return migration

    def _values(self, names):
        values = {}
        for name in names:
            if name in ('old_flavor', 'new_flavor'):
                flavor = getattr(self, name)
                values[name] = flavor.to_json() if flavor else None
            elif name in ('created_at', 'updated_at', 'deleted_at'):
                values[name] = base.naive_utc(getattr(self, name))
            else:
                values[name] = getattr(self, name)
        return values

    def create(self, ctx):
        """Insert the record (with a new uuid unless it has one)."""
        if not self.obj_attr_is_set('uuid'):
            self.uuid = uuidutils.generate_uuid()
        now = base.naive_utc(base.utcnow())
        self.created_at = now
        names = [n for n in self.fields
                 if n != 'id' and self.obj_attr_is_set(n)]
        values = self._values(names)
        with engines.writer(ctx.cell_db) as session:
            row = cell_models.Migration(**values)
            session.add(row)
            session.flush()
            self.id = row.id
        self.obj_reset_changes()
        return self

    def save(self, ctx, expected_status=None):
        """Write the changed fields back; with ``expected_status`` (one
        status or a list) only while the record still has one of them
        (``Conflict`` otherwise, ``MigrationNotFound`` if it is gone)."""
        changes = self._values(self.obj_what_changed() - {'id'})
        if not changes:
            return
        changes['updated_at'] = base.naive_utc(base.utcnow())
        table = cell_models.Migration
        with engines.writer(ctx.cell_db) as session:
            query = sa.update(table).where(table.uuid == self.uuid,
                                           table.deleted.is_(False))
            if expected_status is not None:
                wanted = ([expected_status] if isinstance(expected_status,
                                                          str)
                          else list(expected_status))
                query = query.where(table.status.in_(wanted))
            if session.execute(query.values(**changes)).rowcount == 0:
                row = session.scalars(sa.select(table).where(
                    table.uuid == self.uuid)).first()
                if row is None or row.deleted:
                    raise exception.MigrationNotFound(migration_id=self.uuid)
                raise exception.Conflict(
                    reason='migration %s is %s, not %s' % (
                        self.uuid, row.status, expected_status))
        self.updated_at = changes['updated_at']
        self.obj_reset_changes()

    @classmethod
    def get_by_uuid(cls, ctx, uuid):
        with engines.reader(ctx.cell_db) as session:
            row = session.scalars(sa.select(cell_models.Migration).where(
                cell_models.Migration.uuid == uuid,
                cell_models.Migration.deleted.is_(False))).first()
            if row is None:
                raise exception.MigrationNotFound(migration_id=uuid)
            return cls._from_row(row)

    @classmethod
    def get_by_id_and_instance(cls, ctx, migration_id, instance_uuid):
        with engines.reader(ctx.cell_db) as session:
            row = session.scalars(sa.select(cell_models.Migration).where(
                cell_models.Migration.id == migration_id,
                cell_models.Migration.instance_uuid == instance_uuid,
                cell_models.Migration.deleted.is_(False))).first()
            if row is None:
                raise exception.MigrationNotFoundForInstance(
                    migration_id=migration_id, instance_id=instance_uuid)
            return cls._from_row(row)

    @classmethod
    def get_by_instance_and_status(cls, ctx, instance_uuid, statuses,
                                   migration_types=None):
        """The newest migration of the instance in one of ``statuses``,
        or None."""
        table = cell_models.Migration
        query = sa.select(table).where(
            table.instance_uuid == instance_uuid,
            table.status.in_(list(statuses)),
            table.deleted.is_(False)).order_by(table.id.desc())
        if migration_types:
            query = query.where(table.migration_type.in_(
                list(migration_types)))
        with engines.reader(ctx.cell_db) as session:
            row = session.scalars(query).first()
            return cls._from_row(row) if row is not None else None

    @classmethod
    def get_all(cls, ctx, instance_uuid=None, statuses=None,
                migration_types=None, host=None, source_compute=None,
                uuids=None, updated_before=None, ids=None):
        """Migrations of the cell, oldest first, narrowed by each given
        filter: ``host`` matches the source or the destination."""
        table = cell_models.Migration
        query = sa.select(table).where(table.deleted.is_(False)).order_by(
            table.id)
        if instance_uuid is not None:
            query = query.where(table.instance_uuid == instance_uuid)
        if statuses is not None:
            query = query.where(table.status.in_(list(statuses)))
        if migration_types is not None:
            query = query.where(table.migration_type.in_(
                list(migration_types)))
        if host is not None:
            query = query.where(sa.or_(table.source_compute == host,
                                       table.dest_compute == host))
        if source_compute is not None:
            query = query.where(table.source_compute == source_compute)
        if uuids is not None:
            query = query.where(table.uuid.in_(list(uuids)))
        if ids is not None:
            query = query.where(table.id.in_(list(ids)))
        if updated_before is not None:
            query = query.where(sa.func.coalesce(
                table.updated_at, table.created_at) <
                base.naive_utc(updated_before))
        with engines.reader(ctx.cell_db) as session:
            return [cls._from_row(row) for row in session.scalars(query)]
