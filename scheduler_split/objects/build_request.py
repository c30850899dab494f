import datetime

from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import instance as instance_obj
from scheduler_split import quota

CONF = conf.CONF


# The statements of every boot, built once, the values as parameters.
_BR = api_models.BuildRequest.__table__
_IM = api_models.InstanceMapping.__table__
_ONE_BR = _BR.c.instance_uuid == sa.bindparam('b_uuid')
# Taken by one delivery only: nobody took it, and no cell holds the
# instance.
_TAKE = _BR.update().where(
    _ONE_BR, _BR.c.taken_at.is_(None),
    sa.exists().where(_IM.c.instance_uuid == _BR.c.instance_uuid,
                      _IM.c.cell_id.is_(None)))
_PLACE = _IM.update().where(_IM.c.instance_uuid == sa.bindparam('b_uuid'),
                            _IM.c.cell_id.is_(None))
_DELETE = _BR.delete().where(_ONE_BR)
_DELETE_RETURNING = _DELETE.returning(_BR.c.instance)
_TAKER = sa.select(_BR.c.taken_at, _BR.c.taken_by).where(_ONE_BR)


def _held_by(host):
    """Where a build request is held by ``host``: taken by it, and its
    instance placed in no cell."""
    return (_BR.c.taken_by == host, _BR.c.taken_at.is_not(None),
            sa.exists().where(_IM.c.instance_uuid == _BR.c.instance_uuid,
                              _IM.c.cell_id.is_(None)))


_READ_LOCKED = sa.select(_BR.c.instance).where(_ONE_BR).with_for_update()
# The inserts of a boot's rows (see BuildRequest.rows), by model.
_INSERTS = {model: model.__table__.insert() for model in (
    api_models.InstanceMapping, api_models.RequestSpec,
    api_models.BuildRequest)}


@base.ObjectRegistry.register
class BuildRequest(base.SchedulerSplitObject):
    """A server the API accepted that no cell holds yet."""
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'project_id': fields.StringField(),
        'instance': fields.ObjectField('Instance'),
        'created_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def _from_row(cls, row):
        br = cls(instance_uuid=row.instance_uuid, project_id=row.project_id,
                 instance=instance_obj.Instance.from_json(row.instance),
                 created_at=row.created_at)
        br.obj_reset_changes()
        return br

    def create(self, ctx, request_spec=None, session=None):
        """Record the build request, its instance mapping (no cell yet),
        ``request_spec`` and the instance's membership of the spec's server
        group in one transaction: all of them or none. With ``session``,
        in that transaction (which its caller commits)."""
        if session is None:
            with engines.writer(CONF.api_database.connection) as session:
                return self.create(ctx, request_spec, session)
        self.record_in(session, self.rows(request_spec), request_spec)

    @staticmethod
    def record_boot(ctx, flavor, min_count, max_count, build,
                    group_uuid=None):
        """Record a boot of ``min_count`` to ``max_count`` servers of
        ``flavor`` for ``ctx``'s project: ``build(count)`` gives
        ``(build_requests, request_specs, rows)`` (rows as :meth:`rows`
        makes them), recorded in one transaction of the API database that
        first takes the project's quota turn and counts how many fit:
        all of them or none, and never past a quota (``OverQuota``). With
        ``group_uuid`` the group's member limit counts too. Returns the
        build requests and request specs recorded."""
        # Every boot of a project waits for the write lock this
        # transaction holds (SQLite's, or the project's quota row), so
        # the objects are built and serialized before it when their
        # number is known: everything or nothing fits.
        built = build(max_count) if min_count == max_count else None
        with engines.writer(CONF.api_database.connection) as session:
            quota.lock_project(session, ctx.project_id)
            count = quota.servers_that_fit(
                session, ctx.project_id, flavor, min_count, max_count,
                group_uuid=group_uuid)
            build_requests, request_specs, rows = built or build(count)
            for build_request, spec, recorded in zip(
                    build_requests, request_specs, rows):
                build_request.record_in(session, recorded, spec)
        return build_requests, request_specs

    def rows(self, request_spec=None):
        """The rows that record it, serialized and ready to insert, as
        ``(model, values)``: the work a boot does before it takes the
        database's write lock."""
        instance = self.instance
        flavor = instance.flavor
        rows = [(api_models.InstanceMapping, dict(
            instance_uuid=self.instance_uuid, cell_id=None,
            project_id=self.project_id, user_id=instance.user_id,
            vcpus=flavor.vcpus, memory_mb=flavor.memory_mb))]
        if request_spec is not None:
            rows.append((api_models.RequestSpec, dict(
                instance_uuid=self.instance_uuid,
                spec=request_spec.to_json())))
        rows.append((api_models.BuildRequest, dict(
            instance_uuid=self.instance_uuid, project_id=self.project_id,
            instance=instance.to_json())))
        return rows

    def record_in(self, session, rows, request_spec=None):
        """Insert ``rows`` (from :meth:`rows`) and the instance's
        membership of the spec's server group in ``session``'s
        transaction. The rows go as plain INSERTs, not through the ORM's
        unit of work: nothing reads them back as objects."""
        connection = session.connection()
        for model, values in rows:
            connection.execute(_INSERTS[model], values)
        group = request_spec.instance_group if request_spec else None
        if group is not None:
            group.add_member_in(session, self.instance_uuid)
        self.obj_reset_changes()

    @classmethod
    def get_by_instance_uuid(cls, ctx, instance_uuid):
        with engines.reader(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid ==
                instance_uuid)).first()
            if row is None:
                raise exception.BuildRequestNotFound(uuid=instance_uuid)
            return cls._from_row(row)

    @classmethod
    def get_older_than(cls, ctx, seconds, redrive_limit=0):
        """Build requests nothing touched for more than ``seconds``: not
        created, taken, given back after a failed scheduling or re-driven
        since. A boot a super-conductor gave back for a re-drive (its
        scheduler could not be reached during a broker outage, say) is
        still being worked on, however old it is. So is one no
        super-conductor took that was re-driven fewer than
        ``redrive_limit`` times: its re-drives are still to come (a
        broker outage longer than ``seconds`` holds them up)."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        touched = sa.func.coalesce(api_models.BuildRequest.updated_at,
                                   api_models.BuildRequest.created_at)
        query = sa.select(api_models.BuildRequest).where(touched < cutoff)
        if redrive_limit:
            query = query.where(sa.or_(
                api_models.BuildRequest.taken_at.is_not(None),
                api_models.BuildRequest.redrives >= redrive_limit))
        with engines.reader(CONF.api_database.connection) as session:
            return [cls._from_row(row) for row in session.scalars(query)]

    @classmethod
    def get_all(cls, ctx, project_id=None):
        """Build requests whose instance no cell holds yet.

        One whose instance mapping already names a cell is a leftover of
        a placement interrupted before it deleted the build request: the
        cell's row is the server, so it is not returned (see
        ``get_placed``).
        """
        with engines.reader(CONF.api_database.connection) as session:
            query = sa.select(api_models.BuildRequest).join(
                api_models.InstanceMapping,
                api_models.InstanceMapping.instance_uuid ==
                api_models.BuildRequest.instance_uuid).where(
                api_models.InstanceMapping.cell_id.is_(None)).order_by(
                api_models.BuildRequest.id)
            if project_id is not None:
                query = query.where(
                    api_models.BuildRequest.project_id == project_id)
            return [cls._from_row(row) for row in session.scalars(query)]

    @classmethod
    def get_placed(cls, ctx, seconds):
        """Build requests left behind by a placement that pointed the
        instance mapping at a cell ``seconds`` ago or earlier and stopped
        before deleting them (a placement still under way deletes its
        own within moments)."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        mapping = api_models.InstanceMapping
        with engines.reader(CONF.api_database.connection) as session:
            return [cls._from_row(row) for row in session.scalars(
                sa.select(api_models.BuildRequest).join(
                    mapping, mapping.instance_uuid ==
                    api_models.BuildRequest.instance_uuid).where(
                    mapping.cell_id.is_not(None),
                    sa.func.coalesce(mapping.updated_at,
                                     mapping.created_at) <= cutoff)
                .order_by(api_models.BuildRequest.id))]

    @classmethod
    def get_untaken(cls, ctx, seconds):
        """``[(build request, re-drives so far)]`` of the build requests
        no super-conductor took, untouched for ``seconds``: their boot is
        still on the bus, or was lost with it."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        with engines.reader(CONF.api_database.connection) as session:
            return [(cls._from_row(row), row.redrives)
                    for row in session.scalars(
                        sa.select(api_models.BuildRequest).where(
                            api_models.BuildRequest.taken_at.is_(None),
                            sa.func.coalesce(
                                api_models.BuildRequest.updated_at,
                                api_models.BuildRequest.created_at) < cutoff)
                        .order_by(api_models.BuildRequest.id))]

    def take(self, ctx):
        """Take the build request to schedule it: True for exactly one
        taker, however many deliveries of its boot (the original, a
        duplicate, a re-drive) arrive; False when another took it, or
        when there is nothing left to schedule (a user's delete or the
        API taking the boot back removed it; a placement pointed its
        mapping at a cell). One statement."""
        now = base.naive_utc(base.utcnow())
        key = dict(b_uuid=self.instance_uuid)

        def _take():
            with engines.writer(CONF.api_database.connection) as session:
                # Core on the session's connection: the ORM's bulk update
                # would cost more than the statement.
                result = session.connection().execute(_TAKE, dict(
                    key, taken_at=now, updated_at=now, taken_by=CONF.host))
            return result.rowcount == 1

        def _taken():
            # A take whose commit may have been written: it was if the
            # row says this process took it at this moment (to the
            # second: a column may keep no more).
            with engines.reader(CONF.api_database.connection) as session:
                row = session.connection().execute(_TAKER, key).first()
            if row is not None and row.taken_at is None:
                return False, None
            return True, (row is not None and row.taken_by == CONF.host and
                          row.taken_at.replace(microsecond=0) ==
                          now.replace(microsecond=0))

        return outage.run(_take, what='Taking the build request of %s'
                          % self.instance_uuid, check=_taken)

    @classmethod
    def renew(cls, ctx, instance_uuids, taken_by):
        """Mark the build requests ``taken_by`` took, of those named, as
        worked on now: its placements are still under way (see
        ``get_older_than``)."""
        if not instance_uuids:
            return 0
        with engines.writer(CONF.api_database.connection) as session:
            result = session.execute(sa.update(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid.in_(instance_uuids),
                api_models.BuildRequest.taken_by == taken_by,
                api_models.BuildRequest.taken_at.is_not(None)).values(
                updated_at=base.naive_utc(base.utcnow())))
        return result.rowcount

    def give_back(self, ctx, taken_by=None):
        """Undo ``take``: scheduling it failed before any cell held the
        instance and claimed nothing, so a re-drive may try again. With
        ``taken_by``, only if that host still holds it (and nobody placed
        it): True if it was given back."""
        query = sa.update(api_models.BuildRequest).where(
            api_models.BuildRequest.instance_uuid == self.instance_uuid)
        if taken_by is not None:
            query = query.where(*_held_by(taken_by))
        with engines.writer(CONF.api_database.connection) as session:
            result = session.execute(query.values(
                taken_at=None, taken_by=None,
                updated_at=base.naive_utc(base.utcnow())))
        return result.rowcount == 1

    def held_by(self, ctx, host):
        """Whether ``host`` holds the build request now: taken by it, and
        placed in no cell."""
        query = sa.select(_BR.c.instance_uuid).where(
            _ONE_BR, *_held_by(host))
        with engines.reader(CONF.api_database.connection) as session:
            return session.connection().execute(
                query, dict(b_uuid=self.instance_uuid)).first() is not None

    @classmethod
    def get_orphans(cls, ctx, host, before, idle=None, held=()):
        """``[(build request, re-drives so far, whether the previous run
        took it)]`` taken by ``host`` and placed in no cell yet, whose
        placement no thread of that host's super-conductor has in hand:
        taken before ``before`` (naive UTC), when a super-conductor of
        that host that started then finds the boots whose placement died
        with its previous run; or, with ``idle`` seconds, untouched for
        that long and not among ``held`` (the placements it has in hand,
        read before this), which its own run dropped: a placement that
        gave up as the database went away, say, not knowing that its
        take had been written."""
        taken = api_models.BuildRequest.taken_at
        idled = sa.false()
        if idle is not None:
            cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
                seconds=idle)
            idled = sa.func.coalesce(api_models.BuildRequest.updated_at,
                                     taken) < cutoff
        with engines.reader(CONF.api_database.connection) as session:
            return [(cls._from_row(row), row.redrives, row.taken_at < before)
                    for row in session.scalars(
                        sa.select(api_models.BuildRequest).where(
                            *_held_by(host),
                            sa.or_(taken < before, idled),
                            api_models.BuildRequest.instance_uuid.not_in(
                                list(held)))
                        .order_by(api_models.BuildRequest.id))]

    @classmethod
    def get_abandoned(cls, ctx, seconds):
        """``[(build request, the host that took it, re-drives so far)]``
        taken, placed in no cell and untouched for more than ``seconds``:
        the super-conductor that took each renews it while its placement
        is under way (``renew``), so its own is either dead or cut from
        this database."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        touched = sa.func.coalesce(api_models.BuildRequest.updated_at,
                                   api_models.BuildRequest.created_at)
        with engines.reader(CONF.api_database.connection) as session:
            return [(cls._from_row(row), row.taken_by, row.redrives)
                    for row in session.scalars(
                        sa.select(api_models.BuildRequest).where(
                            api_models.BuildRequest.taken_at.is_not(None),
                            touched < cutoff,
                            sa.exists().where(
                                _IM.c.instance_uuid ==
                                api_models.BuildRequest.instance_uuid,
                                _IM.c.cell_id.is_(None)))
                        .order_by(api_models.BuildRequest.id))]

    def note_redrive(self, ctx, seen):
        """Count one more re-drive of the boot, if nobody took the build
        request and no other super-conductor re-drove it since it was read
        with ``seen`` re-drives: True if this caller is to cast it."""
        with engines.writer(CONF.api_database.connection) as session:
            result = session.execute(sa.update(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == self.instance_uuid,
                api_models.BuildRequest.taken_at.is_(None),
                api_models.BuildRequest.redrives == seen).values(
                redrives=seen + 1,
                updated_at=base.naive_utc(base.utcnow())))
        return result.rowcount == 1

    def update_instance(self, ctx, changes):
        """Apply ``changes`` (Instance field -> value) to the instance
        recorded for the build: a user's update of a server no cell holds
        yet. ``BuildRequestNotFound`` once it is gone; the conductor that
        deletes it takes the changes made until then (see ``destroy``).
        """
        with engines.writer(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(api_models.BuildRequest).where(
                api_models.BuildRequest.instance_uuid == self.instance_uuid)
                .with_for_update()).first()
            if row is None:
                raise exception.BuildRequestNotFound(uuid=self.instance_uuid)
            instance = instance_obj.Instance.from_json(row.instance)
            for name, value in changes.items():
                setattr(instance, name, value)
            row.instance = instance.to_json()
        self.instance = instance
        self.obj_reset_changes()

    def destroy(self, ctx):
        """Delete it; ``BuildRequestNotFound`` if someone else did first.

        The conductor and a user's DELETE race on this row: whoever deletes
        it owns what happens to the instance next. Returns the instance as
        last recorded, with the updates users made until the deletion.
        """
        with engines.writer(CONF.api_database.connection) as session:
            recorded = self._delete_in(session)
        if recorded is None:
            raise exception.BuildRequestNotFound(uuid=self.instance_uuid)
        return instance_obj.Instance.from_json(recorded)

    def hand_over(self, ctx, cell_mapping):
        """Point the instance's mapping at ``cell_mapping`` (which holds
        the instance now) and delete the build request, in one
        transaction of the API database.

        Returns ``(placed, instance)``: ``placed`` is False when the
        mapping had a cell already (someone placed the instance first;
        nothing changed); ``instance`` is the instance as last recorded
        in the build request, with the updates users made until now, or
        None when a user's delete took the build request first (the
        mapping points at the cell all the same, as where the instance
        is to be deleted).
        """
        with engines.writer(CONF.api_database.connection) as session:
            result = session.connection().execute(_PLACE, dict(
                b_uuid=self.instance_uuid, cell_id=cell_mapping.id,
                updated_at=base.naive_utc(base.utcnow())))
            if result.rowcount != 1:
                return False, None
            recorded = self._delete_in(session)
        return True, (instance_obj.Instance.from_json(recorded)
                      if recorded is not None else None)

    def _delete_in(self, session):
        """Delete the row in ``session``'s transaction; the instance as it
        recorded it (JSON), or None if it was gone."""
        conn = session.connection()
        key = dict(b_uuid=self.instance_uuid)
        if conn.dialect.delete_returning:
            return conn.execute(_DELETE_RETURNING, key).scalar()
        # A locking read: an update holding the row is waited for and
        # read, and none can follow before the delete.
        recorded = conn.execute(_READ_LOCKED, key).scalar()
        if recorded is not None and conn.execute(_DELETE, key).rowcount == 0:
            return None
        return recorded
