"""Rolling upgrades: [upgrade_levels] caps, object backports that follow
them, and ``auto`` read from service versions."""

import datetime
import threading

import oslo_messaging as messaging
from oslo_versionedobjects import base as ovo_base
import pytest

from scheduler_split.compute import rpcapi as compute_rpcapi
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split.conductor.tasks import build as build_task
from scheduler_split import context
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception
from scheduler_split import memory_bus
from scheduler_split import objects
from scheduler_split.objects import service as service_obj
from scheduler_split import rpc
from scheduler_split.scheduler import process as scheduler_process
from scheduler_split.scheduler import rpcapi as scheduler_rpcapi
from tests.unit import helpers

CELL_UUID = '0f5b3a3e-7a1d-4d2b-9a0c-aaaaaaaaaaaa'
NODE_UUID = '11111111-2222-4333-8444-000000000000'
INSTANCE_UUID = '3e5d1c2b-8a7f-4b6e-9d0c-1a2b3c4d5e6f'
APIS = (compute_rpcapi, conductor_rpcapi, scheduler_rpcapi)
API_CLASSES = {compute_rpcapi: compute_rpcapi.ComputeAPI,
               conductor_rpcapi: conductor_rpcapi.SuperConductorAPI,
               scheduler_rpcapi: scheduler_rpcapi.SchedulerAPI}


def _selection(zone='az1'):
    return objects.Selection.for_claim(
        {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 1},
        compute_node_uuid=NODE_UUID, service_host='host1', nodename='node1',
        cell_uuid=CELL_UUID, limits=None, availability_zone=zone)


def _data(primitive):
    return primitive['scheduler_split_object.data']


def _version(primitive):
    return primitive['scheduler_split_object.version']


@pytest.fixture(autouse=True)
def fresh_caps():
    rpc.reset_auto_caps()
    yield
    rpc.reset_auto_caps()


@pytest.fixture
def cell_db(tmp_path):
    url = 'sqlite:///' + str(tmp_path / 'cell.sqlite')
    helpers.database_at_head('cell', tmp_path / 'cell.sqlite')
    yield url
    engines.dispose_all()


def _record(url, host, binary, version, seconds_ago=0):
    """A service record as a service of ``version`` (None: the release
    before service versions) leaves it."""
    seen = helpers.naive_utcnow() - datetime.timedelta(seconds=seconds_ago)
    with engines.writer(url) as session:
        session.add(cell_models.Service(host=host, binary=binary, topic='t',
                                        report_count=1, last_seen_up=seen,
                                        version=version))


# --- objects -----------------------------------------------------------------

def test_selection_backported_to_1_0_drops_the_zone():
    primitive = _selection().obj_to_primitive(target_version='1.0')

    assert _version(primitive) == '1.0'
    assert 'availability_zone' not in _data(primitive)
    back = objects.Selection.obj_from_primitive(primitive)
    assert back.get('availability_zone') is None
    assert back.service_host == 'host1'


def test_selection_1_1_keeps_the_zone():
    primitive = _selection().obj_to_primitive(target_version='1.1')

    assert _data(primitive)['availability_zone'] == 'az1'


def test_service_backported_to_1_0_drops_its_version():
    service = objects.Service(host='h', binary='b', topic='t', version=1)

    primitive = service.obj_to_primitive(target_version='1.0')

    assert 'version' not in _data(primitive)


# --- manifests: what each RPC version carries --------------------------------

@pytest.mark.parametrize('api', APIS, ids=lambda m: m.__name__)
def test_the_newest_rpc_version_carries_every_object_at_its_version(api):
    newest = api.OBJECT_VERSIONS[API_CLASSES[api].VERSION]

    assert newest == {name: getattr(objects, name).VERSION
                      for name in newest}


@pytest.mark.parametrize('api', APIS, ids=lambda m: m.__name__)
def test_every_manifest_names_every_nested_object(api):
    for version, manifest in api.OBJECT_VERSIONS.items():
        for name in manifest:
            nested = set(ovo_base.obj_tree_get_versions(name))
            assert nested <= set(manifest), (version, name)


def test_rpc_1_0_carried_selection_1_0_everywhere():
    for api in APIS:
        assert api.OBJECT_VERSIONS['1.0']['Selection'] == '1.0'


def test_a_serializer_with_a_manifest_backports_objects_in_lists():
    serializer = rpc.RequestContextSerializer(
        compute_rpcapi.OBJECT_VERSIONS['1.0'])
    ctx = context.get_admin_context()

    host_list = serializer.serialize_entity(ctx, [_selection(),
                                                  _selection('az2')])

    assert [_version(p) for p in host_list] == ['1.0', '1.0']
    assert not any('availability_zone' in _data(p) for p in host_list)


def test_a_serializer_with_a_manifest_backports_nested_objects():
    spec = helpers.make_spec()
    manifest = dict(scheduler_rpcapi.OBJECT_VERSIONS['1.1'],
                    RequestSpec='1.0')

    primitive = rpc.RequestContextSerializer(manifest).serialize_entity(
        context.get_admin_context(), spec)

    assert _version(primitive) == '1.0'
    assert _version(_data(primitive)['flavor']) == '1.0'


def test_an_object_received_at_an_older_version_is_relayed_at_it():
    # The super-conductor passes on alternates a scheduler pinned to 1.0
    # answered with, to computes that take 1.1.
    received = objects.Selection.obj_from_primitive(
        _selection().obj_to_primitive(target_version='1.0'))
    serializer = rpc.RequestContextSerializer(
        compute_rpcapi.OBJECT_VERSIONS['1.1'])

    [relayed] = serializer.serialize_entity(context.get_admin_context(),
                                            [received])

    assert _version(relayed) == '1.0'
    assert objects.Selection.obj_from_primitive(relayed).service_host == (
        'host1')


def test_a_manifest_without_a_nested_object_is_refused():
    serializer = rpc.RequestContextSerializer({'RequestSpec': '1.1'})

    with pytest.raises(ValueError, match='Flavor'):
        serializer.serialize_entity(context.get_admin_context(),
                                    helpers.make_spec())


def test_a_client_capped_at_1_0_sends_1_0_and_its_manifest():
    newest = compute_rpcapi.ComputeAPI.VERSION
    client = rpc.Client(None, 'compute', newest,
                        compute_rpcapi.OBJECT_VERSIONS,
                        rpc.VersionCap('compute_rpc', '1.0'))

    assert client._manifest('1.0') == compute_rpcapi.OBJECT_VERSIONS['1.0']
    assert client._manifest('1.1') == compute_rpcapi.OBJECT_VERSIONS['1.1']
    assert client._manifest(None) == compute_rpcapi.OBJECT_VERSIONS[newest]
    # A cap newer than this release knows sends its newest.
    assert client._manifest('1.7') == compute_rpcapi.OBJECT_VERSIONS[newest]
    with pytest.raises(ValueError):
        client._manifest('0.9')


def test_a_cap_at_or_above_the_newest_version_caps_nothing():
    for setting in ('1.1', '1.7', '2.0'):
        client = rpc.Client(None, 'compute', '1.1',
                            compute_rpcapi.OBJECT_VERSIONS,
                            rpc.VersionCap('compute_rpc', setting))
        client._client = lambda cap: FakeRPCClient(cap)

        cctxt, version = client.prepare('1.1', '1.0', server='h')

        assert version == '1.1'
        assert cctxt == (None, '1.1')

    client.cap = rpc.VersionCap('compute_rpc', '1.0')
    assert client.prepare('1.1', '1.0')[1] == '1.0'
    with pytest.raises(messaging.RPCVersionCapError):
        client.prepare('1.1')


class FakeRPCClient:
    """What Client.prepare hands back: (the cap, the version asked)."""

    def __init__(self, cap):
        self.cap = cap

    def prepare(self, version, **kwargs):
        return (self.cap, version)


class OldComputeEndpoint:
    """A compute of the previous release: RPC 1.0 only."""

    target = messaging.Target(version='1.0')

    def __init__(self):
        self.builds = []
        self.arrived = threading.Event()

    @messaging.expose
    def build_and_run_instance(self, ctx, instance, request_spec, host_list,
                               retry, node):
        self.builds.append(host_list)
        self.arrived.set()


@pytest.fixture
def old_compute():
    memory_bus.reset()
    transport = rpc.get_transport('kombu+memory:////upgrade-cell')
    endpoint = OldComputeEndpoint()
    server = rpc.get_server(transport, 'compute', [endpoint], 'host1')
    server.start()
    yield transport, endpoint
    server.stop()
    server.wait()
    rpc.cleanup()
    memory_bus.reset()


def test_a_compute_pinned_to_1_0_gets_builds_it_understands(
        old_compute, override, cell_db):
    transport, endpoint = old_compute
    override('compute', '1.0', group='upgrade_levels')
    instance = objects.Instance(uuid=INSTANCE_UUID, project_id='p',
                                vm_state='building',
                                flavor=helpers.make_flavor())

    compute_rpcapi.ComputeAPI(transport, cell_db).build_and_run_instance(
        context.get_admin_context(), 'host1', 'node1', instance,
        helpers.make_spec(), [_selection()],
        objects.SchedulerRetries(num_attempts=1, hosts=['host0']))

    assert endpoint.arrived.wait(10)
    [host_list] = endpoint.builds
    assert host_list[0].service_host == 'host1'
    assert not host_list[0].obj_attr_is_set('availability_zone')


# --- auto: from service records ----------------------------------------------

def _auto(override, cell_db):
    override('compute', 'auto', group='upgrade_levels')
    return compute_rpcapi.version_cap(cell_db)


def test_auto_is_1_0_while_a_compute_of_the_previous_release_runs(
        override, cell_db):
    _record(cell_db, 'new', service_obj.COMPUTE, 1)
    _record(cell_db, 'old', service_obj.COMPUTE, None)

    assert _auto(override, cell_db).resolve() == '1.0'


def test_auto_is_the_newest_once_every_running_compute_is_new(
        override, cell_db):
    _record(cell_db, 'new', service_obj.COMPUTE, 1)
    # Stopped long ago: it does not hold the cap down.
    _record(cell_db, 'old', service_obj.COMPUTE, None, seconds_ago=3600)
    # Other kinds of service do not count for the computes.
    _record(cell_db, 'conductor', service_obj.CONDUCTOR, None)

    assert _auto(override, cell_db).resolve() == '1.1'


def test_auto_without_running_computes_does_not_cap_nor_remember(
        override, cell_db):
    cap = _auto(override, cell_db)

    assert cap.resolve() is None
    _record(cell_db, 'old', service_obj.COMPUTE, None)
    assert cap.resolve() == '1.0'


def test_auto_is_kept_for_auto_cache_time(override, cell_db):
    _record(cell_db, 'old', service_obj.COMPUTE, None)
    cap = _auto(override, cell_db)
    assert cap.resolve() == '1.0'

    with engines.writer(cell_db) as session:
        session.query(cell_models.Service).update({'version': 1})
    assert cap.resolve() == '1.0'

    override('auto_cache_time', 0, group='upgrade_levels')
    rpc.reset_auto_caps()
    assert cap.resolve() == '1.1'


def test_auto_keeps_its_last_cap_while_the_records_cannot_be_read(
        override, cell_db, monkeypatch):
    # A process cut from its database (standing aside, say) still sends
    # once its cap expired, capped as it last was.
    _record(cell_db, 'old', service_obj.COMPUTE, None)
    override('auto_cache_time', 0, group='upgrade_levels')
    cap = _auto(override, cell_db)
    assert cap.resolve() == '1.0'

    def away():
        raise exception.DatabaseUnavailable(reason='cut off')

    monkeypatch.setattr(cap, 'minimum_service_version', away)
    assert cap.resolve() == '1.0'
    # Anything else is no outage: raised.
    monkeypatch.setattr(cap, 'minimum_service_version', lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cap.resolve()
    # With nothing resolved before, there is no cap to keep.
    rpc.reset_auto_caps()
    monkeypatch.setattr(cap, 'minimum_service_version', away)
    with pytest.raises(exception.DatabaseUnavailable):
        cap.resolve()


def test_a_heartbeat_records_this_releases_service_version(cell_db):
    ctx = context.targeted(context.get_admin_context(), cell_db)

    service = objects.Service.heartbeat(ctx, 'h', service_obj.COMPUTE,
                                        'compute')

    assert service.version == service_obj.SERVICE_VERSION
    assert objects.Service.get_minimum_version(
        ctx, service_obj.COMPUTE) == service_obj.SERVICE_VERSION


def test_every_service_version_names_every_rpc_api():
    history = service_obj.SERVICE_VERSION_HISTORY
    assert len(history) == service_obj.SERVICE_VERSION + 1
    newest = history[service_obj.SERVICE_VERSION]
    assert newest == {
        'compute_rpc': compute_rpcapi.ComputeAPI.VERSION,
        'conductor_rpc': conductor_rpcapi.SuperConductorAPI.VERSION,
        'scheduler_rpc': scheduler_rpcapi.SchedulerAPI.VERSION}


def test_schedulers_report_their_service_version_in_their_database(
        scheduler_db, override):
    override('host', 'scheduler-a')
    manager = scheduler_process.Scheduler(scheduler_db)
    ctx = context.get_admin_context()
    # Nothing recorded yet: the one answering is of this release.
    assert manager.get_minimum_service_version(ctx) == (
        service_obj.SERVICE_VERSION)

    manager.report_service()
    with engines.writer(scheduler_db) as session:
        session.add(scheduler_models.SchedulerService(
            host='scheduler-b', binary=service_obj.SCHEDULER,
            topic='scheduler', report_count=1,
            last_seen_up=helpers.naive_utcnow(), version=0))

    assert manager.get_minimum_service_version(ctx) == 0


def test_a_scheduler_record_of_a_release_before_uuids_gets_one_at_a_heartbeat(
        scheduler_db, override):
    override('host', 'scheduler-a')
    scheduler = scheduler_process.Scheduler(scheduler_db)
    ctx = context.get_admin_context()
    with engines.writer(scheduler_db) as session:
        session.add(scheduler_models.SchedulerService(
            host='scheduler-old', binary=service_obj.SCHEDULER,
            topic='scheduler', report_count=1,
            last_seen_up=helpers.naive_utcnow(), version=4))
    # Listing only reads.
    assert [r['uuid'] for r in scheduler.get_services(ctx)] == [None]

    scheduler.report_service()

    records = {r['host']: r for r in scheduler.get_services(ctx)}
    assert set(records) == {'scheduler-old', 'scheduler-a'}
    assert all(r['uuid'] for r in records.values())
    assert records['scheduler-old']['version'] == 4


def test_select_destinations_answers_a_1_0_call_with_selection_1_0(
        scheduler_db):
    manager = scheduler_process.Scheduler(scheduler_db)
    manager.update_resource_stats(None, CELL_UUID, 'host1', 'node1',
                                  helpers.host_stats())
    endpoint = manager.endpoint(CELL_UUID)
    ctx = context.get_admin_context()

    [[old]] = endpoint.select_destinations(
        ctx, helpers.make_spec(), [INSTANCE_UUID], True, 0)
    manager.release_resources(ctx, INSTANCE_UUID)
    [[new]] = endpoint.select_destinations(
        ctx, helpers.make_spec(), [INSTANCE_UUID], True, 0,
        object_versions=scheduler_rpcapi.OBJECT_VERSIONS['1.1'])

    assert _version(old) == '1.0'
    assert 'availability_zone' not in _data(old)
    assert _version(new) == '1.1'
    assert _data(new)['availability_zone'] == 'nova'


# --- the zone an instance gets -----------------------------------------------

def test_an_instance_without_a_requested_zone_takes_its_hosts():
    instance = objects.Instance(availability_zone=None)

    assert build_task.take_host_zone(
        instance, helpers.make_spec(), _selection('az1'))
    assert instance.availability_zone == 'az1'


def test_a_requested_zone_is_kept():
    instance = objects.Instance(availability_zone='az2')
    spec = helpers.make_spec()
    spec.availability_zone = 'az2'

    assert not build_task.take_host_zone(instance, spec,
                                         _selection('az1'))
    assert instance.availability_zone == 'az2'


def test_a_selection_of_the_previous_release_leaves_the_zone_alone():
    instance = objects.Instance(availability_zone=None)
    old = objects.Selection.obj_from_primitive(
        _selection().obj_to_primitive(target_version='1.0'))

    assert not build_task.take_host_zone(instance,
                                         helpers.make_spec(), old)
    assert instance.availability_zone is None


class OldSchedulerEndpoint:
    """A scheduler of the previous release: RPC 1.0, no service versions.
    """

    target = messaging.Target(version='1.0')

    @messaging.expose
    def release_resources(self, ctx, instance_uuid):
        return False


@pytest.fixture
def scheduler_bus():
    memory_bus.reset()
    servers = []

    def serve(endpoint):
        transport = rpc.get_transport('kombu+memory:////upgrade-api')
        server = rpc.get_server(transport, 'scheduler', [endpoint], 's1')
        server.start()
        servers.append(server)
        return scheduler_rpcapi.SchedulerAPI(transport)

    yield serve
    for server in servers:
        server.stop()
        server.wait()
    rpc.cleanup()
    memory_bus.reset()


def test_auto_asks_a_scheduler_which_version_the_schedulers_run(
        scheduler_bus, scheduler_db, override):
    override('scheduler', 'auto', group='upgrade_levels')
    manager = scheduler_process.Scheduler(scheduler_db)
    manager.report_service()

    api = scheduler_bus(manager.endpoint(None))

    assert api.get_minimum_service_version() == service_obj.SERVICE_VERSION
    assert api.client.cap.resolve() == \
        service_obj.SERVICE_VERSION_HISTORY[-1]['scheduler_rpc']


def test_auto_takes_a_scheduler_that_refuses_the_question_for_the_oldest(
        scheduler_bus, override):
    override('scheduler', 'auto', group='upgrade_levels')

    api = scheduler_bus(OldSchedulerEndpoint())

    assert api.get_minimum_service_version() == 0
    assert api.client.cap.resolve() == '1.0'
    # And what it understands still goes through.
    assert api.release_resources(context.get_admin_context(),
                                 INSTANCE_UUID) is False


def test_instance_backported_to_1_1_drops_its_access_addresses():
    instance = objects.Instance(uuid='f5d4d6a0-3c1e-4a52-9a57-2f6e9d1c8b11',
                                access_ip_v4='192.0.2.7',
                                access_ip_v6='2001:db8::7')

    primitive = instance.obj_to_primitive(target_version='1.1')

    assert 'access_ip_v4' not in _data(primitive)
    assert 'access_ip_v6' not in _data(primitive)
    assert _data(instance.obj_to_primitive())[
        'access_ip_v4'] == '192.0.2.7'


def test_a_client_capped_at_1_1_sends_instances_without_access_addresses():
    serializer = rpc.RequestContextSerializer(
        compute_rpcapi.OBJECT_VERSIONS['1.1'])
    instance = objects.Instance(uuid='f5d4d6a0-3c1e-4a52-9a57-2f6e9d1c8b11',
                                access_ip_v4='192.0.2.7')

    primitive = serializer.serialize_entity(context.get_admin_context(),
                                            instance)

    assert _version(primitive) == '1.1'
    assert 'access_ip_v4' not in _data(primitive)


# --- RequestSpec 1.2: the image's properties ---------------------------------

def _spec_with_image():
    spec = helpers.make_spec()
    spec.image_properties = {'architecture': 'aarch64',
                             'img_hv_type': 'fake'}
    return spec


def test_request_spec_backported_to_1_1_drops_the_image_properties():
    primitive = _spec_with_image().obj_to_primitive(target_version='1.1')

    assert _version(primitive) == '1.1'
    assert 'image_properties' not in _data(primitive)
    back = objects.RequestSpec.obj_from_primitive(primitive)
    assert back.image_properties == {}
    assert _data(_spec_with_image().obj_to_primitive())[
        'image_properties'] == {'architecture': 'aarch64',
                                'img_hv_type': 'fake'}


@pytest.mark.parametrize('api,old,new', [
    (scheduler_rpcapi, '1.3', '1.4'),
    (conductor_rpcapi, '1.5', '1.6'),
    (compute_rpcapi, '1.3', '1.4'),
], ids=lambda v: getattr(v, '__name__', v))
def test_a_client_capped_below_request_spec_1_2_sends_it_without_image(
        api, old, new):
    ctx = context.get_admin_context()

    capped = rpc.RequestContextSerializer(
        api.OBJECT_VERSIONS[old]).serialize_entity(ctx, _spec_with_image())
    newest = rpc.RequestContextSerializer(
        api.OBJECT_VERSIONS[new]).serialize_entity(ctx, _spec_with_image())

    assert _version(capped) == '1.1'
    assert 'image_properties' not in _data(capped)
    assert _version(newest) == '1.2'
    assert _data(newest)['image_properties']['architecture'] == 'aarch64'


class SchedulerEndpointOf13:
    """A scheduler of service version 7: RPC 1.3, RequestSpec 1.1."""

    target = messaging.Target(version='1.3')

    def __init__(self):
        self.specs = []

    @messaging.expose
    def select_destinations(self, ctx, spec_obj, instance_uuids,
                            return_alternates, num_alternates,
                            object_versions=None):
        self.specs.append(spec_obj)
        return [[]]


def test_a_scheduler_client_capped_at_1_3_calls_with_request_spec_1_1(
        override, fresh_caps):
    memory_bus.reset()
    transport = rpc.get_transport('kombu+memory:////upgrade-api')
    endpoint = SchedulerEndpointOf13()
    server = rpc.get_server(transport, 'scheduler', [endpoint], 'sched')
    server.start()
    override('scheduler', '1.3', group='upgrade_levels')
    try:
        assert scheduler_rpcapi.SchedulerAPI(transport).select_destinations(
            context.get_admin_context(), _spec_with_image(),
            [INSTANCE_UUID], True, 1) == [[]]
    finally:
        server.stop()
        server.wait()
        rpc.cleanup()
        memory_bus.reset()

    [received] = endpoint.specs
    assert received.VERSION == '1.1'
    assert not received.obj_attr_is_set('image_properties')
