"""Random requests to every route of the route table: never a 5xx, every
error in Nova's shape (in Placement's when the Placement API under
``/placement`` answered), no request slower than a second (each time it
is sent: see ``RETIMES``).

The routes come from ``wsgi.ROUTES`` itself, so a new route is fuzzed as
soon as it is added. Each drawn request is sent twice, as an admin and as
a member of another project, straight to the WSGI application (no HTTP
server in between, so that malformed framing such as a short body
reaches the API as a server would hand it on).
"""

import collections
import io
import json
import re
import time
import urllib.parse

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import pytest
import webob

from scheduler_split.api import wsgi
from scheduler_split import conf
from scheduler_split.image import catalog as images

pytestmark = [pytest.mark.functional, pytest.mark.serial]

CONF = conf.CONF

# Drawn requests; each is sent as admin and as non-admin.
EXAMPLES = 6000
SLOWEST_ALLOWED = 1.0
# A request slower than that is sent again up to this many times, and
# is slow only if every try was: an input that costs a second costs it
# each time, while a write lock held for a moment by a build the fuzzing
# started, or a stall of the machine, does not come back.
RETIMES = 2

TEMPLATES = sorted(wsgi.ROUTES)
METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS']
TOKENS = ['admin:admin', 'fuzzer:fuzzed']
CIRROS = images.find('cirros')[0]
_PLACEHOLDER = re.compile(r'\{(\w+)\}')


class Target:
    """The all-in-one under fuzzing and what it has seen."""

    def __init__(self, system):
        self.system = system
        self.app = system.aio.wsgi_app()
        self.ids = []
        self.sent = 0
        self.statuses = collections.Counter()
        self.slowest = (0.0, None, None)

    def send(self, method, path, query, headers, body, content_length):
        environ = webob.Request.blank(path + ('?' + query if query else ''),
                                      method=method).environ
        # Request.blank leaves the path decoded as the server would hand it
        # on (UTF-8 bytes as latin-1); anything that is not UTF-8 stays so.
        raw = body or b''
        environ['wsgi.input'] = io.BytesIO(raw)
        environ.pop('webob.is_body_seekable', None)
        environ['CONTENT_LENGTH'] = (str(len(raw)) if content_length is None
                                     else content_length)
        for name, value in headers.items():
            key = name.upper().replace('-', '_')
            if key == 'CONTENT_TYPE':
                environ['CONTENT_TYPE'] = value
            else:
                environ['HTTP_' + key] = value
        req = webob.Request(environ)
        started = time.monotonic()
        resp = req.get_response(self.app)
        elapsed = time.monotonic() - started
        self.sent += 1
        self.statuses[resp.status_int] += 1
        if elapsed > self.slowest[0]:
            self.slowest = (elapsed, method, req.path_info if _utf8(
                environ['PATH_INFO']) else repr(environ['PATH_INFO']))
        return resp, elapsed


@pytest.fixture(scope='module')
def target(tmp_path_factory):
    from tests.functional import fixtures
    system = fixtures.System(tmp_path_factory.mktemp('fuzz'), 1, 1).start()
    target = Target(system)
    api = system.api
    for token in TOKENS:
        user = api.as_user(token)
        target.ids.append(user.boot(name='seed-%s' % token.split(':')[0]))
        resp = user.post('/v2.1/os-server-groups', {'server_group': {
            'name': 'seed', 'policy': 'anti-affinity'}})
        assert resp.status_code == 200, resp.text
        target.ids.append(resp.json()['server_group']['id'])
    for server_id in target.ids[::2]:
        resp = api.get('/v2.1/servers/%s/os-instance-actions' % server_id)
        target.ids.extend(a['request_id']
                          for a in resp.json()['instanceActions'])
    yield target
    system.stop()
    CONF.reset()


# --- what a request is made of ----------------------------------------------

_hostile_text = st.sampled_from([
    '', ' ', '0', '-1', '1e3', '²', '٣', '9' * 5000, 'null', 'true',
    'detail', '..', '%', '%00', '\u00e9t\u00e9', '\U0001f4a5', 'a' * 300,
    '^(a+)+$', '^(a|aa)+$', '(', '(?:(?:a{255}){255}){255}',
    '2026-01-01T00:00:00Z', 'not-a-date',
    '00000000-0000-0000-0000-000000000000',
])
_text = st.one_of(_hostile_text, st.text(max_size=40))
_huge = st.one_of(st.integers(), st.sampled_from([
    10 ** 30, -10 ** 30, 2 ** 31, 2 ** 63, 2 ** 64, 10 ** 400]))
_scalar = st.one_of(st.none(), st.booleans(), _huge,
                    st.floats(allow_nan=False, allow_infinity=False), _text)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_text, inner, max_size=4)),
    max_leaves=12)


def _id_strategy(target):
    # Mostly ids that exist, so that requests reach past the lookup.
    known = st.sampled_from(target.ids + [CIRROS, '1', '2', 'detail'])
    return st.one_of(known, known, known, st.uuids().map(str), _text)


def _quote(value):
    return urllib.parse.quote(value, safe='')


@st.composite
def _path(draw, target):
    template = draw(st.sampled_from(TEMPLATES))
    path = _PLACEHOLDER.sub(
        lambda m: _quote(draw(_id_strategy(target))), template)
    if draw(st.integers(0, 9)) == 0:
        path = draw(st.sampled_from([
            path + '/', path + '/' + _quote(draw(_text)), path + '/%FF%FE',
            path.replace('/', '//', 1)]))
    return template, path or '/'


_QUERY_NAMES = ['limit', 'marker', 'offset', 'name', 'status', 'image',
                'flavor', 'all_tenants', 'all_projects', 'is_public',
                'minRam', 'minDisk', 'changes-since', 'reservation_id',
                'sort_key', 'sort_dir', 'uuid', 'resources', 'resources1',
                'member_of', 'required', 'in_tree', 'project_id',
                'group_policy', 'consumer_type']


@st.composite
def _query(draw):
    pairs = draw(st.lists(st.tuples(
        st.one_of(st.sampled_from(_QUERY_NAMES), _text), _text),
        max_size=4))
    query = urllib.parse.urlencode(pairs)
    return draw(st.sampled_from([query, query, query + '&%FF=%FE',
                                 query + '&limit', '%%%']))


_headers = st.fixed_dictionaries({}, optional={
    'OpenStack-API-Version': st.sampled_from([
        'compute 2.1', 'compute 2.15', 'compute 2.37', 'compute 2.64',
        'compute 2.96', 'compute latest', 'compute 3.0', 'compute 2.',
        'compute 2.x', 'compute ²', 'compute', 'volume 3.0', ',,',
        'compute 2.1.1', 'placement 1.0', 'placement 1.39',
        'placement latest', 'placement 1.99', 'placement 1.x']),
    'X-OpenStack-Nova-API-Version': st.sampled_from(['2.1', '9.9', 'x']),
    'Content-Type': st.sampled_from([
        'application/json', 'text/plain', 'application/xml',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x', 'application/json; charset=ascii',
        '\u00ff']),
    'Accept': st.sampled_from(['application/json', 'text/html', '*/*',
                               'application/xml']),
})


# Bodies close to the valid ones reach past the schemas into the handlers.
def _valid_bodies(template, method):
    if template == '/v2.1/servers' and method == 'POST':
        return {'server': {'name': 'fuzz', 'flavorRef': '1',
                           'imageRef': CIRROS, 'networks': 'none'}}
    if template == '/v2.1/servers/{server_id}' and method == 'PUT':
        return {'server': {'name': 'renamed', 'accessIPv4': '10.0.0.1'}}
    if template == '/v2.1/os-server-groups' and method == 'POST':
        return {'server_group': {'name': 'g', 'policy': 'anti-affinity',
                                 'policies': ['affinity'],
                                 'rules': {'max_server_per_host': 1}}}
    return {'server': {}}


_FIELDS = ['name', 'flavorRef', 'imageRef', 'networks', 'metadata',
           'min_count', 'max_count', 'availability_zone', 'accessIPv4',
           'accessIPv6', 'description', 'block_device_mapping_v2',
           'security_groups', 'return_reservation_id', 'policy', 'policies',
           'rules', 'key_name', 'os:scheduler_hints', 'server',
           'server_group', 'max_server_per_host', 'group']


@st.composite
def _near_valid(draw, template, method, target):
    body = _valid_bodies(template, method)
    for _ in range(draw(st.integers(0, 2))):
        inner = body[next(iter(body))] if body else body
        if not isinstance(inner, dict):
            break
        key = draw(st.sampled_from(_FIELDS))
        if draw(st.booleans()) and key in inner:
            del inner[key]
        else:
            inner[key] = draw(_json)
    if not draw(st.integers(0, 3)):
        body['os:scheduler_hints'] = draw(st.one_of(
            _json, st.fixed_dictionaries({'group': _id_strategy(target)})))
    return json.dumps(body).encode()


@st.composite
def _body(draw, template, method, target):
    kind = draw(st.sampled_from(['none', 'json', 'near', 'near', 'near',
                                 'near', 'near', 'deep', 'bytes', 'huge',
                                 'text']))
    if kind == 'none':
        return None
    if kind == 'json':
        return json.dumps(draw(_json)).encode()
    if kind == 'near':
        return draw(_near_valid(template, method, target))
    if kind == 'deep':
        depth = draw(st.sampled_from([31, 32, 33, 100, 999, 1000, 5000,
                                      100000]))
        if draw(st.booleans()):
            return ('[' * depth + ']' * depth).encode()
        return ('{"a":' * depth + '1' + '}' * depth).encode()
    if kind == 'bytes':
        return draw(st.binary(max_size=64))
    if kind == 'huge':
        return draw(st.sampled_from([
            b'{"server": {"min_count": 1e999}}', b'{"server": NaN}',
            b'{"server_group": {"rules": {"max_server_per_host": '
            + b'9' * 4000 + b'}}}',
            b'{"server": {"name": "\\ud800"}}', b'\xff\xfe{"a": 1}',
            b'{"server": {"metadata": {' + b','.join(
                b'"k%d": "v"' % i for i in range(500)) + b'}}}']))
    return draw(_text).encode('utf-8', 'surrogatepass')


@st.composite
def _request(draw, target):
    template, path = draw(_path(target))
    allowed = sorted(wsgi.ROUTES[template])
    method = draw(st.sampled_from(allowed) if draw(st.integers(0, 4))
                  else st.sampled_from(METHODS))
    body = draw(_body(template, method, target))
    content_length = draw(st.one_of(
        st.none(), st.none(), st.none(), st.none(), st.none(), st.none(),
        st.sampled_from(['0', '-1', 'abc', '99999', str(2 ** 64)]),
        st.just(str(len(body or b'') + 7))))
    return (method, path, draw(_query()), draw(_headers), body,
            content_length)


# Nova's names of the faults a client may cause.
FAULT_NAMES = {'badRequest', 'unauthorized', 'forbidden', 'itemNotFound',
               'badMethod', 'notAcceptable', 'conflictingRequest',
               'overLimit', 'badMediaType'}


def _is_nova_fault(resp):
    assert resp.content_type == 'application/json', resp.headers
    body = json.loads(resp.body)
    assert isinstance(body, dict) and len(body) == 1, body
    (name, fault), = body.items()
    assert name in FAULT_NAMES, body
    assert isinstance(fault, dict), body
    assert fault.get('code') == resp.status_int, body
    assert isinstance(fault.get('message'), str) and fault['message'], body


def _is_placement_error(resp):
    assert resp.content_type == 'application/json', resp.headers
    body = json.loads(resp.body)
    assert list(body) == ['errors'], body
    [error] = body['errors']
    assert error.get('status') == resp.status_int, body
    assert isinstance(error.get('title'), str) and error['title'], body
    assert isinstance(error.get('detail'), str) and error['detail'], body


def test_no_route_answers_5xx_to_anything(target, capsys):
    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_request(target))
    def fuzz(request):
        method, path, query, headers, body, content_length = request
        for token in TOKENS:
            sent = dict(headers, **{'X-Auth-Token': token})
            resp, elapsed = target.send(method, path, query, sent, body,
                                        content_length)
            for _ in range(RETIMES):
                if elapsed < SLOWEST_ALLOWED:
                    break
                elapsed = min(elapsed, target.send(
                    method, path, query, sent, body, content_length)[1])
            described = '%s %s?%s as %s: %s %s' % (
                method, path, query, token, resp.status, resp.body[:300])
            assert resp.status_int < 500, described
            assert elapsed < SLOWEST_ALLOWED, '%.2fs: %s' % (elapsed,
                                                             described)
            if resp.status_int >= 400 and method != 'HEAD':
                if resp.headers.get('OpenStack-API-Version', '').startswith(
                        'placement '):
                    _is_placement_error(resp)
                else:
                    _is_nova_fault(resp)

    # The servers the fuzzing boots are real builds: at most a few per
    # request keeps the system's own work from drowning the API.
    CONF.set_override('max_servers_per_request', 3, group='api')
    started = time.monotonic()
    try:
        fuzz()
    finally:
        CONF.clear_override('max_servers_per_request', group='api')
        seconds, method, path = target.slowest
        with capsys.disabled():
            print('\nfuzzed %d requests in %.0fs; slowest %s %s in %.3fs; '
                  'statuses %s' % (
                      target.sent, time.monotonic() - started, method, path,
                      seconds, dict(sorted(target.statuses.items()))))
    assert target.sent >= 10000


def _utf8(wsgi_path):
    try:
        wsgi_path.encode('latin-1').decode('utf-8')
    except UnicodeError:
        return False
    return True
