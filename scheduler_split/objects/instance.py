"""A server as the database of its cell holds it: its vm, task and power
states, and the ``Instance`` object with its writes (a create, a save
that expects the states it read, a metadata change, a delete) and its
reads by uuid or by host. Its faults are ``instance_fault``'s; what the
periodic sweeps look for among a cell's instances is
``instance_sweeps``'.
"""

import datetime
import functools

from oslo_serialization import jsonutils
from oslo_utils import versionutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import flavor as flavor_obj
from scheduler_split.objects import instance_action
from scheduler_split.objects import instance_fault
from scheduler_split.objects import instance_tag

# vm_state values (as Nova names them)
BUILDING = 'building'
ACTIVE = 'active'
ERROR = 'error'
DELETED = 'deleted'
STOPPED = 'stopped'
PAUSED = 'paused'
SUSPENDED = 'suspended'
# Moved by a resize or a cold migration, waiting for a confirm or a
# revert.
RESIZED = 'resized'
# Deleted with [DEFAULT] reclaim_instance_interval: restorable until its
# cell conductor reclaims it.
SOFT_DELETED = 'soft-delete'
# Shelved: powered off, its image saved; still on its host, holding its
# claim, until it is offloaded (no host, no claim) to be placed again by
# its unshelve.
SHELVED = 'shelved'
SHELVED_OFFLOADED = 'shelved_offloaded'

# task_state values
SCHEDULING = 'scheduling'
SPAWNING = 'spawning'
DELETING = 'deleting'
POWERING_OFF = 'powering-off'
POWERING_ON = 'powering-on'
REBOOTING = 'rebooting'
REBOOTING_HARD = 'rebooting_hard'
PAUSING = 'pausing'
UNPAUSING = 'unpausing'
SUSPENDING = 'suspending'
RESUMING = 'resuming'
# Resizes and cold migrations, in order; then a confirm or a revert.
RESIZE_PREP = 'resize_prep'
RESIZE_MIGRATING = 'resize_migrating'
RESIZE_MIGRATED = 'resize_migrated'
RESIZE_FINISH = 'resize_finish'
RESIZE_REVERTING = 'resize_reverting'
RESIZE_CONFIRMING = 'resize_confirming'
RESIZE_TASK_STATES = (RESIZE_PREP, RESIZE_MIGRATING, RESIZE_MIGRATED,
                      RESIZE_FINISH)
# Live migrations; evacuations (a rebuild on another host).
MIGRATING = 'migrating'
REBUILDING = 'rebuilding'
REBUILD_SPAWNING = 'rebuild_spawning'
# A soft delete and its undoing.
SOFT_DELETING = 'soft-deleting'
RESTORING = 'restoring'
# A shelve, an offload, an unshelve.
SHELVING = 'shelving'
SHELVING_OFFLOADING = 'shelving_offloading'
UNSHELVING = 'unshelving'
# The data of an image of the server (createImage, createBackup).
IMAGE_SNAPSHOT = 'image_snapshot'

# What a user may change with PUT /servers/{id}.
USER_EDITABLE = ('display_name', 'display_description', 'access_ip_v4',
                 'access_ip_v6', 'hostname')
# What a lock of a server still being scheduled changes, which the
# conductor carries over to its instance like the user's edits.
LOCK_FIELDS = ('locked', 'locked_by', 'locked_reason')

# save() without a task state expectation.
ANY_TASK_STATE = object()

# power_state values
NOSTATE = 0
RUNNING = 1
PAUSED_POWER = 3
SHUTDOWN = 4
SUSPENDED_POWER = 7

_SIMPLE = ('uuid', 'display_name', 'display_description', 'hostname',
           'project_id', 'user_id', 'host', 'node', 'vm_state',
           'task_state', 'power_state', 'image_ref', 'availability_zone',
           'key_name', 'reservation_id', 'launch_index', 'launched_at',
           'terminated_at', 'created_at', 'updated_at', 'deleted_at',
           'deleted', 'access_ip_v4', 'access_ip_v6', 'locked',
           'locked_by', 'locked_reason', 'user_data', 'kernel_id',
           'ramdisk_id', 'root_device_name')
_DATETIMES = ('launched_at', 'terminated_at', 'created_at', 'updated_at',
              'deleted_at')


def cell_db(ctx):
    """The database of the cell ``ctx`` targets."""
    if not ctx.cell_db:
        raise exception.CellsNotConfigured(
            reason='no cell database targeted for this request')
    return ctx.cell_db


_TABLE = cell_models.Instance.__table__
_INSERT = _TABLE.insert()


# The columns whose names are not those of the values written.
_COLUMNS = {'metadata_': 'metadata'}


def _same(stored, written):
    """Whether a column read back holds what was written to it (a time
    to the second: a column may keep no more)."""
    if isinstance(stored, datetime.datetime) and \
            isinstance(written, datetime.datetime):
        return stored.replace(microsecond=0, tzinfo=None) == \
            written.replace(microsecond=0, tzinfo=None)
    return stored == written


_PLANS = cell_models.BuildPlan.__table__


def _plan_names_another_host(uuid_column, host_param):
    """SQL: a build plan exists for the instance of ``uuid_column`` and
    names no host or another host than ``host_param``: a build cast
    there must not start."""
    return sa.exists().where(
        _PLANS.c.instance_uuid == uuid_column,
        sa.or_(_PLANS.c.host.is_(None), _PLANS.c.host != host_param))


def _give_back_build(session, uuid):
    """In the caller's transaction: the host of the build plan gave the
    build back (its claim with it), so that no cast to it starts it."""
    session.connection().execute(
        _PLANS.update().where(_PLANS.c.instance_uuid == uuid)
        .values(host=None, node=None,
                updated_at=base.naive_utc(base.utcnow())))


@functools.lru_cache(maxsize=64)
def _update(states, vm_state, host, build_host=False):
    """The update of an instance that :meth:`Instance.save` runs: the
    row of ``b_uuid``, not deleted, with a task state of ``states``
    (a tuple, None among them possibly, or ANY_TASK_STATE), ``b_vm_state``
    if ``vm_state``, ``b_host`` if ``host``, and with ``build_host`` no
    build plan naming another host than ``b_build_host``; the columns to
    set go as parameters. Built once for each shape: every build saves
    twice."""
    query = _TABLE.update().where(_TABLE.c.uuid == sa.bindparam('b_uuid'),
                                  _TABLE.c.deleted.is_(False))
    if build_host:
        query = query.where(~_plan_names_another_host(
            _TABLE.c.uuid, sa.bindparam('b_build_host')))
    if states is not ANY_TASK_STATE:
        query = query.where(sa.or_(*[
            _TABLE.c.task_state.is_(None) if state is None
            else _TABLE.c.task_state == state for state in states]))
    if vm_state:
        query = query.where(_TABLE.c.vm_state == sa.bindparam('b_vm_state'))
    if host:
        query = query.where(_TABLE.c.host == sa.bindparam('b_host'))
    return query


@base.ObjectRegistry.register
class Instance(base.SchedulerSplitObject):
    """A server. Lives in the database of its cell (or cell0)."""
    # 1.0: initial
    # 1.1: display_description
    # 1.2: access_ip_v4, access_ip_v6
    # 1.3: locked, locked_by, locked_reason, tags
    # 1.4: user_data, kernel_id, ramdisk_id, root_device_name
    # 1.5: system_metadata
    VERSION = '1.5'

    fields = {
        'id': fields.IntegerField(nullable=True),
        'uuid': fields.UUIDField(),
        'display_name': fields.StringField(nullable=True),
        'display_description': fields.StringField(nullable=True,
                                                  default=None),
        'hostname': fields.StringField(nullable=True),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'node': fields.StringField(nullable=True),
        'vm_state': fields.StringField(),
        'task_state': fields.StringField(nullable=True),
        'power_state': fields.IntegerField(default=NOSTATE),
        'flavor': fields.ObjectField('Flavor'),
        'image_ref': fields.StringField(nullable=True),
        'availability_zone': fields.StringField(nullable=True),
        'key_name': fields.StringField(nullable=True),
        'metadata': fields.DictOfStringsField(default={}),
        'reservation_id': fields.StringField(nullable=True),
        'launch_index': fields.IntegerField(nullable=True),
        'launched_at': fields.DateTimeField(nullable=True),
        'terminated_at': fields.DateTimeField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
        'deleted_at': fields.DateTimeField(nullable=True),
        'deleted': fields.BooleanField(default=False),
        'fault': fields.ObjectField('InstanceFault', nullable=True),
        # The addresses the user says the server is reached at
        # (accessIPv4/accessIPv6): stored and shown, never configured.
        'access_ip_v4': fields.IPV4AddressField(nullable=True, default=None),
        'access_ip_v6': fields.IPV6AddressField(nullable=True, default=None),
        # The lock action (2.9; its reason from 2.73): ``locked_by`` is
        # ``owner`` or ``admin``.
        'locked': fields.BooleanField(default=False),
        'locked_by': fields.StringField(nullable=True, default=None),
        'locked_reason': fields.StringField(nullable=True, default=None),
        # Read with the instance, written only through instance_tag.
        'tags': fields.ListOfStringsField(default=[]),
        # The boot's details beside the image: the user data (base64, as
        # given at the create or the last rebuild), the kernel and
        # ramdisk its image names, the device of its root disk.
        'user_data': fields.StringField(nullable=True, default=None),
        'kernel_id': fields.StringField(nullable=True, default=None),
        'ramdisk_id': fields.StringField(nullable=True, default=None),
        'root_device_name': fields.StringField(nullable=True, default=None),
        # What the services keep of a server that its user does not set
        # (Nova's system metadata): where and when it was shelved and its
        # shelved image, the password its image asked for.
        'system_metadata': fields.DictOfStringsField(default={}),
    }

    def obj_make_compatible(self, primitive, target_version):
        super().obj_make_compatible(primitive, target_version)
        target = versionutils.convert_version_to_tuple(target_version)
        if target < (1, 5):
            primitive.pop('system_metadata', None)
        if target < (1, 4):
            for name in ('user_data', 'kernel_id', 'ramdisk_id',
                         'root_device_name'):
                primitive.pop(name, None)
        if target < (1, 3):
            for name in ('locked', 'locked_by', 'locked_reason', 'tags'):
                primitive.pop(name, None)
        if target < (1, 2):
            primitive.pop('access_ip_v4', None)
            primitive.pop('access_ip_v6', None)
        if target < (1, 1):
            primitive.pop('display_description', None)

    @classmethod
    def from_row(cls, row, fault=None, tags=None):
        """The instance of the cell row ``row``, with ``fault`` and
        ``tags`` (None: its tags were not read)."""
        inst = cls()
        for name in _SIMPLE:
            setattr(inst, name, getattr(row, name))
        inst.locked = bool(inst.locked)
        if tags is not None:
            inst.tags = tags
        inst.id = row.id
        inst.flavor = flavor_obj.Flavor.from_json(row.flavor)
        inst.metadata = jsonutils.loads(row.metadata_ or '{}')
        inst.system_metadata = jsonutils.loads(row.system_metadata or '{}')
        inst.fault = fault
        inst.obj_reset_changes()
        return inst

    def _values(self, names):
        values = {}
        for name in names:
            if (name in ('id', 'fault', 'tags') or
                    not self.obj_attr_is_set(name)):
                continue
            value = getattr(self, name)
            if name == 'flavor':
                value = value.to_json()
            elif name == 'metadata':
                name, value = 'metadata_', jsonutils.dumps(value)
            elif name == 'system_metadata':
                value = jsonutils.dumps(value)
            elif name in _DATETIMES:
                value = base.naive_utc(value)
            elif name in ('access_ip_v4', 'access_ip_v6'):
                value = None if value is None else str(value)
            values[name] = value
        return values

    def create(self, ctx, fault=None, event=None):
        """Insert this instance (and its ``fault``) into the targeted cell.

        ``event`` (the keyword arguments of
        :func:`instance_action.add_event`) records the first step of the
        action of ``ctx``'s request in the same transaction.
        """
        if not self.obj_attr_is_set('created_at') or not self.created_at:
            self.created_at = base.utcnow()
        values = self._values(self.fields)
        # Core, not the ORM's unit of work: one insert on the path of
        # every boot, by column names.
        values['metadata'] = values.pop('metadata_', None)
        with engines.writer(cell_db(ctx)) as session:
            result = session.connection().execute(_INSERT, values)
            self.id = result.inserted_primary_key[0]
            if fault is not None:
                fault.add_to(session)
                self.fault = fault
            if event is not None:
                instance_action.add_event(session, ctx, self.uuid,
                                          new=True, **event)
        self.obj_reset_changes()

    def take_user_edits(self, recorded):
        """Take from ``recorded`` (this instance as its build request last
        held it) what users changed meanwhile; True if anything was."""
        changed = False
        for name in USER_EDITABLE + LOCK_FIELDS:
            value = recorded.get(name, False if name == 'locked' else None)
            if self.get(name, False if name == 'locked' else None) != value:
                setattr(self, name, value)
                changed = True
        return changed

    def save_error(self, ctx, exc, host=None):
        """Put the instance in ERROR with the fault ``exc``, atomically.

        Nobody ever sees the ERROR state without the fault that explains
        it. Raises ``InstanceNotFound`` if it was deleted meanwhile.
        """
        self.vm_state = ERROR
        self.task_state = None
        fault = instance_fault.InstanceFault.from_exception(self.uuid, exc,
                                                            host=host)
        self.save(ctx, fault=fault)
        self.fault = fault
        self.obj_reset_changes(['fault'])

    def save(self, ctx, expected_task_state=ANY_TASK_STATE, fault=None,
             expected_vm_state=None, expected_host=None, event=None,
             build_host=None, give_back_build=False):
        """Write the changed fields back (and ``fault``, and ``event``:
        the keyword arguments of :func:`instance_action.add_event`, in
        one go).

        With ``expected_task_state`` (a state, None included, or a list of
        them) the write only happens when the row still has one of those
        task states, with ``expected_vm_state`` that vm state, with
        ``expected_host`` that host, and with ``build_host`` when no build
        plan names another host (a build starts only where its plan says;
        ``InstanceNotFound`` if it was deleted meanwhile, ``Conflict`` if
        it moved on). ``give_back_build``: the host of the build's plan
        gave it back, in the same write.
        """
        changes = self._values(self.obj_what_changed())
        if not changes and fault is None and event is None:
            return
        changes['updated_at'] = base.naive_utc(base.utcnow())
        # Core, by column names: the ORM's bulk update would cost more
        # than the statement, on the path of every build.
        values = dict(changes)
        if 'metadata_' in values:
            values['metadata'] = values.pop('metadata_')
        states = ANY_TASK_STATE
        if expected_task_state is not ANY_TASK_STATE:
            states = tuple(expected_task_state if isinstance(
                expected_task_state, (list, tuple)) else [expected_task_state])
        query = _update(states, expected_vm_state is not None,
                        expected_host is not None, build_host is not None)
        values['b_uuid'] = self.uuid
        if expected_vm_state is not None:
            values['b_vm_state'] = expected_vm_state
        if expected_host is not None:
            values['b_host'] = expected_host
        if build_host is not None:
            values['b_build_host'] = build_host

        def _write():
            with engines.writer(cell_db(ctx)) as session:
                result = session.connection().execute(query, values)
                if result.rowcount == 0:
                    row = session.scalars(
                        sa.select(cell_models.Instance).where(
                            cell_models.Instance.uuid == self.uuid)).first()
                    if row is None or row.deleted:
                        raise exception.InstanceNotFound(
                            instance_id=self.uuid)
                    raise exception.Conflict(
                        reason='instance %s is %s/%s on %s, not %s/%s on '
                        '%s%s' % (self.uuid, row.vm_state, row.task_state,
                                  row.host, expected_vm_state or 'any',
                                  expected_task_state,
                                  expected_host or 'any host',
                                  '' if build_host is None else
                                  ', or its build goes to another host '
                                  'than %s' % build_host))
                if give_back_build:
                    _give_back_build(session, self.uuid)
                if fault is not None:
                    fault.add_to(session)
                if event is not None:
                    instance_action.add_event(session, ctx, self.uuid,
                                              **event)

        def _written():
            # A write whose commit may have been written was if the row
            # holds what it wrote, its updated_at included (the fault and
            # the event were in the same transaction).
            with engines.reader(cell_db(ctx)) as session:
                row = session.connection().execute(
                    sa.select(*[_TABLE.c[_COLUMNS.get(name, name)]
                                for name in changes]).where(
                        _TABLE.c.uuid == self.uuid)).first()
            return row is not None and all(
                _same(row[i], changes[name])
                for i, name in enumerate(changes)), None

        outage.run(_write, what='Saving instance %s' % self.uuid,
                   check=_written)
        self.updated_at = changes['updated_at']
        self.obj_reset_changes()

    @classmethod
    def update_metadata(cls, ctx, uuid, change):
        """Apply ``change`` (the current metadata -> the new metadata, or
        an exception) in one transaction holding the instance's row, so
        that concurrent changes of different items are all kept. Returns
        the new metadata."""
        with engines.writer(cell_db(ctx)) as session:
            row = session.scalars(sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid,
                cell_models.Instance.deleted.is_(False))
                .with_for_update()).first()
            if row is None:
                raise exception.InstanceNotFound(instance_id=uuid)
            metadata = change(jsonutils.loads(row.metadata_ or '{}'))
            row.metadata_ = jsonutils.dumps(metadata)
            row.updated_at = base.naive_utc(base.utcnow())
        return metadata

    @staticmethod
    def delete_unplaced(ctx, uuid):
        """Remove the row (and what goes with it) that a placement which
        stopped before handing the instance to its cell left in the
        targeted cell: never on a host, and in no instance mapping, so
        nothing else knows it, whatever the cell's sweeps made of it
        since (a lost build ended in ERROR) or the placement's own
        rollback (marked deleted). The caller knows that no mapping names
        the cell (it holds the build request, which the hand-over
        removes). The placement is made again, and may come back to this
        cell with the same uuid. Whether there was one."""
        with engines.writer(cell_db(ctx)) as session:
            conn = session.connection()
            result = conn.execute(_TABLE.delete().where(
                _TABLE.c.uuid == uuid, _TABLE.c.host.is_(None)))
            if result.rowcount:
                actions = sa.select(cell_models.InstanceAction.id).where(
                    cell_models.InstanceAction.instance_uuid == uuid)
                conn.execute(sa.delete(cell_models.InstanceActionEvent)
                             .where(cell_models.InstanceActionEvent.action_id
                                    .in_(actions)))
                for model, column in (
                        (cell_models.InstanceAction,
                         cell_models.InstanceAction.instance_uuid),
                        (cell_models.InstanceFault,
                         cell_models.InstanceFault.instance_uuid),
                        (cell_models.InstanceTag,
                         cell_models.InstanceTag.resource_id),
                        (cell_models.BuildPlan,
                         cell_models.BuildPlan.instance_uuid)):
                    conn.execute(sa.delete(model).where(column == uuid))
        return bool(result.rowcount)

    def destroy(self, ctx):
        """Mark the instance deleted; it disappears from the API."""
        now = base.utcnow()
        self.vm_state = DELETED
        self.task_state = None
        self.deleted = True
        self.deleted_at = now
        self.terminated_at = now
        changes = self._values(self.obj_what_changed())
        with engines.writer(cell_db(ctx)) as session:
            session.execute(sa.update(cell_models.Instance).where(
                cell_models.Instance.uuid == self.uuid).values(**changes))
        self.obj_reset_changes()

    @classmethod
    def get_by_uuid(cls, ctx, uuid, read_deleted=False):
        with engines.reader(cell_db(ctx)) as session:
            query = sa.select(cell_models.Instance).where(
                cell_models.Instance.uuid == uuid)
            if not read_deleted:
                query = query.where(cell_models.Instance.deleted.is_(False))
            row = session.scalars(query).first()
            if row is None:
                raise exception.InstanceNotFound(instance_id=uuid)
            faults = instance_fault.InstanceFault.get_latest(session, [uuid])
            tags = instance_tag.tags_of(session, [uuid])
            return cls.from_row(row, faults.get(uuid), tags[uuid])

    @classmethod
    def get_all(cls, ctx, project_id=None, uuids=None, host=None,
                limit=None, node=None):
        """Live instances of the targeted cell, oldest first (a server
        list is ``instance_list``'s)."""
        with engines.reader(cell_db(ctx)) as session:
            query = sa.select(cell_models.Instance).where(
                cell_models.Instance.deleted.is_(False)).order_by(
                cell_models.Instance.created_at, cell_models.Instance.id)
            if project_id is not None:
                query = query.where(
                    cell_models.Instance.project_id == project_id)
            if uuids is not None:
                query = query.where(cell_models.Instance.uuid.in_(list(uuids)))
            if host is not None:
                query = query.where(cell_models.Instance.host == host)
            if node is not None:
                query = query.where(cell_models.Instance.node == node)
            if limit is not None:
                query = query.limit(limit)
            return cls.from_rows(session, list(session.scalars(query)))

    @classmethod
    def from_rows(cls, session, rows):
        """Instances of the cell rows ``rows`` (read in ``session``),
        with the fault of each in ERROR and their tags."""
        faults = instance_fault.InstanceFault.get_latest(
            session, [r.uuid for r in rows if r.vm_state == ERROR])
        tags = instance_tag.tags_of(session, [r.uuid for r in rows])
        return [cls.from_row(r, faults.get(r.uuid), tags[r.uuid])
                for r in rows]
