import datetime

import sqlalchemy as sa
from oslo_versionedobjects import fields

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import models
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF


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

    def create(self, ctx, request_spec=None):
        """Record the build request, its instance mapping (no cell yet),
        ``request_spec`` and the instance's membership of the spec's server
        group in one transaction: all of them or none."""
        instance = self.instance
        with engines.writer(CONF.api_database.connection) as session:
            session.add(models.InstanceMapping(
                instance_uuid=self.instance_uuid, cell_id=None,
                project_id=self.project_id, user_id=instance.user_id))
            if request_spec is not None:
                session.add(models.RequestSpec(
                    instance_uuid=self.instance_uuid,
                    spec=request_spec.to_json()))
                group = request_spec.instance_group
                if group is not None:
                    group.add_member_in(session, self.instance_uuid)
            session.add(models.BuildRequest(
                instance_uuid=self.instance_uuid, project_id=self.project_id,
                instance=instance.to_json()))
        self.obj_reset_changes()

    @classmethod
    def get_by_instance_uuid(cls, ctx, instance_uuid):
        with engines.reader(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(models.BuildRequest).where(
                models.BuildRequest.instance_uuid == instance_uuid)).first()
            if row is None:
                raise exception.BuildRequestNotFound(uuid=instance_uuid)
            return cls._from_row(row)

    @classmethod
    def get_older_than(cls, ctx, seconds):
        """Build requests created more than ``seconds`` ago."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        with engines.reader(CONF.api_database.connection) as session:
            return [cls._from_row(row) for row in session.scalars(
                sa.select(models.BuildRequest).where(
                    models.BuildRequest.created_at < cutoff))]

    @classmethod
    def get_all(cls, ctx, project_id=None):
        with engines.reader(CONF.api_database.connection) as session:
            query = sa.select(models.BuildRequest).order_by(
                models.BuildRequest.id)
            if project_id is not None:
                query = query.where(
                    models.BuildRequest.project_id == project_id)
            return [cls._from_row(row) for row in session.scalars(query)]

    def update_instance(self, ctx, changes):
        """Apply ``changes`` (Instance field -> value) to the instance
        recorded for the build: a user's update of a server no cell holds
        yet. ``BuildRequestNotFound`` once it is gone; the conductor that
        deletes it takes the changes made until then (see ``destroy``).
        """
        with engines.writer(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(models.BuildRequest).where(
                models.BuildRequest.instance_uuid == self.instance_uuid)
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
        where = models.BuildRequest.instance_uuid == self.instance_uuid
        with engines.writer(CONF.api_database.connection) as session:
            # A locking read: an update holding the row is waited for and
            # read, and none can follow before the delete.
            recorded = session.scalars(sa.select(
                models.BuildRequest.instance).where(where)
                .with_for_update()).first()
            if recorded is None:
                raise exception.BuildRequestNotFound(uuid=self.instance_uuid)
            result = session.execute(sa.delete(models.BuildRequest)
                                     .where(where))
            if result.rowcount == 0:
                raise exception.BuildRequestNotFound(uuid=self.instance_uuid)
        return instance_obj.Instance.from_json(recorded)
