"""Three scheduler processes racing boots for VGPUs (on GPUs below the
compute nodes) and dedicated CPUs (PCPU) on one database never hand a
unit out twice: on PostgreSQL and on MariaDB, the claims equal the live
servers, class by class."""

import collections
import concurrent.futures

import pytest

from tests.functional import fixtures
from tests.integration import conftest
from tests.integration import deployment as deployment_mod

pytestmark = pytest.mark.integration

VGPUS_PER_HOST = 4
PCPUS_PER_HOST = 6
# A pinned server takes two dedicated CPUs.
PINNED_VCPUS = 2
BOOTS = 200


@pytest.fixture(scope='module')
def devices(request, tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('devices'),
                                    schedulers=3,
                                    database=conftest.database(request))
    # The VGPUs are on two GPUs below each compute node, as a driver
    # reports them; the dedicated CPUs on the compute node itself.
    dep.add_config(dep.hosts, 'devices.conf', """\
        [fake_driver]
        resources = *=PCPU:%d
        providers = *=pgpu0|VGPU:%d;pgpu1|VGPU:%d
        """ % (PCPUS_PER_HOST, VGPUS_PER_HOST // 2, VGPUS_PER_HOST // 2))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


def _flavor(api, name, extra_specs, vcpus):
    resp = api.post('/v2.1/flavors', {'flavor': {
        'name': name, 'vcpus': vcpus, 'ram': 64, 'disk': 1}})
    assert resp.status_code == 200, resp.text
    flavor_id = resp.json()['flavor']['id']
    resp = api.post('/v2.1/flavors/%s/os-extra_specs' % flavor_id,
                    {'extra_specs': extra_specs})
    assert resp.status_code == 200, resp.text
    return flavor_id


@pytest.mark.parametrize('devices', [conftest.POSTGRESQL, conftest.MARIADB],
                         indirect=True)
def test_racing_boots_never_hand_a_vgpu_or_a_pcpu_out_twice(devices):
    assert sum(name.startswith('scheduler') for name in devices.procs) == 3
    boots = BOOTS
    api = fixtures.Api(devices.base_url)
    kinds = {
        'vgpu': (_flavor(api, 'vgpu', {'resources:VGPU': '1'}, 1),
                 {'VGPU': 1}),
        'pinned': (_flavor(api, 'pinned', {'hw:cpu_policy': 'dedicated'},
                           PINNED_VCPUS), {'PCPU': PINNED_VCPUS}),
    }
    names = ['vgpu' if i % 2 else 'pinned' for i in range(boots)]
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        server_ids = list(pool.map(
            lambda i: api.boot(name='%s-%d' % (names[i], i),
                               flavor=kinds[names[i]][0]), range(boots)))
    servers = {sid: api.wait_for(sid, timeout=300) for sid in server_ids}

    active = {sid for sid, s in servers.items() if s['status'] == 'ACTIVE'}
    for sid, server in servers.items():
        if sid not in active:
            assert server['status'] == 'ERROR', server
            assert server['fault']['message'].startswith(
                'No valid host was found.'), server['fault']
    hosts = len(devices.hosts)
    # The devices are the only limit: every unit ends handed out.
    by_kind = collections.Counter(
        servers[sid]['name'].split('-')[0] for sid in active)
    assert by_kind == {'vgpu': VGPUS_PER_HOST * hosts,
                       'pinned': PCPUS_PER_HOST // PINNED_VCPUS * hosts}

    # No provider is over its capacity of any class...
    used = devices.usage()
    for host, rc, amount, capacity in used:
        assert amount <= capacity, (host, rc, amount, capacity)
    # ...and the claims are the live servers', class by class.
    claimed = collections.Counter()
    for host, rc, amount, _ in used:
        claimed[rc] += amount
    expected = collections.Counter()
    for sid in active:
        for rc, amount in kinds[servers[sid]['name'].split('-')[0]][1].items():
            expected[rc] += amount
    assert {rc: claimed[rc] for rc in ('VGPU', 'PCPU')} == dict(expected)
    assert {consumer for consumer, _ in devices.allocations()} == active
