"""A user's SSH key pairs (``/os-keypairs``), in the API database.

Each user may hold ``[quota] key_pairs`` of them, counted in the user's
quota turn in the same transaction as the insert (see
``scheduler_split.quota``).
"""

from oslo_utils import timeutils
from oslo_versionedobjects import fields
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split import exception
from scheduler_split.objects import base
from scheduler_split import quota

CONF = conf.CONF

_COLUMNS = ('id', 'name', 'user_id', 'fingerprint', 'public_key', 'type',
            'created_at', 'updated_at')


def _api_db():
    return CONF.api_database.connection


def _named(user_id, name):
    kp = api_models.KeyPair
    return sa.and_(kp.user_id == user_id, kp.name == name)


@base.ObjectRegistry.register
class KeyPair(base.SchedulerSplitObject):
    VERSION = '1.0'

    fields = {
        'id': fields.IntegerField(nullable=True),
        'name': fields.StringField(),
        'user_id': fields.StringField(),
        'fingerprint': fields.StringField(nullable=True),
        'public_key': fields.StringField(nullable=True),
        'type': fields.StringField(default='ssh'),
        'created_at': fields.DateTimeField(nullable=True),
        'updated_at': fields.DateTimeField(nullable=True),
    }

    def create(self, ctx, project_id):
        """Record the key pair, counted against the ``key_pairs`` limit
        of ``project_id`` in its user's quota turn; ``KeyPairExists`` if
        the user holds one of that name."""
        with engines.writer(_api_db()) as session:
            quota.lock_project(session, 'user:' + self.user_id)
            if session.scalar(sa.select(api_models.KeyPair.id).where(
                    _named(self.user_id, self.name))) is not None:
                raise exception.KeyPairExists(name=self.name)
            quota.check('key_pairs', 1,
                        quota.key_pair_count(session, self.user_id),
                        quota.limits(project_id, session)['key_pairs'])
            row = api_models.KeyPair(
                name=self.name, user_id=self.user_id,
                public_key=self.public_key, fingerprint=self.fingerprint,
                type=self.type, created_at=timeutils.utcnow())
            session.add(row)
            session.flush()
            base.apply_row(self, row, _COLUMNS)

    @classmethod
    def get_by_name(cls, ctx, user_id, name):
        with engines.reader(_api_db()) as session:
            row = session.scalars(sa.select(api_models.KeyPair).where(
                _named(user_id, name))).first()
            if row is None:
                raise exception.KeypairNotFound(name=name, user_id=user_id)
            return base.apply_row(cls(), row, _COLUMNS)

    @staticmethod
    def exists(ctx, user_id, name):
        with engines.reader(_api_db()) as session:
            return session.scalar(sa.select(api_models.KeyPair.id).where(
                _named(user_id, name))) is not None

    @classmethod
    def get_all(cls, ctx, user_id, limit=None, marker=None):
        """The user's key pairs by name, after the one named ``marker``
        (``MarkerNotFound`` if the user has none of that name), at most
        ``limit``."""
        kp = api_models.KeyPair
        query = sa.select(kp).where(kp.user_id == user_id).order_by(kp.name)
        with engines.reader(_api_db()) as session:
            if marker is not None:
                if session.scalar(sa.select(kp.name).where(
                        _named(user_id, marker))) is None:
                    raise exception.MarkerNotFound(marker=marker)
                query = query.where(kp.name > marker)
            if limit is not None:
                query = query.limit(limit)
            return [base.apply_row(cls(), row, _COLUMNS)
                    for row in session.scalars(query)]

    @staticmethod
    def destroy(ctx, user_id, name):
        """Delete the key pair; ``KeypairNotFound`` if there is none."""
        with engines.writer(_api_db()) as session:
            result = session.execute(sa.delete(api_models.KeyPair).where(
                _named(user_id, name)))
            if result.rowcount == 0:
                raise exception.KeypairNotFound(name=name, user_id=user_id)
