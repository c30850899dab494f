from oslo_serialization import jsonutils
from oslo_utils import uuidutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split.objects import request_spec

CONF = conf.CONF

POLICIES = ('affinity', 'anti-affinity', 'soft-affinity',
            'soft-anti-affinity')
# The policies the scheduler refuses to break (claims enforce them); the
# soft ones only weigh hosts.
HARD_POLICIES = ('affinity', 'anti-affinity')


def _api_db():
    return CONF.api_database.connection


@base.ObjectRegistry.register
class InstanceGroup(base.SchedulerSplitObject):
    """A server group: its policy and the instances that joined it.

    ``hosts`` is filled in by the scheduler for its filters and weighers:
    the host of every member placed so far, one entry per member.
    """
    VERSION = '1.0'

    fields = {
        'uuid': fields.UUIDField(),
        'name': fields.StringField(),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(nullable=True),
        'policy': fields.StringField(),
        'rules': fields.DictOfIntegersField(default={}),
        'members': fields.ListOfStringsField(default=[]),
        'hosts': fields.ListOfStringsField(default=[]),
        'created_at': fields.DateTimeField(nullable=True),
    }

    @property
    def max_server_per_host(self):
        return self.rules.get('max_server_per_host') or 1

    @property
    def claim_group(self):
        """What claims need to enforce the policy; None for soft ones."""
        if self.policy not in HARD_POLICIES:
            return None
        return {'uuid': self.uuid, 'policy': self.policy,
                'max_per_host': self.max_server_per_host}

    def for_request(self):
        """The group as a request spec carries it: no member list, which
        the scheduler reads from its own database."""
        return InstanceGroup(
            uuid=self.uuid, name=self.name, project_id=self.project_id,
            user_id=self.user_id, policy=self.policy,
            rules=dict(self.rules), members=[], hosts=[])

    @classmethod
    def _from_row(cls, row):
        group = cls(uuid=row.uuid, name=row.name, project_id=row.project_id,
                    user_id=row.user_id, policy=row.policy,
                    rules=jsonutils.loads(row.rules or '{}'),
                    members=[m.instance_uuid for m in row.members],
                    created_at=row.created_at)
        group.obj_reset_changes()
        return group

    def create(self, ctx, session=None):
        """Record the group; with ``session``, in that transaction."""
        if not self.obj_attr_is_set('uuid'):
            self.uuid = uuidutils.generate_uuid()
        if session is None:
            with engines.writer(_api_db()) as session:
                return self.create(ctx, session)
        row = api_models.InstanceGroup(
            uuid=self.uuid, name=self.name, project_id=self.project_id,
            user_id=self.user_id, policy=self.policy,
            rules=jsonutils.dumps(self.rules))
        session.add(row)
        session.flush()
        self.created_at = row.created_at
        self.members = []
        self.obj_reset_changes()

    @classmethod
    def get_by_uuid(cls, ctx, uuid):
        with engines.reader(_api_db()) as session:
            row = session.scalars(sa.select(api_models.InstanceGroup).where(
                api_models.InstanceGroup.uuid == uuid)).first()
            if row is None:
                raise exception.InstanceGroupNotFound(group_uuid=uuid)
            return cls._from_row(row)

    @classmethod
    def get_all(cls, ctx, project_id=None):
        """Groups of ``project_id`` (of every project if None), oldest
        first."""
        with engines.reader(_api_db()) as session:
            query = sa.select(api_models.InstanceGroup).order_by(
                api_models.InstanceGroup.id)
            if project_id is not None:
                query = query.where(
                    api_models.InstanceGroup.project_id == project_id)
            return [cls._from_row(row) for row in session.scalars(query)]

    @classmethod
    def get_by_instance_uuid(cls, ctx, instance_uuid):
        """The group ``instance_uuid`` is a member of, or None."""
        with engines.reader(_api_db()) as session:
            row = session.scalars(
                sa.select(api_models.InstanceGroup)
                .join(api_models.InstanceGroupMember)
                .where(api_models.InstanceGroupMember.instance_uuid ==
                       instance_uuid)).first()
            return None if row is None else cls._from_row(row)

    def destroy(self, ctx):
        with engines.writer(_api_db()) as session:
            row = session.scalars(sa.select(api_models.InstanceGroup).where(
                api_models.InstanceGroup.uuid == self.uuid)).first()
            if row is None:
                raise exception.InstanceGroupNotFound(group_uuid=self.uuid)
            session.delete(row)

    def add_member_in(self, session, instance_uuid):
        """Add a member inside the caller's API database transaction."""
        group_id = session.scalar(sa.select(api_models.InstanceGroup.id).where(
            api_models.InstanceGroup.uuid == self.uuid))
        if group_id is None:
            raise exception.InstanceGroupNotFound(group_uuid=self.uuid)
        session.add(api_models.InstanceGroupMember(
            group_id=group_id, instance_uuid=instance_uuid))

    @staticmethod
    def rejoin(ctx, instance_uuid):
        """A restored server is a member again of the group its boot
        asked for, if that group is still there (its claim kept the
        group's policy meanwhile)."""
        try:
            spec = request_spec.RequestSpec.get_by_instance_uuid(
                ctx, instance_uuid)
        except exception.NotFound:
            return
        group = spec.get('instance_group')
        if group is None:
            return
        with engines.writer(_api_db()) as session:
            group_id = session.scalar(sa.select(
                api_models.InstanceGroup.id).where(
                api_models.InstanceGroup.uuid == group.uuid))
            if group_id is None:
                return
            already = session.scalar(sa.select(
                api_models.InstanceGroupMember.id).where(
                api_models.InstanceGroupMember.instance_uuid == instance_uuid))
            if already is None:
                session.add(api_models.InstanceGroupMember(
                    group_id=group_id, instance_uuid=instance_uuid))

    @staticmethod
    def remove_instance(ctx, instance_uuid):
        """The instance leaves whatever group it was in."""
        with engines.writer(_api_db()) as session:
            session.execute(sa.delete(api_models.InstanceGroupMember).where(
                api_models.InstanceGroupMember.instance_uuid == instance_uuid))
