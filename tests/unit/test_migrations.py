"""The alembic trees build exactly the schema the models describe."""

from alembic import autogenerate
from alembic import migration as alembic_migration
import pytest
import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import migration

KINDS = sorted(migration.DATABASES)


@pytest.fixture
def db_url(tmp_path):
    yield 'sqlite:///' + str(tmp_path / 'empty.sqlite')
    engines.dispose_all()


def _differences(url, kind):
    engine = engines.get_engine(url, writer=False)
    with engine.connect() as connection:
        context = alembic_migration.MigrationContext.configure(
            connection, opts={'compare_type': True})
        return autogenerate.compare_metadata(context,
                                             migration.DATABASES[kind])


def _schema(url):
    engine = engines.get_engine(url, writer=False)
    with engine.connect() as connection:
        return sorted(connection.exec_driver_sql(
            "SELECT type, name, sql FROM sqlite_master "
            "WHERE name NOT LIKE 'sqlite_%'").all())


def test_the_three_databases_are_known():
    assert KINDS == ['api', 'cell', 'scheduler']


@pytest.mark.parametrize('kind', KINDS)
def test_upgrade_to_head_matches_the_models(db_url, kind):
    migration.upgrade(kind, db_url)
    assert _differences(db_url, kind) == []


@pytest.mark.parametrize('kind', KINDS)
def test_upgrade_creates_every_table_of_the_models(db_url, kind):
    migration.upgrade(kind, db_url)
    tables = set(sa.inspect(engines.get_engine(db_url, writer=False))
                 .get_table_names())
    assert set(migration.DATABASES[kind].tables) <= tables


@pytest.mark.parametrize('kind', KINDS)
def test_upgrade_records_head_revision(db_url, kind):
    assert migration.current(kind, db_url) is None
    migration.upgrade(kind, db_url)
    assert migration.current(kind, db_url) == migration.head(kind)


@pytest.mark.parametrize('kind', KINDS)
def test_upgrade_twice_is_harmless(db_url, kind):
    migration.upgrade(kind, db_url)
    schema = _schema(db_url)

    migration.upgrade(kind, db_url)

    assert _schema(db_url) == schema
    assert migration.current(kind, db_url) == migration.head(kind)
    assert _differences(db_url, kind) == []


def test_compare_metadata_detects_a_missing_table(db_url):
    # The comparison itself must be able to fail: an empty database differs.
    engines.get_engine(db_url, writer=False).connect().close()
    differences = _differences(db_url, 'scheduler')
    added = {diff[1].name for diff in differences if diff[0] == 'add_table'}
    assert added == set(migration.DATABASES['scheduler'].tables)
