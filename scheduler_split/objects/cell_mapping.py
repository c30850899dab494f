import datetime

from oslo_utils import uuidutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base

CONF = conf.CONF

CELL0_UUID = '00000000-0000-0000-0000-000000000000'


def _api_db():
    return CONF.api_database.connection


@base.ObjectRegistry.register
class CellMapping(base.SchedulerSplitObject):
    """Where a cell's bus and database are."""
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(nullable=True),
        'uuid': fields.UUIDField(),
        'name': fields.StringField(),
        'transport_url': fields.StringField(),
        'database_connection': fields.SensitiveStringField(),
        'disabled': fields.BooleanField(default=False),
    }

    @property
    def is_cell0(self):
        return self.uuid == CELL0_UUID

    @classmethod
    def _from_row(cls, row):
        return base.apply_row(cls(), row, ('id', 'uuid', 'name',
                                           'transport_url',
                                           'database_connection',
                                           'disabled'))

    def create(self, ctx):
        if not self.obj_attr_is_set('uuid'):
            self.uuid = uuidutils.generate_uuid()
        with engines.writer(_api_db()) as session:
            row = api_models.CellMapping(
                uuid=self.uuid, name=self.name,
                transport_url=self.transport_url,
                database_connection=self.database_connection,
                disabled=self.get('disabled', False))
            session.add(row)
            session.flush()
            self.id = row.id
        self.obj_reset_changes()

    @classmethod
    def get_by_uuid(cls, ctx, uuid):
        with engines.reader(_api_db()) as session:
            row = session.scalars(sa.select(api_models.CellMapping).where(
                api_models.CellMapping.uuid == uuid)).first()
            if row is None:
                raise exception.CellMappingNotFound(uuid=uuid)
            return cls._from_row(row)

    @classmethod
    def get_all(cls, ctx):
        with engines.reader(_api_db()) as session:
            return [cls._from_row(row) for row in session.scalars(
                sa.select(api_models.CellMapping).order_by(
                    api_models.CellMapping.id))]

    def save(self, ctx):
        """Write the fields changed since the mapping was loaded."""
        changes = {name: getattr(self, name)
                   for name in self.obj_what_changed()
                   if name in ('name', 'transport_url',
                               'database_connection', 'disabled')}
        if changes:
            with engines.writer(_api_db()) as session:
                session.execute(sa.update(api_models.CellMapping).where(
                    api_models.CellMapping.uuid == self.uuid).values(
                    updated_at=base.naive_utc(base.utcnow()), **changes))
        self.obj_reset_changes()

    def destroy(self, ctx):
        with engines.writer(_api_db()) as session:
            session.execute(sa.delete(api_models.CellMapping).where(
                api_models.CellMapping.uuid == self.uuid))


@base.ObjectRegistry.register
class InstanceMapping(base.SchedulerSplitObject):
    """Which cell holds an instance (none while it is a build request)."""
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'cell_mapping': fields.ObjectField('CellMapping', nullable=True),
        'project_id': fields.StringField(),
        'user_id': fields.StringField(nullable=True),
    }

    def set_cell(self, ctx, cell_mapping):
        """Place the instance in ``cell_mapping``, if nobody placed it yet.

        Returns False when the mapping already had a cell: exactly one
        placement of an instance wins.
        """
        with engines.writer(_api_db()) as session:
            result = session.execute(sa.update(
                api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid == self.instance_uuid,
                api_models.InstanceMapping.cell_id.is_(None)
            ).values(cell_id=cell_mapping.id,
                     updated_at=base.naive_utc(base.utcnow())))
        if result.rowcount != 1:
            return False
        self.cell_mapping = cell_mapping
        self.obj_reset_changes()
        return True

    @classmethod
    def get_by_instance_uuid(cls, ctx, instance_uuid):
        with engines.reader(_api_db()) as session:
            row = session.scalars(sa.select(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid == instance_uuid)
            ).first()
            if row is None:
                raise exception.InstanceMappingNotFound(uuid=instance_uuid)
            cell = None
            if row.cell_id is not None:
                cell = CellMapping._from_row(
                    session.get(api_models.CellMapping, row.cell_id))
            mapping = cls(instance_uuid=row.instance_uuid, cell_mapping=cell,
                          project_id=row.project_id, user_id=row.user_id)
            mapping.obj_reset_changes()
            return mapping

    @classmethod
    def cell_id_placed_before(cls, ctx, instance_uuid, seconds):
        """The id of the cell the instance's mapping names, if it was
        written ``seconds`` ago or earlier (the instance was handed to
        that cell then); None otherwise."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        table = api_models.InstanceMapping
        with engines.reader(_api_db()) as session:
            return session.scalar(sa.select(table.cell_id).where(
                table.instance_uuid == instance_uuid,
                table.cell_id.is_not(None), table.updated_at < cutoff))

    @classmethod
    def get_cell_ids(cls, ctx, instance_uuids):
        """``{instance uuid: id of the cell its mapping names, or None}``
        for those of ``instance_uuids`` that have a mapping."""
        uuids = list(instance_uuids)
        found = {}
        with engines.reader(_api_db()) as session:
            # In chunks: databases bound the size of an IN list.
            for start in range(0, len(uuids), 500):
                found.update(session.execute(
                    sa.select(api_models.InstanceMapping.instance_uuid,
                              api_models.InstanceMapping.cell_id).where(
                        api_models.InstanceMapping.instance_uuid.in_(
                            uuids[start:start + 500]))).all())
        return found

    @staticmethod
    def get_instance_uuids(ctx, project_id, user_id=None):
        """The uuids of the mapped instances of ``project_id`` (and of
        ``user_id``, if given)."""
        im = api_models.InstanceMapping
        query = sa.select(im.instance_uuid).where(im.project_id == project_id)
        if user_id is not None:
            query = query.where(im.user_id == user_id)
        with engines.reader(_api_db()) as session:
            return list(session.scalars(query))

    @staticmethod
    def get_in_cells(ctx, cell_ids, project_id=None, instance_uuid=None):
        """What the API database knows of the instances of the cells
        ``cell_ids`` (of ``project_id``, the instance ``instance_uuid``,
        if given) not being deleted:
        rows of instance_uuid, project_id, user_id and created_at,
        newest first. All there is to say of the servers of a cell
        whose database cannot be reached."""
        im = api_models.InstanceMapping
        query = sa.select(im.instance_uuid, im.project_id, im.user_id,
                          im.created_at).where(
            im.cell_id.in_(list(cell_ids)),
            im.queued_for_delete.is_(False)).order_by(
            im.created_at.desc(), im.instance_uuid.desc())
        if project_id is not None:
            query = query.where(im.project_id == project_id)
        if instance_uuid is not None:
            query = query.where(im.instance_uuid == instance_uuid)
        with engines.reader(_api_db()) as session:
            return session.execute(query).all()

    def destroy(self, ctx):
        with engines.writer(_api_db()) as session:
            session.execute(sa.delete(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid ==
                self.instance_uuid))

    @staticmethod
    def count_by_cell(ctx, cell_mapping):
        """How many instance mappings name ``cell_mapping``."""
        with engines.reader(_api_db()) as session:
            return session.scalar(sa.select(sa.func.count()).where(
                api_models.InstanceMapping.cell_id == cell_mapping.id))

    @staticmethod
    def destroy_by_cell(ctx, cell_mapping):
        with engines.writer(_api_db()) as session:
            session.execute(sa.delete(api_models.InstanceMapping).where(
                api_models.InstanceMapping.cell_id == cell_mapping.id))

    @staticmethod
    def queue_for_delete(ctx, instance_uuid):
        """The instance is being deleted: it counts against no quota."""
        with engines.writer(_api_db()) as session:
            session.execute(sa.update(api_models.InstanceMapping).where(
                api_models.InstanceMapping.instance_uuid ==
                instance_uuid).values(queued_for_delete=True))


@base.ObjectRegistry.register
class HostMapping(base.SchedulerSplitObject):
    """Which cell a compute host belongs to."""
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(),
        'cell_mapping': fields.ObjectField('CellMapping'),
    }

    @classmethod
    def get_all(cls, ctx):
        with engines.reader(_api_db()) as session:
            cells = {row.id: CellMapping._from_row(row) for row in
                     session.scalars(sa.select(api_models.CellMapping))}
            return [cls(host=row.host, cell_mapping=cells[row.cell_id])
                    for row in session.scalars(
                        sa.select(api_models.HostMapping).order_by(
                            api_models.HostMapping.host))]

    @classmethod
    def get_by_cell(cls, ctx, cell_mapping):
        """The mappings of the hosts of ``cell_mapping``, by host name."""
        with engines.reader(_api_db()) as session:
            return [cls(host=host, cell_mapping=cell_mapping)
                    for host in session.scalars(
                        sa.select(api_models.HostMapping.host).where(
                            api_models.HostMapping.cell_id == cell_mapping.id)
                        .order_by(api_models.HostMapping.host))]

    @classmethod
    def destroy_by_cell(cls, ctx, cell_mapping):
        with engines.writer(_api_db()) as session:
            session.execute(sa.delete(api_models.HostMapping).where(
                api_models.HostMapping.cell_id == cell_mapping.id))

    @classmethod
    def get_by_host(cls, ctx, host):
        """The mapping of ``host``; ``ComputeHostNotFound`` if it has
        none."""
        with engines.reader(_api_db()) as session:
            row = session.scalars(sa.select(api_models.HostMapping).where(
                api_models.HostMapping.host == host)).first()
            if row is None:
                raise exception.ComputeHostNotFound(host=host)
            cell = session.get(api_models.CellMapping, row.cell_id)
            return cls(host=row.host,
                       cell_mapping=CellMapping._from_row(cell))

    @classmethod
    def map_new_hosts(cls, ctx, cell_mapping, hosts):
        """Map those of ``hosts`` that are not mapped yet; return them."""
        with engines.writer(_api_db()) as session:
            known = set(session.scalars(sa.select(api_models.HostMapping.host)
                                        .where(api_models.HostMapping.host.in_(
                                            list(hosts)))))
            new = sorted(set(hosts) - known)
            for host in new:
                session.add(api_models.HostMapping(host=host,
                                                   cell_id=cell_mapping.id))
            return new

    @classmethod
    def destroy_by_host(cls, ctx, host):
        """Forget which cell ``host`` belongs to; False if it was not
        mapped."""
        with engines.writer(_api_db()) as session:
            return session.execute(sa.delete(api_models.HostMapping).where(
                api_models.HostMapping.host == host)).rowcount > 0
