import pytest

from tests.integration import deployment as deployment_mod


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    """Two cells of separate processes over RabbitMQ and PostgreSQL."""
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('deployment'))
    try:
        dep.setup()
        dep.start()
        dep.wait_for_api()
        dep.wait_for_hosts(dep.hosts)
        dep.manage('cell_v2', 'discover_hosts')
        yield dep
    finally:
        dep.teardown()
