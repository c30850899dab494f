import sqlalchemy as sa
from oslo_versionedobjects import fields

from scheduler_split.db import engines
from scheduler_split.db import models
from scheduler_split.objects import base


@base.ObjectRegistry.register
class Service(base.SchedulerSplitObject):
    """A service record in a cell database, with its last heartbeat."""
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(),
        'binary': fields.StringField(),
        'topic': fields.StringField(),
        'disabled': fields.BooleanField(default=False),
        'last_seen_up': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def heartbeat(cls, ctx, host, binary, topic):
        """Create the record if needed and mark the service seen now."""
        now = base.naive_utc(base.utcnow())
        with engines.writer(ctx.cell_db) as session:
            row = session.scalars(sa.select(models.Service).where(
                models.Service.host == host,
                models.Service.binary == binary)).first()
            if row is None:
                row = models.Service(host=host, binary=binary, topic=topic,
                                     report_count=0)
                session.add(row)
            row.report_count += 1
            row.last_seen_up = now
            session.flush()
            service = base.apply_row(cls(), row, (
                'host', 'binary', 'topic', 'disabled', 'last_seen_up'))
        return service

    @classmethod
    def get_all(cls, ctx, binary=None):
        with engines.reader(ctx.cell_db) as session:
            query = sa.select(models.Service).order_by(models.Service.host)
            if binary is not None:
                query = query.where(models.Service.binary == binary)
            return [base.apply_row(cls(), row, (
                'host', 'binary', 'topic', 'disabled', 'last_seen_up'))
                for row in session.scalars(query)]
