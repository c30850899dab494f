import sqlalchemy as sa
from oslo_versionedobjects import fields

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import models
from scheduler_split import exception
from scheduler_split.objects import base

CONF = conf.CONF

_COLUMNS = ('id', 'flavorid', 'name', 'memory_mb', 'vcpus', 'root_gb',
            'ephemeral_gb', 'swap', 'rxtx_factor', 'is_public', 'disabled',
            'description')


@base.ObjectRegistry.register
class Flavor(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(nullable=True),
        'flavorid': fields.StringField(),
        'name': fields.StringField(),
        'memory_mb': fields.IntegerField(),
        'vcpus': fields.IntegerField(),
        'root_gb': fields.IntegerField(),
        'ephemeral_gb': fields.IntegerField(default=0),
        'swap': fields.IntegerField(default=0),
        'rxtx_factor': fields.FloatField(default=1.0),
        'is_public': fields.BooleanField(default=True),
        'disabled': fields.BooleanField(default=False),
        'description': fields.StringField(nullable=True, default=None),
        'extra_specs': fields.DictOfStringsField(default={}),
    }

    @property
    def disk_gb(self):
        """Local disk one instance of this flavor takes, in GiB."""
        return self.root_gb + self.ephemeral_gb + (self.swap + 1023) // 1024

    @classmethod
    def _from_row(cls, row):
        flavor = cls()
        base.apply_row(flavor, row, _COLUMNS)
        flavor.extra_specs = {s.key: s.value for s in row.extra_specs}
        flavor.obj_reset_changes()
        return flavor

    @classmethod
    def get_by_flavor_id(cls, ctx, flavorid):
        with engines.reader(CONF.api_database.connection) as session:
            row = session.scalars(sa.select(models.Flavor).where(
                models.Flavor.flavorid == str(flavorid))).first()
            if row is None:
                raise exception.FlavorNotFound(flavor_id=flavorid)
            return cls._from_row(row)

    @classmethod
    def get_all(cls, ctx, is_public=True):
        with engines.reader(CONF.api_database.connection) as session:
            query = sa.select(models.Flavor).order_by(models.Flavor.flavorid)
            if is_public is not None:
                query = query.where(models.Flavor.is_public == is_public)
            return [cls._from_row(row) for row in session.scalars(query)]

    def create(self, ctx):
        with engines.writer(CONF.api_database.connection) as session:
            values = {k: getattr(self, k) for k in _COLUMNS
                      if k != 'id' and self.obj_attr_is_set(k)}
            row = models.Flavor(**values)
            row.extra_specs = [models.FlavorExtraSpec(key=k, value=v)
                               for k, v in self.get('extra_specs',
                                                    {}).items()]
            session.add(row)
            session.flush()
            self.id = row.id
        self.obj_reset_changes()
