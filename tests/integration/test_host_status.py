"""An operator disables and enables a compute while two scheduler
processes, each with host states cached for an hour, share the work: no
new server lands on the disabled host, whichever scheduler picks it."""

import concurrent.futures

import pytest

from tests.functional import fixtures
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

HOST = 'cell1-compute2'


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('host-status'),
                                    schedulers=2)
    try:
        dep.setup()
        dep.add_config(['scheduler', 'scheduler-2'], 'cached-hosts.conf',
                       """\
            [filter_scheduler]
            host_state_refresh_interval = 3600
            """)
        yield dep.start_and_map()
    finally:
        dep.teardown()


def _boot_many(api, count, prefix):
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        ids = list(pool.map(lambda i: api.boot(name='%s-%d' % (prefix, i)),
                            range(count)))
    return [api.wait_for(sid, timeout=120) for sid in ids]


def test_a_disabled_host_gets_nothing_from_either_scheduler(deployment):
    api = fixtures.Api(deployment.base_url)
    resp = api.get('/v2.1/os-services',
                   params={'host': HOST, 'binary': 'nova-compute'})
    [service] = resp.json()['services']
    resp = api.put('/v2.1/os-services/%s' % service['id'],
                   {'status': 'disabled', 'disabled_reason': 'maintenance'})
    assert resp.status_code == 200, resp.text

    servers = _boot_many(api, 16, 'while-disabled')
    assert {s['status'] for s in servers} == {'ACTIVE'}
    hosts = {s['OS-EXT-SRV-ATTR:host'] for s in servers}
    assert HOST not in hosts and len(hosts) == 3
    resp = api.get('/v2.1/os-hypervisors', params={
        'hypervisor_hostname_pattern': HOST})
    assert [h['status'] for h in resp.json()['hypervisors']] == [
        'disabled']

    resp = api.put('/v2.1/os-services/%s' % service['id'],
                   {'status': 'enabled'})
    assert resp.status_code == 200, resp.text
    # The emptiest host is preferred: it takes new servers again.
    servers = _boot_many(api, 8, 'after-enable')
    assert HOST in {s['OS-EXT-SRV-ATTR:host'] for s in servers}
