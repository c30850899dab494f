"""Versioned objects: serialization, defaults, Flavor sizes, fingerprints."""

import datetime

from oslo_serialization import jsonutils
from oslo_versionedobjects import base as ovo_base
import pytest

from scheduler_split import context
from scheduler_split import objects
from scheduler_split.objects import base
from tests.unit import helpers

# Every registered object, the notification payloads included, whatever
# ran before this module.
objects.register_all()

INSTANCE_UUID = '3e5d1c2b-8a7f-4b6e-9d0c-1a2b3c4d5e6f'
CELL_UUID = '0f5b3a3e-7a1d-4d2b-9a0c-aaaaaaaaaaaa'
NODE_UUIDS = ['11111111-2222-4333-8444-%012d' % i for i in range(4)]

# Fingerprints of every registered object. A change of an object's fields
# (or remotable methods) changes its fingerprint: bump the object's VERSION
# and update the line here in the same change.
EXPECTED_FINGERPRINTS = {
    'InstanceCreatePayload': '1.0-39abb3bded1f589e0df854928494b59b',
    'SelectDestinationsPayload': '1.0-310ae6b1adecb0da58c2da4bba84ff49',
    'BuildRequest': '1.0-36b7017fd790efc21e6492097b8fdd3d',
    'ComputeTaskPayload': '1.0-4a17a046ad8702aa8fd53ecbeb13f038',
    'CellMapping': '1.0-4be932d51d6a4227b18f3a02ed872bd1',
    'Flavor': '1.0-a6ae59e8f275ab1aef73df74fd2d7437',
    'HostMapping': '1.0-9297466faf35f923d342b1558062fa3f',
    'Instance': '1.5-5bb5e7551e04f74461035457bfc5bed0',
    'InstanceActionPayload': '1.0-f48a449a3fea6d12d346713988039a46',
    'InstanceGroup': '1.0-9c6a2990888ccc706eb25461a01e166b',
    'InstanceFault': '1.0-8bb771c7db1113ce1ccf587760b24f29',
    'InstanceMapping': '1.0-b322f2a6866014af4084cd6b618bb348',
    'KeyPair': '1.0-1c0aacd3e62dde12ad55b095a8588413',
    'Migration': '1.0-8926f60611b62677b0103f93399d6d7e',
    'RequestSpec': '1.3-77b06eea4fe2c053d5b6e1fb6b0ebcf4',
    'SchedulerRetries': '1.0-7ac345807a200669b26324c34cdac6a1',
    'Selection': '1.1-bbc22a210ed895f4cfefa19745eab8d2',
    'Service': '1.2-0bd2a4b1c81091a7dfe7d27368d5dfd5',
}


def _round_trip(entity):
    """Through the serializer and JSON, as over the bus."""
    serializer = base.ObjectSerializer()
    ctx = context.get_admin_context()
    primitive = serializer.serialize_entity(ctx, entity)
    wire = jsonutils.loads(jsonutils.dumps(primitive))
    return serializer.deserialize_entity(ctx, wire)


def _comparable(value):
    """A primitive with its ``changes`` lists (built from sets) sorted."""
    if isinstance(value, dict):
        return {k: sorted(v) if k.endswith('.changes') else _comparable(v)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _same(first, second):
    return (_comparable(first.obj_to_primitive()) ==
            _comparable(second.obj_to_primitive()))


def _selection(index, claimed=True):
    return objects.Selection(
        compute_node_uuid=NODE_UUIDS[index], service_host='host%d' % index,
        nodename='node%d' % index, cell_uuid=CELL_UUID, limits=None,
        allocation_request=jsonutils.dumps(
            {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}) if claimed
        else None,
        allocation_request_version='1.0')


def _instance():
    created = datetime.datetime(2024, 5, 6, 7, 8, 9,
                                tzinfo=datetime.timezone.utc)
    return objects.Instance(
        uuid=INSTANCE_UUID, display_name='vm', hostname='vm',
        project_id='project', user_id='user', host=None, node=None,
        vm_state='building', task_state='scheduling', power_state=0,
        flavor=helpers.make_flavor(vcpus=2, memory_mb=2048, root_gb=20,
                                   swap=512),
        image_ref='image', availability_zone='az1', key_name=None,
        metadata={'role': 'db'}, reservation_id='r-1', launch_index=0,
        launched_at=None, terminated_at=None, created_at=created,
        updated_at=None, deleted_at=None, deleted=False, fault=None)


# --- round trips ------------------------------------------------------------

def test_request_spec_round_trips_through_the_serializer():
    spec = objects.RequestSpec(
        instance_uuid=INSTANCE_UUID, project_id='project', user_id='user',
        flavor=helpers.make_flavor(vcpus=2, memory_mb=1024, root_gb=5,
                                   ephemeral_gb=1, swap=1),
        image_ref='image', num_instances=3, availability_zone='az1',
        scheduler_hints={'group': ['g1']}, ignore_hosts=['bad'],
        force_hosts=None, force_nodes=None,
        retry=objects.SchedulerRetries(num_attempts=2, hosts=['h1']))

    copy = _round_trip(spec)

    assert isinstance(copy, objects.RequestSpec)
    assert _same(copy, spec)
    assert isinstance(copy.flavor, objects.Flavor)
    assert copy.flavor.memory_mb == 1024
    assert copy.retry.hosts == ['h1']
    assert copy.scheduler_hints == {'group': ['g1']}
    assert copy.resources == {'VCPU': 2, 'MEMORY_MB': 1024, 'DISK_GB': 7}


def test_lists_of_lists_of_selections_round_trip():
    host_lists = [[_selection(0), _selection(1, claimed=False)],
                  [_selection(2), _selection(3, claimed=False)]]

    copy = _round_trip(host_lists)

    assert isinstance(copy, list) and len(copy) == 2
    for original, restored in zip(host_lists, copy):
        assert isinstance(restored, list)
        assert [type(s) for s in restored] == [objects.Selection] * 2
        assert all(_same(r, o) for r, o in zip(restored, original))
    assert copy[1][0].compute_node_uuid == NODE_UUIDS[2]
    assert copy[0][0].resources == {'VCPU': 1, 'MEMORY_MB': 512,
                                    'DISK_GB': 10}
    assert copy[0][1].resources == {}


def test_instance_round_trips_with_nested_flavor_and_datetimes():
    instance = _instance()

    copy = _round_trip(instance)

    assert isinstance(copy, objects.Instance)
    assert _same(copy, instance)
    assert copy.created_at == instance.created_at
    assert copy.created_at.tzinfo is not None
    assert copy.flavor.disk_gb == 21
    assert copy.metadata == {'role': 'db'}
    assert copy.fault is None


def test_build_request_round_trips_with_its_instance():
    build_request = objects.BuildRequest(
        instance_uuid=INSTANCE_UUID, project_id='project',
        instance=_instance(), created_at=None)

    copy = _round_trip(build_request)

    assert isinstance(copy, objects.BuildRequest)
    assert isinstance(copy.instance, objects.Instance)
    assert _same(copy, build_request)
    assert copy.instance.flavor.name == 'small'


def test_flavor_json_round_trip_keeps_extra_specs():
    flavor = helpers.make_flavor()
    flavor.extra_specs = {'hw:cpu_policy': 'dedicated'}
    copy = objects.Flavor.from_json(flavor.to_json())
    assert copy.extra_specs == {'hw:cpu_policy': 'dedicated'}
    assert _same(copy, flavor)


# --- defaults ---------------------------------------------------------------

def test_unset_defaulted_fields_read_as_their_defaults():
    spec = helpers.make_spec()
    assert spec.num_instances == 1
    assert spec.availability_zone is None
    assert spec.scheduler_hints == {}
    assert spec.ignore_hosts is None
    assert spec.force_hosts is None
    assert spec.retry is None
    flavor = helpers.make_flavor()
    del flavor.ephemeral_gb
    assert flavor.ephemeral_gb == 0
    assert flavor.rxtx_factor == 1.0
    assert flavor.is_public is True


def test_unset_defaulted_fields_stay_defaults_after_a_round_trip():
    spec = helpers.make_spec()
    copy = _round_trip(spec)
    assert not copy.obj_attr_is_set('num_instances')
    assert copy.num_instances == 1
    assert copy.scheduler_hints == {}
    assert copy.retry is None


def test_mutable_defaults_are_not_shared_between_objects():
    first = helpers.make_spec()
    first.scheduler_hints['group'] = ['g1']
    second = helpers.make_spec()
    assert second.scheduler_hints == {}


def test_unset_field_without_default_raises():
    spec = objects.RequestSpec(instance_uuid=INSTANCE_UUID)
    with pytest.raises(NotImplementedError):
        spec.project_id


def test_get_returns_given_default_for_unset_fields_and_value_when_set():
    spec = helpers.make_spec()
    assert spec.get('force_hosts', 'nothing') == 'nothing'
    spec.force_hosts = ['h1']
    assert spec.get('force_hosts') == ['h1']


# --- Flavor.disk_gb ---------------------------------------------------------

@pytest.mark.parametrize('root_gb, ephemeral_gb, swap_mb, expected', [
    (10, 0, 0, 10),
    (10, 5, 0, 15),
    (10, 5, 1, 16),        # 1 MiB of swap takes a whole GiB
    (10, 5, 1024, 16),
    (10, 5, 1025, 17),
    (0, 0, 2048, 2),
])
def test_flavor_disk_gb_counts_root_ephemeral_and_swap_rounded_up(
        root_gb, ephemeral_gb, swap_mb, expected):
    flavor = helpers.make_flavor(root_gb=root_gb, ephemeral_gb=ephemeral_gb,
                                 swap=swap_mb)
    assert flavor.disk_gb == expected


def test_flavor_disk_gb_with_unset_ephemeral_and_swap_is_root_only():
    flavor = objects.Flavor(flavorid='f', name='n', memory_mb=1, vcpus=1,
                            root_gb=7)
    assert flavor.disk_gb == 7


# --- fingerprints -----------------------------------------------------------

def _object_version_checker():
    from oslo_versionedobjects import fixture
    classes = {name: classes for name, classes in
               base.ObjectRegistry.obj_classes().items()
               if issubclass(classes[0], base.SchedulerSplitObject)}
    return fixture.ObjectVersionChecker(classes)


def test_object_fingerprints_match_their_versions():
    checker = _object_version_checker()
    expected, actual = checker.test_hashes(EXPECTED_FINGERPRINTS)
    assert expected == actual, (
        'Objects changed: bump their VERSION and update '
        'EXPECTED_FINGERPRINTS: %s' % actual)


def test_every_registered_object_has_a_pinned_fingerprint():
    checker = _object_version_checker()
    assert set(checker.get_hashes()) == set(EXPECTED_FINGERPRINTS)


def test_instance_sent_to_a_1_0_peer_drops_the_description():
    instance = objects.Instance(uuid='8f6b8e8e-4b4b-4b4b-8b8b-8b8b8b8b8b8b',
                                project_id='p', vm_state='building',
                                display_description='kept from 1.1')
    current = instance.obj_to_primitive()
    old = instance.obj_to_primitive(target_version='1.0')
    assert current['scheduler_split_object.data']['display_description'] \
        == 'kept from 1.1'
    assert 'display_description' not in old['scheduler_split_object.data']
    assert old['scheduler_split_object.version'] == '1.0'


def _oslo_primitive(obj, **kwargs):
    """What oslo.versionedobjects' own serialization gives."""
    return ovo_base.VersionedObject.obj_to_primitive(obj, **kwargs)


def _three_instances():
    """A new instance, one with nothing changed, and one with a field
    and a field of its flavor changed."""
    unchanged = _instance()
    unchanged.obj_reset_changes(recursive=True)
    edited = _instance()
    edited.obj_reset_changes(recursive=True)
    edited.host = 'host1'
    edited.flavor.vcpus = 4
    return _instance(), unchanged, edited


def test_a_peer_receives_what_oslo_itself_would_send():
    instance, unchanged, edited = _three_instances()
    for obj in (instance, unchanged, edited, instance.flavor):
        assert _comparable(obj.obj_to_primitive()) == \
            _comparable(_oslo_primitive(obj))
    assert 'scheduler_split_object.changes' not in \
        unchanged.obj_to_primitive()
    assert sorted(edited.obj_to_primitive()[
        'scheduler_split_object.changes']) == ['flavor', 'host']


def test_a_backport_to_this_release_s_versions_is_the_plain_primitive():
    from scheduler_split.compute import rpcapi
    instance = _instance()
    newest = max(rpcapi.OBJECT_VERSIONS, key=lambda v: tuple(
        int(p) for p in v.split('.')))
    manifest = rpcapi.OBJECT_VERSIONS[newest]
    assert _comparable(base.backport(instance, manifest)) == _comparable(
        _oslo_primitive(instance, target_version=instance.VERSION,
                        version_manifest=manifest))
    # An older peer's manifest still converts: 1.0 carried Instance 1.1.
    old = base.backport(instance, rpcapi.OBJECT_VERSIONS['1.0'])
    assert old['scheduler_split_object.version'] == '1.1'


def _state(obj):
    """Everything a received object holds: its version, what it marks
    changed, and each set field's value with its type (nested objects
    likewise)."""
    values = {}
    for name in obj.fields:
        if obj.obj_attr_is_set(name):
            value = getattr(obj, name)
            if isinstance(value, ovo_base.VersionedObject):
                values[name] = _state(value)
            elif isinstance(value, list):
                values[name] = [_state(v) if isinstance(
                    v, ovo_base.VersionedObject) else (type(v), v)
                    for v in value]
            else:
                values[name] = (type(value), value)
    return (obj.obj_name(), obj.VERSION, sorted(obj._changed_fields),
            values)


def test_a_received_object_is_what_oslo_itself_would_build(monkeypatch):
    instance, unchanged, edited = _three_instances()
    instance.launched_at = datetime.datetime(2024, 5, 6, 7, 9, 0)
    instance.access_ip_v4 = '192.0.2.7'
    instance.access_ip_v6 = '2001:db8::7'
    spec = helpers.make_spec()
    spec.instance_group = _group(rules={'max_server_per_host': 2})
    sent = [instance, unchanged, edited, spec,
            [_selection(0), _selection(1, claimed=False)]]
    wires = [jsonutils.loads(jsonutils.dumps(
        base.ObjectSerializer().serialize_entity(None, entity)))
        for entity in sent]

    def received():
        serializer = base.ObjectSerializer()
        return [serializer.deserialize_entity(None, wire) for wire in wires]

    ours = received()
    monkeypatch.setattr(base.SchedulerSplitObject, '_obj_from_primitive',
                        classmethod(ovo_base.VersionedObject
                                    ._obj_from_primitive.__func__))
    theirs = received()

    for mine, oslo in zip(ours, theirs):
        if isinstance(mine, list):
            assert [_state(m) for m in mine] == [_state(o) for o in oslo]
        else:
            assert _state(mine) == _state(oslo)
    assert ours[0].launched_at.tzinfo is not None
    assert sorted(ours[2].obj_what_changed()) == ['flavor', 'host']


def _group(policy='anti-affinity', rules=None):
    return objects.InstanceGroup(
        uuid='5b0e4c7a-1d2e-4f3a-9b8c-7d6e5f4a3b2c', name='g',
        project_id='project', user_id='user', policy=policy,
        rules=rules or {}, members=[], hosts=[])


def test_request_spec_carries_its_group_and_a_1_0_peer_gets_none():
    spec = helpers.make_spec()
    spec.instance_group = _group(rules={'max_server_per_host': 2})

    copy = _round_trip(spec)
    old = spec.obj_to_primitive(target_version='1.0')

    assert copy.instance_group.policy == 'anti-affinity'
    assert copy.instance_group.max_server_per_host == 2
    assert 'instance_group' not in old['scheduler_split_object.data']


def test_hard_policies_give_claims_a_group_and_soft_ones_do_not():
    assert _group().claim_group == {
        'uuid': _group().uuid, 'policy': 'anti-affinity', 'max_per_host': 1}
    assert _group('affinity').claim_group['policy'] == 'affinity'
    assert _group('soft-anti-affinity').claim_group is None
    assert _group('soft-affinity').claim_group is None


def test_selection_of_a_group_member_carries_resources_and_group():
    resources = {'VCPU': 1, 'MEMORY_MB': 512, 'DISK_GB': 10}
    group = _group().claim_group
    member = objects.Selection.for_claim(
        resources, group=group, compute_node_uuid=NODE_UUIDS[0],
        service_host='host0', nodename='node0', cell_uuid=CELL_UUID)
    plain = objects.Selection.for_claim(
        resources, compute_node_uuid=NODE_UUIDS[1], service_host='host1',
        nodename='node1', cell_uuid=CELL_UUID)

    member, plain = _round_trip([member, plain])

    assert member.allocation_request_version == '1.1'
    assert (member.resources, member.group) == (resources, group)
    # Without a group the request stays in the 1.0 shape older peers read.
    assert plain.allocation_request_version == '1.0'
    assert jsonutils.loads(plain.allocation_request) == resources
    assert (plain.resources, plain.group) == (resources, None)


def test_instance_with_its_flavor_backports_to_a_1_0_peer():
    old = _instance().obj_to_primitive(target_version='1.0')
    assert old['scheduler_split_object.version'] == '1.0'
    assert old['scheduler_split_object.data']['flavor'][
        'scheduler_split_object.data']['memory_mb'] == 2048


def test_the_users_token_crosses_the_bus_with_the_request():
    """A compute host uploads a snapshot with the token of the user who
    asked for it; the service catalog stays behind."""
    from scheduler_split import context as ss_context
    from scheduler_split import rpc as ss_rpc
    ctx = ss_context.RequestContext(auth_token='a-token', user_id='u',
                                    project_id='p', request_id='req-1')
    ctx.service_catalog = [{'type': 'image'}]
    serializer = ss_rpc.RequestContextSerializer(None)
    received = serializer.deserialize_context(
        serializer.serialize_context(ctx))
    assert (received.auth_token, received.user_id, received.project_id,
            received.request_id) == ('a-token', 'u', 'p', 'req-1')
    assert received.service_catalog == []
