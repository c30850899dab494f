"""``pip install 'scheduler-split[deploy]'``, as an operator installs it:
every service its own process over RabbitMQ and PostgreSQL, run from that
venv's console scripts, and the API under that venv's gunicorn."""

import pytest

from tests.integration import deployment as deployment_mod
from tests.packaging import compute_api
from tests.packaging import installs

pytestmark = [pytest.mark.packaging, pytest.mark.integration]


@pytest.fixture(scope='module')
def venv(wheel, tmp_path_factory):
    return installs.UserVenv.create(
        tmp_path_factory.mktemp('deploy-venv'), '%s[deploy]' % wheel)


def test_deployment_from_the_deploy_extra_boots_a_server(venv, tmp_path):
    dep = deployment_mod.Deployment(tmp_path, hosts_per_cell=1,
                                    bin_dir=venv.bin_dir)
    with pytest.MonkeyPatch.context() as patch:
        # gunicorn imports the application from its working directory
        # first: outside the source tree, only the installed package
        # answers. The services get this process's environment.
        patch.chdir(tmp_path)
        for name in installs.NOT_INHERITED:
            patch.delenv(name, raising=False)
        try:
            dep.bring_up()
            version = compute_api.versions(dep.base_url)
            server = compute_api.boot_to_active(dep.base_url, 'deployed')
        finally:
            codes = dep.stop_in_order()
            dep.teardown()
    assert version['id'] == 'v2.1', version
    assert server['status'] == 'ACTIVE', server
    assert set(codes.values()) == {0}, codes
