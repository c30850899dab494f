"""A RabbitMQ restart loses no boot the API accepted.

Boots wait in the super-conductor's queue (the super-conductor is
stopped) while the broker restarts. With transient queues, the default,
the broker loses them and the super-conductor casts them again once it
sees their build requests taken by nobody; with durable queues (what a
new deployment sets) the broker keeps them. Either way every boot ends
ACTIVE, with the ``service_down_time`` a deployment runs with by default.
"""

import textwrap

import pytest

from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

BOOTS = 6


@pytest.fixture
def deploy(tmp_path):
    started = []

    def deploy(broker_conf):
        dep = deployment_mod.Deployment(tmp_path / 'deployment')
        started.append(dep)
        dep.setup()
        names = list(dep._commands())
        dep.add_config(names, 'broker-restart.conf', textwrap.dedent("""\
            [DEFAULT]
            # The default: a restart of the broker takes less.
            service_down_time = 60
            [conductor]
            lost_build_timeout = 120
            build_redrive_interval = 5
            """) + textwrap.dedent(broker_conf))
        dep.start()
        dep.wait_for_api()
        dep.wait_for_hosts(dep.hosts)
        dep.manage('cell_v2', 'discover_hosts')
        return dep

    yield deploy
    for dep in started:
        dep.teardown()


def _boots_survive_a_broker_restart(dep):
    api = fixtures.Api(dep.base_url)
    # Nothing takes the boots from the queue until the broker restarted.
    assert dep.stop('super-conductor') == {'super-conductor': 0}
    queued = [api.boot(name='queued-%d' % i) for i in range(BOOTS)]
    assert {api.server(sid)['status'] for sid in queued} == {'BUILD'}

    dep.rabbit.restart()
    dep.start('super-conductor')

    servers = {sid: api.wait_for(sid, timeout=180) for sid in queued}
    assert {sid: s['status'] for sid, s in servers.items()} == {
        sid: 'ACTIVE' for sid in queued}
    claimed = {}
    for consumer, host in dep.allocations():
        claimed.setdefault(consumer, set()).add(host)
    for sid, server in servers.items():
        assert claimed[sid] == {server['OS-EXT-SRV-ATTR:host']}
    # Each boot was built once: one instance row per server, in the cell
    # its mapping names.
    for cell, (_, db) in dep.cells.items():
        rows = dep.query(db, 'SELECT uuid FROM instances WHERE deleted = '
                         'false')
        for (uuid,) in rows:
            if uuid in servers:
                assert dep.cell_of(uuid) == cell
    return api, queued


def test_durable_queues_keep_boots_queued_across_a_broker_restart(deploy):
    # No re-drive: the broker alone keeps the boots.
    dep = deploy("""\
        build_redrive_limit = 0
        [oslo_messaging_rabbit]
        amqp_durable_queues = true
        """)
    _boots_survive_a_broker_restart(dep)
    super_log = open(dep.log_dir + '/super-conductor.log').read()
    assert 'casting it again' not in super_log


def test_boots_a_broker_lost_are_redriven_by_the_super_conductor(deploy):
    # Transient queues, as oslo.messaging defaults to.
    dep = deploy("""\
        build_redrive_limit = 3
        """)
    _boots_survive_a_broker_restart(dep)
    super_log = open(dep.log_dir + '/super-conductor.log').read()
    assert super_log.count('casting it again (1 of 3)') == BOOTS
