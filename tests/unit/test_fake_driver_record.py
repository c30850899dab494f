"""The fake driver's record of what runs where (``[fake_driver]
record_dir``): what a test outside the compute's process reads to count
servers running on two hosts."""

import json
import uuid as uuid_lib

from scheduler_split.compute.virt import fake
from scheduler_split import objects


def _instance(uuid):
    return objects.Instance(uuid=uuid, hostname=uuid, image_ref='cirros')


def _record(path):
    return json.loads(path.read_text())


def test_each_host_writes_what_it_runs_at_every_change(tmp_path, override):
    override('record_dir', str(tmp_path), group='fake_driver')
    override('spawn_delay', 0, group='fake_driver')
    u1, u2, u3 = (str(uuid_lib.uuid4()) for _ in range(3))
    one, two = fake.FakeDriver('host-a'), fake.FakeDriver('host-b')
    assert _record(tmp_path / 'host-a.json') == {}

    one.spawn(None, _instance(u1))
    two.spawn(None, _instance(u2))
    one.power_off(_instance(u1))
    assert _record(tmp_path / 'host-a.json') == {u1: fake.SHUTDOWN}
    assert _record(tmp_path / 'host-b.json') == {u2: fake.RUNNING}

    one.destroy(_instance(u1))
    # One it never ran: nothing changes.
    one.destroy(_instance(u3))
    assert _record(tmp_path / 'host-a.json') == {}
    # Nothing but the records: each is replaced whole, never half
    # written.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        'host-a.json', 'host-b.json']


def test_without_a_record_dir_nothing_is_written(tmp_path, override,
                                                 monkeypatch):
    monkeypatch.chdir(tmp_path)
    override('spawn_delay', 0, group='fake_driver')
    u1 = str(uuid_lib.uuid4())
    driver = fake.FakeDriver('host-a')
    driver.spawn(None, _instance(u1))
    assert driver.list_instances() == [u1]
    assert list(tmp_path.iterdir()) == []
