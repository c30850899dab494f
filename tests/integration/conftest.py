import pytest

from tests.integration import deployment as deployment_mod

# The database servers a test runs on, for
# ``@pytest.mark.parametrize(<fixture>, [...], indirect=True)`` on a
# fixture that passes ``database(request)`` to its Deployment. MariaDB
# runs carry the marker ``mariadb`` (``-m 'not mariadb'`` leaves them
# out).
POSTGRESQL = pytest.param('postgresql', id='postgresql')
MARIADB = pytest.param('mariadb', id='mariadb', marks=pytest.mark.mariadb)


def database(request):
    """The database server a deployment fixture is asked for:
    PostgreSQL unless the test is parametrised with another."""
    return getattr(request, 'param', 'postgresql')


@pytest.fixture(scope='module')
def deployment(request, tmp_path_factory):
    """Two cells of separate processes over RabbitMQ and PostgreSQL (or
    the database server the test is parametrised with)."""
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('deployment'),
                                    database=database(request))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()
