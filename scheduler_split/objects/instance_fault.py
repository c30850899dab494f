"""A server's faults: why it went to ERROR, as the API shows it (the
``fault`` of a server). An ``InstanceFault`` is made from the exception
that failed the server, written in the same transaction as the state it
explains (``Instance.save``), and read back as the newest of each
server.
"""

from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split import exception
from scheduler_split.objects import base


@base.ObjectRegistry.register
class InstanceFault(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = {
        'instance_uuid': fields.UUIDField(),
        'code': fields.IntegerField(),
        'message': fields.StringField(),
        'details': fields.StringField(nullable=True),
        'host': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def from_exception(cls, instance_uuid, exc, host=None, code=500):
        """The fault that says why ``instance_uuid`` failed."""
        details = exception.describe(exc)
        if isinstance(exc, exception.DatabaseUnavailable):
            # What the outage said names servers and ports: the owner
            # reads only its kind.
            message = 'DatabaseUnavailable'
        elif isinstance(exc, exception.SchedulerSplitException):
            message = details
        else:
            # Anything else (a database driver's error, a remote error) may
            # name hosts, ports, paths or carry a traceback: the owner
            # reads only its kind, as in Nova; the details are for admins.
            # (A remote error names the kind raised at the other end.)
            message = getattr(exc, 'exc_type', None) or type(exc).__name__
        exc_code = getattr(exc, 'code', None)
        # Only our exceptions carry an HTTP status; others (SQLAlchemy's
        # error codes, say) are internal errors.
        if isinstance(exc_code, int) and 400 <= exc_code < 600:
            code = exc_code
        return cls(instance_uuid=instance_uuid, code=code,
                   message=message[:255], details=details, host=host)

    def add_to(self, session):
        """Insert this fault within the caller's transaction."""
        row = cell_models.InstanceFault(
            instance_uuid=self.instance_uuid, code=self.code,
            message=self.message, details=self.details, host=self.host)
        if self.obj_attr_is_set('created_at') and self.created_at:
            row.created_at = self.created_at.replace(tzinfo=None)
        session.add(row)
        session.flush()
        self.created_at = row.created_at
        self.obj_reset_changes()

    @classmethod
    def get_latest(cls, session, uuids):
        """The newest fault of each of ``uuids``, by instance uuid."""
        if not uuids:
            return {}
        rows = session.scalars(
            sa.select(cell_models.InstanceFault)
            .where(cell_models.InstanceFault.instance_uuid.in_(list(uuids)))
            .order_by(cell_models.InstanceFault.id))
        latest = {}
        for row in rows:
            latest[row.instance_uuid] = cls(
                instance_uuid=row.instance_uuid, code=row.code,
                message=row.message, details=row.details, host=row.host,
                created_at=row.created_at)
        return latest
