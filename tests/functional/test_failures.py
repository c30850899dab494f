"""Failures inside the system end in a state a user can see and act on:
ERROR with a fault, or gone. Nothing stays in BUILD."""

import oslo_messaging as messaging
import pytest

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import super_periodic
from scheduler_split.conductor.tasks import build as build_task
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import objects
from scheduler_split.scheduler import client as scheduler_client

CONF = conf.CONF

pytestmark = pytest.mark.functional


def _from_the_super_conductor(client):
    """Whether a compute client is one the API and the super-conductor
    send into a cell with (bounded by [DEFAULT] cell_rpc_timeout), not
    one of the cell's own services."""
    return client.client.retry is not None


def test_a_build_cast_not_sent_into_its_cell_is_cast_by_its_cell_conductor(
        start_system, monkeypatch, caplog):
    """The super-conductor's cast found the cell's bus unreachable and
    gave up unsent: the build waits with its plan, and the cell's
    conductor casts it to the host holding its claim."""
    CONF.set_override('build_redrive_interval', 1, group='conductor')
    CONF.set_override('lost_build_check_interval', 1, group='conductor')
    system = start_system(cells=1, hosts_per_cell=2)
    real = compute_rpcapi.ComputeAPI.build_and_run_instance
    refused = []

    def bus_away_from_the_super_conductor(self, ctx, host, *args, **kwargs):
        if _from_the_super_conductor(self):
            refused.append(host)
            raise messaging.MessageDeliveryFailure(
                'build_and_run_instance for compute.%s was not sent: its '
                'bus cannot be reached' % host)
        return real(self, ctx, host, *args, **kwargs)

    monkeypatch.setattr(compute_rpcapi.ComputeAPI, 'build_and_run_instance',
                        bus_away_from_the_super_conductor)
    server = system.api.wait_for(system.api.boot(name='cast-later'),
                                 timeout=30)
    assert server['status'] == 'ACTIVE'
    host = server['OS-EXT-SRV-ATTR:host']
    assert refused == [host]
    events = []
    api = system.api
    for action in api.get('/v2.1/servers/%s/os-instance-actions'
                          % server['id']).json()['instanceActions']:
        events += api.get('/v2.1/servers/%s/os-instance-actions/%s' % (
            server['id'], action['request_id'])).json()['instanceAction'][
            'events']
    assert sorted((e['event'], e['host']) for e in events) == [
        ('compute_build_and_run_instance', host),
        ('conductor_recover_build', host),
        ('conductor_schedule_and_build_instances', host)]
    assert list(system.allocations()) == [server['id']]
    assert any('its cell conductor casts the build to %s from its plan'
               % host in r.getMessage() for r in caplog.records
               if r.levelname == 'WARNING')


def test_failed_casts_to_the_computes_end_in_error_in_their_cell(
        start_system, monkeypatch):
    """No cast of the build reaches a compute, from the super-conductor
    nor from the cell conductor: once its casts and alternates are
    spent it is in ERROR with a fault, in its cell, and its claim is
    gone."""
    CONF.set_override('build_redrive_interval', 1, group='conductor')
    CONF.set_override('build_redrive_limit', 1, group='conductor')
    CONF.set_override('lost_build_check_interval', 1, group='conductor')
    system = start_system(cells=1, hosts_per_cell=2)

    def broker_gone(self, *args, **kwargs):
        raise messaging.MessageDeliveryFailure('broker unreachable')

    monkeypatch.setattr(compute_rpcapi.ComputeAPI, 'build_and_run_instance',
                        broker_gone)
    server = system.api.wait_for(system.api.boot(name='castfail'),
                                 timeout=60)
    assert server['status'] == 'ERROR'
    # The kind of error for everyone, what it said for admins only.
    assert server['fault']['message'] == 'MessageDeliveryFailure'
    assert 'broker unreachable' in server['fault']['details']
    assert system.cell_of(server['id']) == 'cell1'
    # ERROR with its fault first, then the claim goes.
    assert system.allocations_after_settling({}) == {}
    assert [s['id'] for s in system.api.servers()] == [server['id']]
    assert system.api.delete('/v2.1/servers/%s' % server['id']) \
        .status_code == 204
    system.api.wait_gone(server['id'])
    assert system.api.servers() == []


def test_build_failure_while_the_scheduler_cannot_be_reached_ends_in_error(
        start_system, fake_driver, monkeypatch):
    fake_driver('fail_hosts', ['cell1-compute1'])
    fake_driver('failures_reschedulable', False)
    system = start_system(cells=1, hosts_per_cell=1)
    release = scheduler_client.SchedulerClient.release_resources
    calls = []

    def scheduler_busy_once(self, ctx, instance_uuid):
        calls.append(instance_uuid)
        if len(calls) == 1:
            raise messaging.MessagingTimeout('scheduler busy')
        return release(self, ctx, instance_uuid)

    monkeypatch.setattr(scheduler_client.SchedulerClient,
                        'release_resources', scheduler_busy_once)
    server = system.api.wait_for(system.api.boot())
    assert server['status'] == 'ERROR'
    assert 'injected spawn failure' in server['fault']['message']
    assert calls
    # The claim the failed release left is dropped by the delete.
    assert system.api.delete('/v2.1/servers/%s' % server['id']) \
        .status_code == 204
    system.api.wait_gone(server['id'])
    assert system.allocations() == {}


def test_stop_between_cell_create_and_build_request_delete_settles(
        start_system, monkeypatch, tmp_path):
    system = start_system(cells=1, hosts_per_cell=1)

    def stop_midway(self, ctx, build_request, request_spec, host_list):
        # The process dies after the instance reached its cell and before
        # the build request is deleted or the build is cast.
        cell = self._cell(ctx, host_list[0].cell_uuid)
        build_request.instance.create(ss_context.target_cell(ctx, cell))
        objects.InstanceMapping.get_by_instance_uuid(
            ctx, build_request.instance_uuid).set_cell(ctx, cell)

    monkeypatch.setattr(build_task.ScheduleAndBuildTask,
                        '_build_in_cell', stop_midway)
    server_id = system.api.boot(name='midway')
    system.api.wait_for(server_id, statuses=('BUILD',))
    import time
    deadline = time.monotonic() + 10
    while system.cell_of(server_id) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    system.stop()
    monkeypatch.undo()

    system = start_system(cells=1, hosts_per_cell=1)
    server = system.api.wait_for(server_id)
    assert server['status'] == 'ERROR'
    assert 'restarted' in server['fault']['message']
    assert [s['id'] for s in system.api.servers()] == [server_id]
    assert system.allocations() == {}
    assert system.api.delete('/v2.1/servers/%s' % server_id) \
        .status_code == 204
    system.api.wait_gone(server_id)
    assert system.api.servers() == []


def test_boot_the_conductor_cannot_be_told_about_is_a_503_and_no_server(
        start_system, monkeypatch):
    from scheduler_split.conductor import rpcapi as conductor_rpcapi
    system = start_system(cells=1, hosts_per_cell=1)

    def bus_down(self, *args, **kwargs):
        raise messaging.MessageDeliveryFailure('broker unreachable')

    monkeypatch.setattr(conductor_rpcapi.SuperConductorAPI,
                        'schedule_and_build_instances', bus_down)
    resp = system.api.post('/v2.1/servers', {'server': {
        'name': 'lost', 'flavorRef': '1', 'networks': 'none',
        'imageRef': 'a8c3e2a6-0f4e-4c8a-9d1e-3c1b8f2a7e01'}})
    assert resp.status_code == 503, resp.text
    assert resp.json()['serviceUnavailable']['code'] == 503
    assert system.api.servers() == []


def test_builds_whose_messages_were_lost_end_in_error(start_system,
                                                      monkeypatch):
    """Every cast of the build lost: with no alternate to go on to, it
    is cast again to its host (which is up) as many times as fit in
    ``lost_build_timeout``, more than ``build_redrive_limit``, then ends
    in ERROR; a boot no super-conductor ever gets ends in cell0."""
    from scheduler_split.conductor import rpcapi as conductor_rpcapi
    from scheduler_split import conf
    conf.CONF.set_override('lost_build_timeout', 10, group='conductor')
    conf.CONF.set_override('lost_build_check_interval', 1,
                           group='conductor')
    conf.CONF.set_override('build_redrive_interval', 1, group='conductor')
    conf.CONF.set_override('build_redrive_limit', 2, group='conductor')
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api

    # A build cast to a compute that never arrives...
    lost = []
    monkeypatch.setattr(compute_rpcapi.ComputeAPI, 'build_and_run_instance',
                        lambda self, ctx, host, *args: lost.append(host))
    in_cell = api.boot(name='lost-in-cell')
    api.wait_for(in_cell, statuses=('BUILD',))
    # ...and a boot cast to a super-conductor that never arrives.
    monkeypatch.setattr(conductor_rpcapi.SuperConductorAPI,
                        'schedule_and_build_instances',
                        lambda self, *args, **kwargs: None)
    never_scheduled = api.boot(name='never-scheduled')

    first = api.wait_for(in_cell, timeout=60)
    assert first['status'] == 'ERROR'
    assert 'Exhausted all hosts' in first['fault']['message']
    # The first cast, then lost_build_timeout / build_redrive_interval.
    assert lost == ['cell1-compute1'] * 11
    assert system.cell_of(in_cell) == 'cell1'
    second = api.wait_for(never_scheduled, timeout=40)
    assert second['status'] == 'ERROR'
    assert 'no conductor scheduled it' in second['fault']['message']
    assert system.cell_of(never_scheduled) == 'cell0'
    # The sweep records ERROR first, then releases the claim.
    assert system.allocations_after_settling({}) == {}


def test_a_build_whose_cast_was_lost_is_cast_again_and_goes_active(
        start_system, monkeypatch):
    from scheduler_split import conf
    conf.CONF.set_override('lost_build_check_interval', 1,
                           group='conductor')
    conf.CONF.set_override('build_redrive_interval', 1, group='conductor')
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    real = compute_rpcapi.ComputeAPI.build_and_run_instance
    lost = []

    def first_cast_lost(self, ctx, host, node, instance, *args):
        if instance.uuid not in lost:
            lost.append(instance.uuid)
            return None
        return real(self, ctx, host, node, instance, *args)

    monkeypatch.setattr(compute_rpcapi.ComputeAPI, 'build_and_run_instance',
                        first_cast_lost)
    server_id = api.boot(name='cast-again')

    server = api.wait_for(server_id, timeout=30)
    assert server['status'] == 'ACTIVE'
    assert lost == [server_id]
    host = server['OS-EXT-SRV-ATTR:host']
    # Cast again to the host it was claimed on, and built there.
    events = []
    for action in api.get('/v2.1/servers/%s/os-instance-actions'
                          % server_id).json()['instanceActions']:
        events += api.get('/v2.1/servers/%s/os-instance-actions/%s' % (
            server_id, action['request_id'])).json()['instanceAction'][
            'events']
    assert sorted((e['event'], e['host']) for e in events) == [
        ('compute_build_and_run_instance', host),
        ('conductor_recover_build', host),
        ('conductor_schedule_and_build_instances', host)]
    assert list(system.allocations()) == [server_id]
    assert list(system.allocations()[server_id]) == [host]


def test_heal_releases_allocations_that_no_instance_needs(start_system):
    import uuid as uuidlib

    from scheduler_split.scheduler import claims

    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    keep = api.wait_for(api.boot(name='keep'))['id']
    gone = api.wait_for(api.boot(name='gone'))['id']
    assert api.delete('/v2.1/servers/%s' % gone).status_code == 204
    api.wait_gone(gone)
    assert set(system.allocations()) == {keep}

    # Allocations whose releases never reached the scheduler database.
    url = system.scheduler_db()
    provider = claims.allocations_of(url, keep).popitem()[0]
    ghost = str(uuidlib.uuid4())
    tiny = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
    claims.claim(url, provider, gone, tiny)
    claims.claim(url, provider, ghost, tiny)
    assert set(system.allocations()) == {keep, gone, ghost}

    # The super-conductor's reconciliation, over the bus to the
    # scheduler and back.
    sweeps = super_periodic.SuperConductorPeriodics()
    CONF.set_override('heal_allocations_grace', 0, group='conductor')
    assert sorted(sweeps.heal_allocations()) == sorted([gone, ghost])
    assert set(system.allocations()) == {keep}
    assert sweeps.heal_allocations() == []


def test_a_host_whose_builds_keep_failing_is_avoided_until_one_succeeds(
        start_system, fake_driver):
    from scheduler_split import conf
    fake_driver('fail_hosts', ['cell1-compute1'])
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    api.boot(name='first', count=2)
    servers = [s['id'] for s in api.servers()]
    hosts = [api.wait_for(s)['OS-EXT-SRV-ATTR:host'] for s in servers]
    # One build failed on compute1 and went to its alternate.
    assert hosts == ['cell1-compute2', 'cell1-compute2']

    # The host works again, but its failures in a row weigh it down more
    # than all its free memory weighs it up.
    fake_driver('fail_hosts', [])
    later = [api.boot(name='later%d' % i) for i in range(3)]
    assert [api.wait_for(s)['OS-EXT-SRV-ATTR:host'] for s in later] == [
        'cell1-compute2'] * 3

    # Without the weigher, free memory wins again; a success there
    # resets its count.
    conf.CONF.set_override('build_failure_weight_multiplier', 0.0,
                           group='filter_scheduler')
    try:
        spread = api.boot(name='spread')
        assert api.wait_for(spread)['OS-EXT-SRV-ATTR:host'] == \
            'cell1-compute1'
    finally:
        conf.CONF.clear_override('build_failure_weight_multiplier',
                                 group='filter_scheduler')
    again = api.boot(name='again')
    assert api.wait_for(again)['OS-EXT-SRV-ATTR:host'] == 'cell1-compute1'
