"""A database that cannot be reached makes the API answer 503, promptly,
with a Retry-After header, and it accepts nothing it could not record."""

import contextlib
import time

import pytest
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split import objects
from tests.functional import fixtures

pytestmark = pytest.mark.functional

CONF = conf.CONF


@pytest.fixture(scope='module')
def system(tmp_path_factory):
    from tests.functional import fixtures
    system = fixtures.System(tmp_path_factory.mktemp('db-down'), 1,
                             1).start()
    yield system
    system.stop()
    CONF.reset()


@pytest.fixture(scope='module')
def server_id(system):
    server_id = system.api.boot(name='survivor')
    assert system.api.wait_for(server_id)['status'] == 'ACTIVE'
    return server_id


@contextlib.contextmanager
def _api_database_down():
    url = CONF.api_database.connection
    CONF.set_override('connection', fixtures.nobody_listens(),
                      group='api_database')
    try:
        yield
    finally:
        CONF.set_override('connection', url, group='api_database')


def _cell_database_down(system):
    return fixtures.cell_database_down(system)


def _unavailable(resp):
    assert resp.status_code == 503, resp.text
    body = resp.json()
    assert list(body) == ['serviceUnavailable']
    assert body['serviceUnavailable']['code'] == 503
    assert 'database' in body['serviceUnavailable']['message']
    assert 'Traceback' not in resp.text
    assert int(resp.headers['Retry-After']) == CONF.api.retry_after


def _requests(api, server_id):
    from scheduler_split.image import catalog as images
    return {
        'list': lambda: api.get('/v2.1/servers'),
        'list detail': lambda: api.get('/v2.1/servers/detail'),
        'show': lambda: api.get('/v2.1/servers/%s' % server_id),
        'boot': lambda: api.post('/v2.1/servers', {'server': {
            'name': 'never', 'flavorRef': '1', 'networks': 'none',
            'imageRef': images.find('cirros')[0]}}),
        'delete': lambda: api.delete('/v2.1/servers/%s' % server_id),
    }


@pytest.mark.parametrize('what', ['list', 'list detail', 'show', 'boot',
                                  'delete'])
def test_api_database_down_is_503_with_retry_after(system, server_id, what):
    send = _requests(system.api, server_id)[what]
    with _api_database_down():
        started = time.monotonic()
        resp = send()
        elapsed = time.monotonic() - started
    _unavailable(resp)
    assert elapsed < 5
    # Nothing was half-done: the server is still there, no other exists.
    assert [s['name'] for s in system.api.servers()] == ['survivor']
    assert system.api.server(server_id)['status'] == 'ACTIVE'


# A list leaves a cell it cannot reach out (test_down_cells), and
# from 2.69 a show answers what the API database knows.
@pytest.mark.parametrize('what', ['show', 'delete'])
def test_cell_database_down_is_503_with_retry_after(system, server_id,
                                                    what):
    send = _requests(system.api.at('2.68'), server_id)[what]
    with _cell_database_down(system):
        _unavailable(send())
    assert system.api.server(server_id)['status'] == 'ACTIVE'


@pytest.mark.parametrize('error', [
    sa.exc.TimeoutError('QueuePool limit of size 10 overflow 20 reached, '
                        'connection timed out, timeout 10.00'),
    sa.exc.DisconnectionError('connection invalidated'),
    sa.exc.OperationalError('SELECT 1', {}, Exception(
        'server closed the connection unexpectedly')),
    sa.exc.InterfaceError('SELECT 1', {}, Exception('connection already '
                                                    'closed')),
], ids=['pool timeout', 'disconnection', 'operational', 'interface'])
def test_every_kind_of_lost_database_is_503(system, server_id, monkeypatch,
                                            error):
    def lost(*args, **kwargs):
        raise error
    monkeypatch.setattr(objects.CellMapping, 'get_all', lost)
    _unavailable(system.api.get('/v2.1/servers'))


def test_boot_that_cannot_be_fully_recorded_is_refused_whole(
        system, server_id, monkeypatch):
    """A boot of three servers whose database goes away after the first
    is recorded leaves no server behind."""
    real_record_in = objects.BuildRequest.record_in
    recorded = []

    def record_in(self, session, rows, request_spec=None):
        if recorded:
            raise sa.exc.OperationalError(
                'INSERT', {}, Exception('could not connect to server'))
        real_record_in(self, session, rows, request_spec)
        session.flush()
        recorded.append(self.instance_uuid)

    monkeypatch.setattr(objects.BuildRequest, 'record_in', record_in)
    from scheduler_split.image import catalog as images
    resp = system.api.post('/v2.1/servers', {'server': {
        'name': 'partial', 'flavorRef': '1', 'networks': 'none',
        'imageRef': images.find('cirros')[0], 'min_count': 3,
        'max_count': 3}})
    _unavailable(resp)
    monkeypatch.undo()
    assert len(recorded) == 1
    assert system.api.get('/v2.1/servers/%s' % recorded[0]).status_code \
        == 404
    assert [s['name'] for s in system.api.servers()] == ['survivor']


def test_database_back_means_service_back(system, server_id):
    with _api_database_down():
        _unavailable(system.api.get('/v2.1/servers'))
    assert system.api.get('/v2.1/servers').status_code == 200
    show = '/v2.1/servers/%s' % server_id
    with _cell_database_down(system):
        _unavailable(system.api.at('2.68').get(show))
    assert system.api.at('2.68').get(show).status_code == 200


def test_a_delete_under_way_is_not_reported_as_refused(system, monkeypatch):
    # The API database goes away between handing the delete to the compute
    # and taking the server out of its group: the delete goes on, so the
    # user must not be told to try again as if nothing had happened.
    server = system.api.boot(name='leaving')
    assert system.api.wait_for(server)['status'] == 'ACTIVE'

    def gone(ctx, instance_uuid):
        raise sa.exc.OperationalError('DELETE FROM instance_group_member',
                                      {}, Exception('connection refused'))

    monkeypatch.setattr(objects.InstanceGroup, 'remove_instance', gone)
    resp = system.api.delete('/v2.1/servers/%s' % server)

    assert resp.status_code == 204, resp.text
    system.api.wait_gone(server)


def test_a_delete_marked_before_the_database_went_away_is_finished_by_its_compute(  # noqa: E501
        system, monkeypatch):
    # The cell database goes away between marking the server DELETING and
    # recording the delete: the delete is under way, so the answer is a
    # 204, and the compute, finding the server DELETING, finishes it.
    from scheduler_split.objects import instance_action

    server = system.api.boot(name='half-deleted')
    assert system.api.wait_for(server)['status'] == 'ACTIVE'

    def gone(ctx, instance_uuid, action):
        raise sa.exc.OperationalError('INSERT INTO instance_actions', {},
                                      Exception('connection refused'))

    monkeypatch.setattr(instance_action, 'start_action', gone)
    resp = system.api.delete('/v2.1/servers/%s' % server)
    monkeypatch.undo()

    assert resp.status_code == 204, resp.text
    shown = system.api.get('/v2.1/servers/%s' % server).json()['server']
    assert shown['OS-EXT-STS:task_state'] == 'deleting'
    # The compute's settle (its periodic task), once the delete is older
    # than a check.
    CONF.set_override('unfinished_build_check_interval', 1, group='compute')
    try:
        deadline = time.monotonic() + 30
        while system.api.get('/v2.1/servers/%s' % server).status_code \
                != 404:
            assert time.monotonic() < deadline, 'the delete never finished'
            for compute in system.aio.computes.values():
                compute.manager.settle_instances()
            time.sleep(0.2)
    finally:
        CONF.clear_override('unfinished_build_check_interval',
                            group='compute')
