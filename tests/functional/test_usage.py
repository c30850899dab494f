"""``os-simple-tenant-usage`` and ``/servers/{id}/ips``: what a project's
servers used over a window of time, read from every cell, in Nova's
shapes."""

import datetime
import urllib.parse

import pytest
import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

CONF = conf.CONF
FMT = '%Y-%m-%dT%H:%M:%S.%f'


def _cell_url(server_id):
    with engines.reader(CONF.api_database.connection) as session:
        return session.execute(sa.text(
            'SELECT c.database_connection FROM instance_mappings m '
            'JOIN cell_mappings c ON c.id = m.cell_id '
            'WHERE m.instance_uuid = :u'), {'u': server_id}).scalar_one()


def _set_times(server_id, launched, terminated=None):
    """Rewrite a server's history, as if it had run at another time."""
    with engines.writer(_cell_url(server_id)) as session:
        session.execute(sa.text(
            'UPDATE instances SET launched_at = :l, terminated_at = :t '
            'WHERE uuid = :u'),
            {'l': launched, 't': terminated, 'u': server_id})


def _usage(api, path, **params):
    resp = api.get('/v2.1/os-simple-tenant-usage%s' % path, params=params)
    assert resp.status_code == 200, resp.text
    return resp.json()


def test_tenant_usage_bills_each_project_for_its_servers_hours(
        start_system):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    user = api.as_user('u2:p2')
    mine = [api.boot('a%d' % i, flavor='2') for i in range(3)]
    theirs = user.boot('b0', flavor='1')
    for server_id in mine + [theirs]:
        assert api.wait_for(server_id)['status'] == 'ACTIVE'
    assert {system.cell_of(s) for s in mine + [theirs]} == {'cell1',
                                                            'cell2'}
    flavor2 = api.get('/v2.1/flavors/2').json()['flavor']

    # A history with known hours: a0 ran the whole window, a1 started two
    # hours into it, a2 ran one hour and was deleted, b0 ran before it.
    now = datetime.datetime.utcnow().replace(microsecond=0)
    start, end = now - datetime.timedelta(hours=10), now - \
        datetime.timedelta(hours=4)
    _set_times(mine[0], now - datetime.timedelta(days=2))
    _set_times(mine[1], start + datetime.timedelta(hours=2))
    assert api.delete('/v2.1/servers/%s' % mine[2]).status_code == 204
    api.wait_gone(mine[2])
    _set_times(mine[2], start + datetime.timedelta(hours=1),
               start + datetime.timedelta(hours=2))
    _set_times(theirs, start - datetime.timedelta(hours=3),
               start - datetime.timedelta(hours=1))
    window = {'start': start.strftime(FMT), 'end': end.strftime(FMT)}

    body = _usage(api, '', detailed='1', **window)
    assert [u['tenant_id'] for u in body['tenant_usages']] == ['admin']
    usage = body['tenant_usages'][0]
    assert usage['start'] == start.strftime(FMT)
    assert usage['stop'] == end.strftime(FMT)
    assert usage['total_hours'] == pytest.approx(6 + 4 + 1)
    assert usage['total_vcpus_usage'] == pytest.approx(
        11 * flavor2['vcpus'])
    assert usage['total_memory_mb_usage'] == pytest.approx(
        11 * flavor2['ram'])
    assert usage['total_local_gb_usage'] == pytest.approx(
        11 * (flavor2['disk'] + flavor2['OS-FLV-EXT-DATA:ephemeral']))
    servers = {s['instance_id']: s for s in usage['server_usages']}
    assert set(servers) == set(mine)
    gone = servers[mine[2]]
    assert (gone['state'], gone['hours'], gone['uptime']) == (
        'terminated', pytest.approx(1), 3600)
    assert gone['ended_at'] == (start + datetime.timedelta(hours=2)
                                ).strftime(FMT)
    running = servers[mine[0]]
    assert (running['state'], running['ended_at'], running['flavor'],
            running['name'], running['vcpus']) == (
        'active', None, flavor2['name'], 'a0', flavor2['vcpus'])
    assert running['uptime'] >= 2 * 24 * 3600

    # Without ``detailed`` the totals come alone; an earlier window
    # finds the other project's server only.
    plain = _usage(api, '', **window)['tenant_usages'][0]
    assert 'server_usages' not in plain
    assert plain['total_hours'] == pytest.approx(11)
    earlier = _usage(api, '', detailed='1', start=(
        start - datetime.timedelta(hours=5)).strftime(FMT),
        end=start.strftime('%Y-%m-%dT%H:%M:%S'))
    assert {(u['tenant_id'], u['total_hours'])
            for u in earlier['tenant_usages']} == {('p2', 2.0),
                                                   ('admin', 5.0)}

    # A project reads its own usage, and no one else's, and not the list.
    own = _usage(user, '/p2', start=(start - datetime.timedelta(
        hours=5)).strftime(FMT), end=end.strftime(FMT))['tenant_usage']
    assert [s['instance_id'] for s in own['server_usages']] == [theirs]
    assert own['total_hours'] == pytest.approx(2)
    assert _usage(user, '/p2', **window) == {'tenant_usage': {}}
    nova_error(user.get('/v2.1/os-simple-tenant-usage/admin',
                        params=window), 403, 'forbidden')
    nova_error(user.get('/v2.1/os-simple-tenant-usage', params=window),
               403, 'forbidden')
    assert len(_usage(api, '/admin', **window)['tenant_usage'][
        'server_usages']) == 3


def test_tenant_usage_pages_from_2_40_and_refuses_bad_windows(
        start_system):
    system = start_system(cells=2, hosts_per_cell=1)
    api = system.api
    servers = [api.boot('p%d' % i) for i in range(5)]
    for server_id in servers:
        assert api.wait_for(server_id)['status'] == 'ACTIVE'
    now = datetime.datetime.utcnow()
    window = {'start': (now - datetime.timedelta(days=1)).strftime(FMT),
              'end': (now + datetime.timedelta(days=1)).strftime(FMT)}

    # Pages of two, across both cells, in uuid order, each server once.
    v240 = api.at('2.40')
    seen = []
    body = _usage(v240, '', detailed='1', limit=2, **window)
    while True:
        page = [s['instance_id'] for u in body['tenant_usages']
                for s in u['server_usages']]
        seen.extend(page)
        if 'tenant_usages_links' not in body:
            break
        assert len(page) == 2
        link = urllib.parse.urlsplit(
            body['tenant_usages_links'][0]['href'])
        params = dict(urllib.parse.parse_qsl(link.query))
        assert params['marker'] == page[-1] and params['detailed'] == '1'
        body = _usage(v240, '', **params)
    assert seen == sorted(servers)
    show = _usage(v240, '/admin', limit=3, **window)
    assert len(show['tenant_usage']['server_usages']) == 3
    assert 'marker=' in show['tenant_usage_links'][0]['href']
    # Before 2.40 ``limit`` is not a parameter: every server comes.
    old = _usage(api.at('2.39'), '/admin', limit=1, **window)
    assert len(old['tenant_usage']['server_usages']) == 5
    assert 'tenant_usage_links' not in old
    nova_error(v240.get('/v2.1/os-simple-tenant-usage', params=dict(
        window, marker='0b2b9b7a-1111-4222-8333-444455556666')),
        400, 'badRequest')
    nova_error(v240.get('/v2.1/os-simple-tenant-usage', params=dict(
        window, limit='-1')), 400, 'badRequest')

    # Bad windows and unknown parameters.
    message = nova_error(api.get('/v2.1/os-simple-tenant-usage', params={
        'start': window['end'], 'end': window['start']}), 400, 'badRequest')
    assert 'start time cannot occur after the end time' in message
    message = nova_error(api.get('/v2.1/os-simple-tenant-usage/admin',
                                 params={'start': 'yesterday'}),
                         400, 'badRequest')
    assert 'Invalid datetime string' in message
    nova_error(api.get('/v2.1/os-simple-tenant-usage', params=dict(
        window, sort='x')), 400, 'badRequest')
    assert api.at('2.74').get('/v2.1/os-simple-tenant-usage', params=dict(
        window, sort='x')).status_code == 200
    nova_error(api.get('/v2.1/os-simple-tenant-usage/', params=window),
               404, 'itemNotFound')


def test_server_ips_are_empty_without_a_network_service(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    api = system.api
    server_id = api.boot('addressed')
    api.wait_for(server_id)
    resp = api.get('/v2.1/servers/%s/ips' % server_id)
    assert resp.status_code == 200, resp.text
    assert resp.json() == {'addresses': {}}
    message = nova_error(api.get('/v2.1/servers/%s/ips/private'
                                 % server_id), 404, 'itemNotFound')
    assert message == 'Instance is not a member of specified network'
    nova_error(api.get('/v2.1/servers/%s/ips' % ('0' * 32)), 404,
               'itemNotFound')
    # Another project's server is not found, as for a show.
    nova_error(api.as_user('u2:p2').get('/v2.1/servers/%s/ips'
                                        % server_id), 404, 'itemNotFound')
