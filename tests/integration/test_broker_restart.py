"""A RabbitMQ restart loses no boot the API accepted.

Boots wait in the super-conductor's queue (the super-conductor is
stopped) while the broker restarts. With transient queues, the default,
the broker loses them and the super-conductor casts them again once it
sees their build requests taken by nobody; with durable queues (what a
new deployment sets) the broker keeps them. Either way every boot ends
ACTIVE, with the ``service_down_time`` a deployment runs with by default.

A service reconnects after a back-off of its own, so some declare their
transient queues again later than others: a message sent to one of those
meanwhile is handed back by the broker and sent again until its queue is
there (``[DEFAULT] rpc_delivery_timeout``).
"""

import textwrap
import time

import pytest

from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

BOOTS = 6
# Seconds the late services stay away once the boots are re-driven.
LATE = 12


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


def _boots_survive_a_broker_restart(dep, late=()):
    """``late``: services that come back only once the boots are under
    way, as a service whose reconnection back-off grew long does."""
    api = fixtures.Api(dep.base_url)
    # Nothing takes the boots from the queue until the broker restarted.
    assert dep.stop('super-conductor') == {'super-conductor': 0}
    queued = [api.boot(name='queued-%d' % i) for i in range(BOOTS)]
    assert {api.server(sid)['status'] for sid in queued} == {'BUILD'}
    if late:
        assert dep.stop(*late) == {name: 0 for name in late}

    dep.rabbit.restart()
    dep.start('super-conductor')
    if late:
        # Past the first re-drive: computes call a conductor, and the
        # super-conductor casts to a compute, that has no queue yet.
        dep.wait_for_log('super-conductor', 'casting it again (1 of')
        time.sleep(LATE)
        dep.start(*late)

    servers = {sid: api.wait_for(sid, timeout=180) for sid in queued}
    # A server in ERROR shows its fault in the failure.
    assert {sid: (s['status'], s.get('fault', {}).get('message'))
            for sid, s in servers.items()} == {
        sid: ('ACTIVE', None) for sid in queued}
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
    # Transient queues, as oslo.messaging defaults to. A cell conductor and
    # a compute of the other cell come back after the re-drive: a message
    # sent to them meanwhile waits for their queue instead of being lost.
    dep = deploy("""\
        build_redrive_limit = 3
        """)
    late = ('conductor-cell1', 'cell2-compute1')
    _boots_survive_a_broker_restart(dep, late=late)
    super_log = open(dep.log_dir + '/super-conductor.log').read()
    assert super_log.count('casting it again (1 of 3)') == BOOTS
    # The computes of cell1 went on calling their conductor meanwhile.
    waited = ''.join(open(dep.log_of(host)).read()
                     for host in dep.hosts_of('cell1'))
    assert 'No queue on the bus takes' in waited
