"""What the host-state cache relies on from PostgreSQL and MariaDB: the
scheduler revision that stamps each provider's last change (changed_at,
changed_by) upgrades, downgrades and matches the models, and a reload
reads, from one snapshot, only what another scheduler changed, even after
this scheduler's own claim on the same host."""

import datetime

from alembic import autogenerate
from alembic import migration as alembic_migration
from oslo_utils import uuidutils
import pytest
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split.db import migration
from scheduler_split.db import scheduler_models
from scheduler_split.scheduler import host_loads
from scheduler_split.scheduler import process as scheduler_process
from tests.integration import backends
from tests.unit import helpers

pytestmark = pytest.mark.integration

CONF = conf.CONF

CELL = '6f1d9c8e-1b4a-4a57-9d0e-3c2b1a0f9e01'


@pytest.fixture(scope='module', params=[
    pytest.param(backends.PostgreSQL, id='postgresql'),
    pytest.param(backends.MariaDB, id='mariadb',
                 marks=pytest.mark.mariadb)])
def server(request):
    db = request.param().start()
    try:
        yield db
    finally:
        engines.dispose_all()
        db.stop()


@pytest.fixture
def scheduler_db(server, request):
    url = server.create_database('ss_%s' % request.node.name.split('[')[0]
                                 .replace('test_', '')[:40])
    migration.upgrade('scheduler', url)
    yield url
    engines.dispose_all()


def _add_host(scheduler, host, **extra):
    stats = dict({'vcpus': 8, 'memory_mb': 8192, 'local_gb': 100}, **extra)
    return scheduler.host_manager.update_from_stats(
        CELL, host, host, helpers.host_stats(**stats))


def _states(scheduler):
    return {state.host: state
            for state in scheduler.host_manager.host_states()}


def test_the_revision_of_provider_changes_goes_down_and_up(scheduler_db):
    migration.upgrade('scheduler', scheduler_db, revision='0007')
    migration.upgrade('scheduler', scheduler_db)
    assert migration.current('scheduler', scheduler_db) == \
        migration.head('scheduler')
    with engines.get_engine(scheduler_db, writer=False).connect() as conn:
        context_ = alembic_migration.MigrationContext.configure(
            conn, opts={'compare_type': True})
        assert autogenerate.compare_metadata(
            context_, migration.DATABASES['scheduler']) == []


@pytest.fixture
def reload_when_asked():
    """Schedulers that reload only when asked (an interval of an hour).
    """
    CONF.set_override('host_state_refresh_interval', 3600,
                      group='filter_scheduler')
    yield
    CONF.clear_override('host_state_refresh_interval',
                        group='filter_scheduler')


def test_a_reload_reads_what_another_scheduler_changed_and_no_more(
        scheduler_db, reload_when_asked, monkeypatch):
    # Without the margin for late commits, which would read again the
    # hosts registered just before the first load.
    monkeypatch.setattr(host_loads, 'CHANGE_OVERLAP',
                        datetime.timedelta(0))
    ctx = context.get_admin_context()
    first = scheduler_process.Scheduler(scheduler_db)
    second = scheduler_process.Scheduler(scheduler_db)
    for host in ('h1', 'h2', 'h3', 'h4'):
        _add_host(first, host)
    assert sorted(_states(second)) == ['h1', 'h2', 'h3', 'h4']
    _add_host(first, 'h1', memory_mb=16384)
    _add_host(first, 'h5')
    first.delete_host(ctx, 'h2')
    # This scheduler's claim on h1 after the other's change: the row's
    # last writer is this one, whose reload must read it all the same.
    h1 = second.host_manager.uuid_of(('h1', 'h1'))
    assert second.manager._claim(h1, uuidutils.generate_uuid(),
                                 {'MEMORY_MB': 512})
    # And one on h3, which no other scheduler changed: skipped.
    h3 = second.host_manager.uuid_of(('h3', 'h3'))
    assert second.manager._claim(h3, uuidutils.generate_uuid(),
                                 {'MEMORY_MB': 512})
    read = []
    read_states = second.host_manager._read_states

    def counting(*args, **kwargs):
        states, newest = read_states(*args, **kwargs)
        read.append(sorted(state.host for state in states.values()))
        return states, newest

    second.host_manager._read_states = counting

    second.host_manager.reload()

    assert read == [['h1', 'h5']]
    states = _states(second)
    assert sorted(states) == ['h1', 'h3', 'h4', 'h5']
    assert states['h1'].capacity('MEMORY_MB') == 16384
    assert states['h1'].used['MEMORY_MB'] == 512
    assert states['h3'].used['MEMORY_MB'] == 512
    rp = scheduler_models.ResourceProvider
    with engines.reader(scheduler_db) as session:
        stamps = dict(session.execute(
            sa.select(rp.host, rp.changed_by)).all())
    # The claims of the scheduler whose memory holds them, but for a
    # host another scheduler had changed since.
    assert stamps['h3'] == second.host_manager.writer_id
    assert stamps['h1'] is None
