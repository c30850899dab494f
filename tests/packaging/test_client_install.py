"""``pip install 'scheduler-split[client]'``, as the docs have a user
install it beside the all-in-one: the unmodified ``openstack`` CLI of that
venv, with its Placement commands, against the all-in-one's clouds.yaml."""

import json
import subprocess

import pytest

from scheduler_split.cmd import all_in_one
from scheduler_split import conf
from tests.functional import fixtures
from tests.packaging import installs

pytestmark = pytest.mark.packaging


@pytest.fixture(scope='module')
def venv(wheel, tmp_path_factory):
    return installs.UserVenv.create(
        tmp_path_factory.mktemp('client-venv'), '%s[client]' % wheel)


@pytest.fixture
def system(tmp_path):
    system = fixtures.System(tmp_path / 'state', cells=1,
                             hosts_per_cell=2).start()
    yield system
    system.stop()
    # As the functional tests leave it: no override of the all-in-one's
    # (its bus, its databases) and no parsed command line stay behind for
    # the tests that run later in this process.
    conf.CONF.reset()


def test_the_client_extra_lists_servers_and_resource_providers(
        venv, system, tmp_path):
    clouds = all_in_one.write_clouds_yaml(str(tmp_path), system.base_url)
    env = dict(venv.env(), OS_CLIENT_CONFIG_FILE=clouds,
               OS_CLOUD='scheduler-split')
    server_id = system.api.wait_for(system.api.boot(name='from-client'))[
        'id']

    def cli(*args):
        # The CLI and its plugins as the venv installed them, run from
        # outside any source tree.
        result = subprocess.run(
            [venv.executable('openstack'), *args, '-f', 'json'],
            env=env, cwd=venv.path, capture_output=True, text=True,
            timeout=180)
        assert result.returncode == 0, '%s: rc %d\n%s%s' % (
            ' '.join(args), result.returncode, result.stdout,
            result.stderr)
        return json.loads(result.stdout)

    assert [s['ID'] for s in cli('server', 'list')] == [server_id]
    # osc-placement: the resource provider commands.
    providers = cli('resource', 'provider', 'list')
    assert sorted(p['name'] for p in providers) == [
        'cell1-compute1', 'cell1-compute2']
    host = system.api.server(server_id)['OS-EXT-SRV-ATTR:host']
    [provider] = [p for p in providers if p['name'] == host]
    usages = {u['resource_class']: u['usage'] for u in cli(
        'resource', 'provider', 'usage', 'show', provider['uuid'])}
    assert usages == {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1}
