"""Schema upgrades of the three databases with alembic.

The alembic trees are ``migrations/api``, ``migrations/cell`` and
``migrations/scheduler`` (installed as ``scheduler_split.migrations``).
MySQL commits every DDL statement on its own: a migration that fails
half way leaves its earlier statements, and the recorded revision of
the one before it.
"""

import importlib.resources
import logging

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
from alembic import script as alembic_script

from scheduler_split.db import api_models
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models

LOG = logging.getLogger(__name__)

# Each database's metadata: every table of it is in the module of its
# declarative base.
DATABASES = {
    'api': api_models.ApiBase.metadata,
    'cell': cell_models.CellBase.metadata,
    'scheduler': scheduler_models.SchedulerBase.metadata,
}


def _script_location(kind):
    return str(importlib.resources.files('scheduler_split.migrations')
               .joinpath(kind))


def _config(kind, url):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', _script_location(kind))
    cfg.set_main_option('sqlalchemy.url', url.replace('%', '%%'))
    cfg.attributes['kind'] = kind
    return cfg


def upgrade(kind, url, revision='head'):
    """Create or upgrade the ``kind`` database at ``url``."""
    engine = engines.get_engine(url, writer=False)
    with engine.connect() as connection:
        cfg = _config(kind, url)
        cfg.attributes['connection'] = connection
        command.upgrade(cfg, revision)
        connection.commit()


def current(kind, url):
    engine = engines.get_engine(url, writer=False)
    with engine.connect() as connection:
        return alembic_migration.MigrationContext.configure(
            connection).get_current_revision()


def head(kind):
    script = alembic_script.ScriptDirectory.from_config(_config(kind, ''))
    return script.get_current_head()


def run_env(context, kind):
    """The body of every ``migrations/<kind>/env.py``."""
    metadata = DATABASES[kind]
    connection = context.config.attributes.get('connection')
    if connection is None:
        url = context.config.get_main_option('sqlalchemy.url')
        engine = engines.get_engine(url, writer=False)
        with engine.connect() as connection:
            _run(context, connection, metadata)
            connection.commit()
    else:
        _run(context, connection, metadata)


def _run(context, connection, metadata):
    if connection.dialect.name in ('mysql', 'mariadb'):
        _default_to_utf8mb4(connection)
    context.configure(connection=connection, target_metadata=metadata,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def _default_to_utf8mb4(connection):
    """Tables created from now on hold any Unicode character: a database
    created with MySQL's ``utf8`` (three bytes a character, as devstack's
    ``recreate_database`` does) would refuse emoji in a server's name."""
    charset = connection.exec_driver_sql(
        'SELECT @@character_set_database').scalar()
    if charset != 'utf8mb4':
        connection.exec_driver_sql(
            'ALTER DATABASE CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci')
