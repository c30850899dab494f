"""The alembic trees on MariaDB build exactly the schema the models
describe, in a database created as devstack creates it."""

from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import migration
from scheduler_split.db import models
from tests.integration import backends

pytestmark = [pytest.mark.integration, pytest.mark.mariadb]

KINDS = sorted(migration.DATABASES)


@pytest.fixture(scope='module')
def server():
    db = backends.MariaDB().start()
    try:
        yield db
    finally:
        engines.dispose_all()
        db.stop()


@pytest.fixture
def devstack_db(server, request):
    """An empty database made the way devstack's ``recreate_database``
    makes it: MySQL's three-byte ``utf8``."""
    name = 'ss_%s' % request.node.name.split('[')[-1].rstrip(']')
    server.sql('CREATE DATABASE `%s` CHARACTER SET utf8' % name)
    return 'mysql+pymysql://root@127.0.0.1:%d/%s' % (server.port, name)


def _differences(url, kind):
    with engines.get_engine(url, writer=False).connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True})
        return autogenerate.compare_metadata(context,
                                             migration.DATABASES[kind])


@pytest.mark.parametrize('kind', KINDS)
def test_upgrade_twice_to_head_matches_the_models(devstack_db, kind):
    migration.upgrade(kind, devstack_db)
    migration.upgrade(kind, devstack_db)

    assert migration.current(kind, devstack_db) == migration.head(kind)
    assert _differences(devstack_db, kind) == []
    with engines.reader(devstack_db) as session:
        charsets = set(session.execute(sa.text(
            "SELECT c.character_set_name FROM information_schema.tables t "
            "JOIN information_schema.collation_character_set_applicability "
            "c ON c.collation_name = t.table_collation "
            "WHERE t.table_schema = DATABASE()")).scalars())
    assert charsets == {'utf8mb4'}


def test_a_server_keeps_emoji_microseconds_and_large_metadata(devstack_db):
    migration.upgrade('cell', devstack_db)
    # What the API lets a server have: 128 items of up to 255
    # characters, here of four bytes each (past TEXT's 64 KiB).
    metadata = '{%s}' % ', '.join(
        '"key-%03d": "%s"' % (i, '\U0001F680' * 255) for i in range(128))
    created = models.now()
    assert created.microsecond
    with engines.writer(devstack_db) as session:
        session.add(cell_models.Instance(
            uuid='8b0f6c1e-2d3a-4e5f-9a8b-7c6d5e4f3a21', project_id='p',
            display_name='vm \U0001F680', vm_state='building', flavor='{}',
            metadata_=metadata, created_at=created))
    with engines.reader(devstack_db) as session:
        row = session.scalars(sa.select(cell_models.Instance)).one()
        assert (row.display_name, row.metadata_, row.created_at) == (
            'vm \U0001F680', metadata, created)
