"""The ``deploy`` extra installed as an operator installs it (the
production install guide: from a clone, here its wheel): every service
its own process over RabbitMQ and PostgreSQL, run from that venv's
console scripts, the API under that venv's gunicorn, driven by the
unmodified openstack CLI without Keystone."""

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.integration import deployment as deployment_mod
from tests.packaging import compute_api
from tests.packaging import installs

pytestmark = [pytest.mark.packaging, pytest.mark.integration]

PRODUCTION = os.path.join(installs.ROOT, 'doc', 'source', 'install',
                          'production.md')
BUILTIN_IMAGES = {'cirros', 'ubuntu-24.04', 'fedora-41'}


@pytest.fixture(scope='module')
def venv(wheel, tmp_path_factory):
    return installs.UserVenv.create(
        tmp_path_factory.mktemp('deploy-venv'), '%s[deploy]' % wheel)


@pytest.fixture(scope='module')
def deployment(venv, tmp_path_factory):
    """The multi-process deployment, run from ``venv``, as the tests of
    this module share it; the last one stops it."""
    base = tmp_path_factory.mktemp('deployment')
    # Two API processes: what one records, the other serves.
    dep = deployment_mod.Deployment(base, hosts_per_cell=1, extra_apis=1,
                                    bin_dir=venv.bin_dir)
    try:
        with pytest.MonkeyPatch.context() as patch:
            # gunicorn imports the application from its working directory
            # first: outside the source tree, only the installed package
            # answers. The services get this process's environment.
            patch.chdir(base)
            for name in installs.NOT_INHERITED:
                patch.delenv(name, raising=False)
            dep.bring_up()
        yield dep
    finally:
        dep.teardown()


def _documented_clouds_yaml(base_url):
    """The clouds.yaml the production install guide gives operators for
    a deployment without Keystone, pointed at ``base_url``."""
    with open(PRODUCTION) as f:
        section = f.read()
    found = re.search(r'```yaml\n(\s*clouds:.*?\n)\s*```', section, re.S)
    assert found, 'the deployment section documents no clouds.yaml'
    return textwrap.dedent(found.group(1)).replace('http://API_HOST:8774',
                                                   base_url)


def _openstack_cli(tmp_path, base_url):
    """``cli(*args)``: the unmodified openstack CLI (the client extra's)
    run as a user runs it, with the documented clouds.yaml; the JSON it
    prints."""
    executable = shutil.which('openstack',
                              path=os.path.dirname(sys.executable))
    if executable is None:
        pytest.skip('python-openstackclient is not installed')
    clouds = tmp_path / ('clouds-%s.yaml' % base_url.rsplit(':', 1)[1])
    clouds.write_text(_documented_clouds_yaml(base_url))
    env = dict(installs.user_env(), OS_CLIENT_CONFIG_FILE=str(clouds),
               OS_CLOUD='scheduler-split')

    def cli(*args):
        result = subprocess.run([executable, *args], env=env, cwd=tmp_path,
                                capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, '%s: rc %d\n%s%s' % (
            ' '.join(args), result.returncode, result.stdout,
            result.stderr)
        return json.loads(result.stdout) if result.stdout.strip() else None
    return cli


def test_deployment_from_the_deploy_extra_boots_a_server(deployment):
    version = compute_api.versions(deployment.base_url)
    server = compute_api.boot_to_active(deployment.base_url, 'deployed')
    assert version['id'] == 'v2.1', version
    assert server['status'] == 'ACTIVE', server


def test_openstack_cli_without_keystone_boots_lists_shows_and_deletes(
        deployment, tmp_path):
    cli = _openstack_cli(tmp_path, deployment.base_url)

    images = cli('image', 'list', '-f', 'json')
    assert BUILTIN_IMAGES <= {i['Name'] for i in images}, images

    server = cli('server', 'create', '--image', 'cirros', '--flavor',
                 'm1.tiny', '--no-network', '--wait', '-f', 'json', 'cli-vm')
    assert server['status'] == 'ACTIVE', server
    listed = cli('server', 'list', '-f', 'json')
    assert [(s['ID'], s['Status']) for s in listed
            if s['Name'] == 'cli-vm'] == [(server['id'], 'ACTIVE')], listed
    shown = cli('server', 'show', '-f', 'json', 'cli-vm')
    assert shown['id'] == server['id'], shown
    assert shown['image'].startswith('cirros'), shown

    cli('server', 'delete', '--wait', 'cli-vm')
    assert 'cli-vm' not in [s['Name'] for s in cli('server', 'list', '-f',
                                                   'json')]


def test_every_api_process_serves_the_images_users_make(deployment,
                                                        tmp_path):
    first, second = (_openstack_cli(tmp_path, url)
                     for url in deployment.api_urls)
    image = first('image', 'create', '--disk-format', 'qcow2',
                  '--container-format', 'bare', '-f', 'json', 'cli-image')
    assert [i['ID'] for i in second('image', 'list', '-f', 'json')
            if i['Name'] == 'cli-image'] == [image['id']]
    second('image', 'delete', 'cli-image')
    assert 'cli-image' not in [i['Name'] for i in first('image', 'list',
                                                        '-f', 'json')]


def test_deployment_stops_cleanly(deployment):
    codes = deployment.stop_in_order()
    assert set(codes.values()) == {0}, codes
