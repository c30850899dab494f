"""One client per kind of conductor: each ``[upgrade_levels] conductor =
auto`` reads the service records of the conductors it talks to."""

import pytest

from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import memory_bus
from scheduler_split import objects
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc


@pytest.fixture
def transport(override):
    override('conductor', 'auto', group='upgrade_levels')
    memory_bus.reset()
    rpc.reset_auto_caps()
    yield rpc.get_transport('kombu+memory:////conductor-clients')
    rpc.cleanup()
    rpc.reset_auto_caps()
    memory_bus.reset()


def _conductor_of_the_previous_release(cloud, cell):
    objects.Service.heartbeat(cloud.in_cell(cell), 'old-conductor',
                              service_obj.CONDUCTOR, 'conductor', version=0)


def test_the_super_client_reads_the_super_conductors_in_cell0(
        cloud, transport):
    _conductor_of_the_previous_release(cloud, cloud.cell0)
    # A cell's conductors are not the super-conductors.
    objects.Service.heartbeat(cloud.in_cell(), 'cell-conductor',
                              service_obj.CONDUCTOR, 'conductor')

    api = conductor_rpcapi.SuperConductorAPI(transport)

    assert api.client.cap.resolve() == '1.0'


def test_a_cell_client_given_its_cells_database_reads_its_conductors(
        cloud, transport):
    _conductor_of_the_previous_release(cloud, cloud.cell1)

    api = conductor_rpcapi.CellConductorAPI(
        transport, cell_db=cloud.cell1.database_connection)

    assert api.client.cap.resolve() == '1.0'


def test_both_clients_speak_one_version_of_one_topic():
    assert conductor_rpcapi.SuperConductorAPI.VERSION == \
        conductor_rpcapi.CellConductorAPI.VERSION == '1.12'
    assert conductor_rpcapi.TOPIC == 'conductor'
