"""One cloud of hosts apart for the whole run (:mod:`.cloud`): bringing
its clusters up takes the better part of two minutes, so the modules
share it, each setting the Galera mode and the extra config its tests
need (:meth:`.cloud.Cloud.set_mode`, :meth:`.cloud.Cloud.configure`)."""

import pytest

from tests.topology import cloud as cloud_mod

# Room for ROOM_PER_HOST m1.tiny (512 MiB each, 512 MiB reserved) on
# every compute host.
ROOM_PER_HOST = 30


@pytest.fixture(scope='session')
def shared_cloud(tmp_path_factory):
    the_cloud = cloud_mod.Cloud(
        tmp_path_factory.mktemp('cloud'),
        host_memory_mb=512 * (ROOM_PER_HOST + 1), prefix='sstest',
        subnet='10.231.200.0/24')
    try:
        yield the_cloud.bring_up()
    finally:
        the_cloud.teardown()
