import pytest

from tests.integration import deployment as deployment_mod


@pytest.fixture(scope='module')
def deployment(tmp_path_factory):
    """Two cells of separate processes over RabbitMQ and PostgreSQL."""
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('deployment'))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()
