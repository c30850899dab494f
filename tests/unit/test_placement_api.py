"""The Placement API's answers when the scheduler cannot give one, and
how it reads a microversion: always in Placement's shape, never a
traceback."""

import json

import oslo_messaging as messaging
import pytest
import webob

from scheduler_split.api.placement import errors
from scheduler_split.api.placement import microversion
from scheduler_split.api import wsgi
from scheduler_split import conf
from scheduler_split import context
from scheduler_split import policy

CONF = conf.CONF


@pytest.fixture
def configured():
    """The configuration parsed, as the API's process has it (the policy
    reads it)."""
    CONF([], default_config_files=[])
    policy.reset()
    yield
    policy.reset()
    CONF.reset()


class _Scheduler:
    def __init__(self, error):
        self.error = error

    def providers(self, ctx, filters=None, limit=None, detail=False):
        raise self.error


class _ComputeAPI:
    def __init__(self, error):
        self.scheduler = _Scheduler(error)


def _get(error, path='/placement/resource_providers', version='1.39'):
    router = wsgi.Router(_ComputeAPI(error))
    req = webob.Request.blank(path, headers={
        'OpenStack-API-Version': 'placement %s' % version})
    req.environ['scheduler_split.context'] = context.get_admin_context()
    req.environ['openstack.request_id'] = 'req-placement-test'
    resp = req.get_response(router)
    [error] = json.loads(resp.body)['errors']
    assert error['status'] == resp.status_int
    assert error['request_id'] == 'req-placement-test'
    assert resp.headers['OpenStack-API-Version'] == 'placement %s' % version
    assert 'X-OpenStack-Nova-API-Version' not in resp.headers
    return resp, error


def test_a_scheduler_that_does_not_answer_is_a_503_to_retry(configured):
    resp, error = _get(messaging.MessagingTimeout('no reply'))
    assert resp.status_int == 503
    assert resp.headers['Retry-After']
    assert 'could not be reached (MessagingTimeout)' in error['detail']


def test_a_scheduler_too_old_for_the_reads_is_a_503_that_says_so(
        configured):
    resp, error = _get(messaging.RPCVersionCapError(version='1.9',
                                                    version_cap='1.8'))
    assert resp.status_int == 503
    assert 'capped at 1.8' in error['detail']


def test_an_unexpected_error_is_a_500_naming_the_request(configured):
    resp, error = _get(RuntimeError('boom'), version='1.22')
    assert resp.status_int == 500
    assert 'req-placement-test' in error['detail']
    assert 'boom' not in resp.text and 'Traceback' not in resp.text
    # No code before 1.23, as Placement.
    assert 'code' not in error


class _Request:
    def __init__(self, header=None):
        self.headers = {'OpenStack-API-Version': header} if header else {}


@pytest.mark.parametrize('header, version', [
    (None, (1, 0)),
    ('compute 2.96', (1, 0)),
    ('placement 1.29', (1, 29)),
    ('compute 2.1, placement 1.14', (1, 14)),
    ('placement latest', microversion.MAX),
])
def test_the_microversion_a_request_asks_for(header, version):
    assert microversion.parse(_Request(header)) == version


@pytest.mark.parametrize('header, status', [
    ('placement 1.40', 406), ('placement 2.0', 406),
    ('placement 1', 400), ('placement 1.x', 400), ('placement ².1', 400),
])
def test_a_version_that_does_not_read_or_is_not_served_is_refused(
        header, status):
    with pytest.raises(errors.PlacementError) as caught:
        microversion.parse(_Request(header))
    assert caught.value.status == status
    if status == 406:
        assert caught.value.extra == {'min_version': '1.0',
                                      'max_version': '1.39'}


def test_the_history_says_every_version_up_to_the_newest():
    assert [v for v, _ in microversion.VERSIONS] == [
        '1.%d' % minor for minor in range(microversion.MAX[1] + 1)]


@pytest.mark.parametrize('body,content_length,detail', [
    (b'[' * 5000 + b']' * 5000, None, 'nested more than'),
    (b'{"name": "\\ud800"}', None, 'unpaired surrogates'),
    (b'{"name": "x", "uuid": NaN}', None, 'NaN is not a JSON number'),
    (b'{"name": "x"}', '99999', 'shorter than its Content-Length'),
])
def test_a_body_no_database_could_take_is_a_400(configured, body,
                                                content_length, detail):
    """Bodies of the writes: too deep, unstorable, not JSON numbers or
    cut short are refused before anything reads them further."""
    router = wsgi.Router(_ComputeAPI(AssertionError('not reached')))
    req = webob.Request.blank('/placement/resource_providers', method='POST',
                              headers={
                                  'OpenStack-API-Version': 'placement 1.39',
                                  'Content-Type': 'application/json'})
    req.body = body
    if content_length is not None:
        req.environ['CONTENT_LENGTH'] = content_length
        req.environ.pop('webob.is_body_seekable', None)
    req.environ['scheduler_split.context'] = context.get_admin_context()
    resp = req.get_response(router)
    assert resp.status_int == 400, resp.body
    [error] = json.loads(resp.body)['errors']
    assert detail in error['detail']
