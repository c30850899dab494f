"""How the gabbi runner reads identities and results: no all-in-one."""

from tests.gabbi import auth
from tests.gabbi import run


def test_identities_as_placement_noauth_reads_them():
    assert auth.identity('admin') == ('admin', 'admin', ['admin'])
    assert auth.identity('admin:admin') == ('admin', 'admin', ['admin'])
    assert auth.identity('user') == ('user', 'user', [])
    assert auth.identity('user:p1') == ('user', 'p1', [])
    assert auth.identity('user', 'member,reader', 'p2') == (
        'user', 'p2', ['member', 'reader'])
    # A system-scoped token has no project, unless one is named.
    assert auth.identity('user', 'reader', None, 'all') == (
        'user', None, ['reader'])


def _call(app, path, **headers):
    environ = {'PATH_INFO': path}
    environ.update(('HTTP_' + k.upper(), v) for k, v in headers.items())
    app(environ, None)
    return environ


def test_the_identity_middleware():
    seen = []
    app = auth.GabbitIdentity(lambda env, start: seen.append('public'),
                              lambda env, start: seen.append('authed'),
                              {'/placement'})
    env = _call(app, '/placement')
    assert seen == ['public'] and 'HTTP_X_IDENTITY_STATUS' not in env
    assert env['openstack.request_id'].startswith('req-')

    # No token: an invalid identity, whatever the client claimed.
    env = _call(app, '/placement/traits', x_identity_status='Confirmed',
                x_user_id='admin', x_roles='admin')
    assert seen[-1] == 'authed'
    assert env['HTTP_X_IDENTITY_STATUS'] == 'Invalid'
    assert 'HTTP_X_USER_ID' not in env and 'HTTP_X_ROLES' not in env

    env = _call(app, '/placement/traits', x_auth_token='user',
                x_roles='reader', x_project_id='p1')
    assert (env['HTTP_X_IDENTITY_STATUS'], env['HTTP_X_USER_ID'],
            env['HTTP_X_PROJECT_ID'], env['HTTP_X_ROLES']) == (
                'Confirmed', 'user', 'p1', 'reader')
    env = _call(app, '/placement/traits', x_auth_token='user',
                x_roles='admin', openstack_system_scope='all')
    assert 'HTTP_X_PROJECT_ID' not in env


def _record(test_id, status, got=None, expected='200', url='/traits',
            reason='', method='GET'):
    return {'id': test_id, 'file': test_id.split('::')[0], 'status': status,
            'got_status': got, 'expected_status': expected, 'url': url,
            'method': method, 'reason': reason}


def test_the_pass_list_gate():
    records = [_record('a.yaml::one', 'passed', '200'),
               _record('a.yaml::two', 'failed', '404'),
               _record('a.yaml::three', 'passed', '200')]
    check = run.check_pass_list(records, ['a.yaml::one', 'a.yaml::two',
                                          'a.yaml::gone', 'b.yaml::x'])
    assert check['regressions'] == ['a.yaml::two (failed)',
                                    'a.yaml::gone (not found)',
                                    'b.yaml::x (not found)']
    assert check['new_passes'] == ['a.yaml::three']
    # Running some files only checks the listed tests of those files.
    partial = run.check_pass_list(records, ['b.yaml::x'], partial=True)
    assert partial['regressions'] == []


def test_failures_are_grouped_by_kind_and_reason():
    records = [
        _record('a.yaml::options', 'failed', '405', '200', '/',
                method='OPTIONS'),
        _record('a.yaml::make', 'failed', '405', '201',
                '/resource_providers', method='POST'),
        _record('a.yaml::show', 'failed', '404', '200',
                '/resource_providers/8a1b7a34-4e48-4a2d-8a34-0f3b1c1d2e3f'),
        _record('a.yaml::next', 'failed', None, '200', '$LOCATION',
                "AssertionError: unable to replace $LOCATION in $LOCATION"),
        _record('a.yaml::list', 'failed', '200', '200',
                '/resource_providers?name=x'),
        _record('a.yaml::bad', 'failed', '400', '415', '/traits'),
        _record('a.yaml::fine', 'passed', '200'),
    ]
    for record in records:
        if record['status'] != 'passed':
            record['why'] = run._reason(record)
    run._categorize(records, False)
    # A 405 on a write is the API not serving it; on another method, a
    # status that differs.
    assert [r.get('category') for r in records] == [
        'status differs', 'write refused (405)', 'provider not there (404)',
        'builds on an earlier failed request',
        'answer differs, data the file needs not made', 'status differs',
        None]
    assert records[1]['why'] == '405 (not 201) on POST /resource_providers'
    assert records[2]['why'] == (
        '404 (not 200) on GET /resource_providers/{uuid}')
    assert 'needs $LOCATION' in records[3]['why']
    assert records[4]['why'] == ('body or headers differ on GET '
                                 '/resource_providers (status 200)')
