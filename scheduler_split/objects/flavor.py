from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base

CONF = conf.CONF

_COLUMNS = ('id', 'flavorid', 'name', 'memory_mb', 'vcpus', 'root_gb',
            'ephemeral_gb', 'swap', 'rxtx_factor', 'is_public', 'disabled',
            'description')


# The reads of every boot, built once, the values as parameters.
_FLAVOR_T = api_models.Flavor.__table__
_SPECS_T = api_models.FlavorExtraSpec.__table__
_ACCESS_T = api_models.FlavorProject.__table__
_BY_FLAVOR_ID = sa.select(*[_FLAVOR_T.c[name] for name in _COLUMNS]).where(
    _FLAVOR_T.c.flavorid == sa.bindparam('b_flavorid'))
_ACCESS = sa.select(_ACCESS_T.c.id).where(
    _ACCESS_T.c.flavor_id == sa.bindparam('b_id'),
    _ACCESS_T.c.project_id == sa.bindparam('b_project_id'))
_SPECS = sa.select(_SPECS_T.c.key, _SPECS_T.c.value).where(
    _SPECS_T.c.flavor_id == sa.bindparam('b_id'))


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
    def get_by_flavor_id(cls, ctx, flavorid, project_id=None):
        """The flavor of that id; with ``project_id``, only if it is
        public or that project was given access to it. Read through Core:
        every boot reads its flavor."""
        with engines.connection(CONF.api_database.connection) as conn:
            row = conn.execute(_BY_FLAVOR_ID, dict(
                b_flavorid=str(flavorid))).first()
            if row is None:
                raise exception.FlavorNotFound(flavor_id=flavorid)
            if project_id is not None and not row.is_public and \
                    conn.execute(_ACCESS, dict(
                        b_id=row.id, b_project_id=project_id)).first() is None:
                raise exception.FlavorNotFound(flavor_id=flavorid)
            specs = dict(conn.execute(_SPECS, dict(b_id=row.id)).all())
        flavor = cls()
        base.apply_row(flavor, row, _COLUMNS)
        flavor.extra_specs = specs
        flavor.obj_reset_changes()
        return flavor

    @classmethod
    def get_all(cls, ctx, is_public=True, project_id=None, sort_key=None,
                sort_dir='asc'):
        """Flavors by ``is_public`` (None: all). With ``project_id`` the
        private flavors that project has access to come with the public
        ones."""
        flavor = api_models.Flavor
        key = getattr(flavor, sort_key or 'flavorid')
        order = key.desc() if sort_dir == 'desc' else key.asc()
        with engines.reader(CONF.api_database.connection) as session:
            query = sa.select(flavor).order_by(order, flavor.id)
            if is_public is not None:
                condition = flavor.is_public == is_public
                if is_public and project_id is not None:
                    condition = sa.or_(condition, flavor.projects.any(
                        api_models.FlavorProject.project_id == project_id))
                query = query.where(condition)
            return [cls._from_row(row) for row in session.scalars(query)]

    def create(self, ctx):
        with engines.writer(CONF.api_database.connection) as session:
            values = {k: getattr(self, k) for k in _COLUMNS
                      if k != 'id' and self.obj_attr_is_set(k)}
            row = api_models.Flavor(**values)
            row.extra_specs = [api_models.FlavorExtraSpec(key=k, value=v)
                               for k, v in self.get('extra_specs',
                                                    {}).items()]
            session.add(row)
            try:
                session.flush()
            except sa.exc.IntegrityError:
                raise _duplicate(ctx, self.flavorid, self.name)
            self.id = row.id
        self.obj_reset_changes()

    def destroy(self, ctx):
        with engines.writer(CONF.api_database.connection) as session:
            session.delete(_row(session, self.flavorid))

    def save_description(self, ctx, description):
        with engines.writer(CONF.api_database.connection) as session:
            _row(session, self.flavorid).description = description
        self.description = description
        self.obj_reset_changes(['description'])

    def update_extra_specs(self, ctx, specs):
        """Set ``specs`` (a dict of strings) over the flavor's own, in one
        transaction."""
        with engines.writer(CONF.api_database.connection) as session:
            row = _row(session, self.flavorid)
            current = {s.key: s for s in row.extra_specs}
            for key, value in specs.items():
                if key in current:
                    current[key].value = value
                else:
                    row.extra_specs.append(
                        api_models.FlavorExtraSpec(key=key, value=value))
            try:
                session.flush()
            except sa.exc.IntegrityError:
                # Another request added one of these keys first.
                raise exception.Conflict(
                    reason='the extra specs of flavor %s changed '
                           'concurrently' % self.flavorid)
            self.extra_specs = {s.key: s.value for s in row.extra_specs}
        self.obj_reset_changes(['extra_specs'])

    def delete_extra_spec(self, ctx, key):
        with engines.writer(CONF.api_database.connection) as session:
            row = _row(session, self.flavorid)
            spec = next((s for s in row.extra_specs if s.key == key), None)
            if spec is None:
                raise exception.FlavorExtraSpecsNotFound(
                    flavor_id=self.flavorid, extra_specs_key=key)
            row.extra_specs.remove(spec)
            self.extra_specs = {s.key: s.value for s in row.extra_specs}
        self.obj_reset_changes(['extra_specs'])

    def projects(self, ctx):
        """The projects given access to this (private) flavor."""
        with engines.reader(CONF.api_database.connection) as session:
            return sorted(p.project_id
                          for p in _row(session, self.flavorid).projects)

    def add_access(self, ctx, project_id):
        with engines.writer(CONF.api_database.connection) as session:
            row = _row(session, self.flavorid)
            if project_id in {p.project_id for p in row.projects}:
                raise exception.FlavorAccessExists(
                    flavor_id=self.flavorid, project_id=project_id)
            row.projects.append(
                api_models.FlavorProject(project_id=project_id))
            try:
                session.flush()
            except sa.exc.IntegrityError:
                raise exception.FlavorAccessExists(
                    flavor_id=self.flavorid, project_id=project_id)

    def remove_access(self, ctx, project_id):
        with engines.writer(CONF.api_database.connection) as session:
            row = _row(session, self.flavorid)
            access = next((p for p in row.projects
                           if p.project_id == project_id), None)
            if access is None:
                raise exception.FlavorAccessNotFound(
                    flavor_id=self.flavorid, project_id=project_id)
            row.projects.remove(access)


def _row(session, flavorid):
    row = session.scalars(sa.select(api_models.Flavor).where(
        api_models.Flavor.flavorid == str(flavorid))).first()
    if row is None:
        raise exception.FlavorNotFound(flavor_id=flavorid)
    return row


def _duplicate(ctx, flavorid, name):
    """Which of the flavor's id or name another flavor already has."""
    with engines.reader(CONF.api_database.connection) as session:
        taken = session.scalars(sa.select(api_models.Flavor.flavorid).where(
            api_models.Flavor.flavorid == str(flavorid))).first()
    if taken is not None:
        return exception.FlavorIdExists(flavor_id=flavorid)
    return exception.FlavorExists(name=name)
