"""Quotas, limits and key pairs in Nova's shapes: what a project may hold,
what it holds, and a 403 in Nova's words past it."""

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

SSH_KEY = ('ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDx8nkQv/zgGgB4rMYmIf+6A4l6Rr'
           '+o/6lHmJWWO6aRl/NNpsqgfFB5yOmN5HUBcqJixbFCUcNsMRlSFW3Ix/8i5kM2S'
           'bwmDIbfRYRZeFOLuIxQQ0lsnqTOpc0xdKZl9/ke6RmXUbYA2TbWFSpc/mjOUdhB'
           'HkLcN+U6KmbRd91Gtw== Generated-by-Nova')


def _quota(api, project, suffix=''):
    resp = api.get('/v2.1/os-quota-sets/%s%s' % (project, suffix))
    assert resp.status_code == 200, resp.text
    return resp.json()['quota_set']


def _set_quota(api, project, **limits):
    resp = api.put('/v2.1/os-quota-sets/%s' % project, {'quota_set': limits})
    assert resp.status_code == 200, resp.text
    return resp.json()['quota_set']


def _boot(api, name, flavor='1', **extra):
    from scheduler_split.image import catalog as images
    server = {'name': name, 'flavorRef': flavor, 'networks': 'none',
              'imageRef': images.find('cirros')[0]}
    server.update(extra)
    return api.post('/v2.1/servers', {'server': server})


def test_quota_sets_in_novas_shapes(start_system):
    api = start_system(cells=1, hosts_per_cell=1, quotas=True).api
    shown = _quota(api, 'p1')
    assert shown == {'id': 'p1', 'instances': 10, 'cores': 20,
                     'ram': 51200, 'metadata_items': 128, 'key_pairs': 100,
                     'server_groups': 10, 'server_group_members': 10}
    old = _quota(api.at('2.35'), 'p1')
    assert old['injected_files'] == 5 and old['floating_ips'] == 10
    assert _quota(api.at('2.56'), 'p1')['injected_file_path_bytes'] == 255
    assert 'floating_ips' not in _quota(api.at('2.56'), 'p1')
    # Before 2.36 the network quotas are set and shown (and enforced
    # nowhere: there are no networks); from 2.36 they are unknown.
    assert _set_quota(api.at('2.35'), 'p1', floating_ips=20,
                      security_groups=30)['floating_ips'] == 20
    assert _quota(api.at('2.35'), 'p1')['security_groups'] == 30
    nova_error(api.put('/v2.1/os-quota-sets/p1', {'quota_set': {
        'floating_ips': 5}}), 400, 'badRequest')
    resp = api.at('2.35').put('/v2.1/os-quota-class-sets/default', {
        'quota_class_set': {'fixed_ips': 99, 'floating_ips': 110}})
    assert resp.status_code == 200, resp.text
    assert (resp.json()['quota_class_set']['fixed_ips'],
            resp.json()['quota_class_set']['floating_ips']) == (99, 110)

    assert _set_quota(api, 'p1', instances=3, cores='6')['instances'] == 3
    assert (_quota(api, 'p1')['instances'], _quota(api, 'p1')['cores'],
            _quota(api, 'p2')['instances']) == (3, 6, 10)
    detail = _quota(api, 'p1', '/detail')
    assert detail['instances'] == {'limit': 3, 'in_use': 0, 'reserved': 0}
    assert _quota(api, 'p1', '/defaults')['instances'] == 10

    # The default quota class moves every project's defaults.
    resp = api.put('/v2.1/os-quota-class-sets/default',
                   {'quota_class_set': {'instances': 7}})
    assert resp.status_code == 200, resp.text
    assert _quota(api, 'p2')['instances'] == 7
    assert api.get('/v2.1/os-quota-class-sets/default').json()[
        'quota_class_set']['instances'] == 7
    assert _quota(api, 'p1')['instances'] == 3
    assert api.delete('/v2.1/os-quota-sets/p1').status_code == 202
    assert _quota(api, 'p1')['instances'] == 7

    for bad in ({'instances': -2}, {'instances': 'many'}, {'nonsense': 1}):
        nova_error(api.put('/v2.1/os-quota-sets/p1', {'quota_set': bad}),
                   400, 'badRequest')
    user = api.as_user('u1:p1')
    assert _quota(user, 'p1')['instances'] == 7
    nova_error(user.put('/v2.1/os-quota-sets/p1',
                        {'quota_set': {'instances': 99}}), 403, 'forbidden')
    nova_error(user.get('/v2.1/os-quota-sets/p2'), 403, 'forbidden')


def test_boots_past_the_quota_are_refused_in_novas_words(start_system):
    system = start_system(cells=1, hosts_per_cell=2, quotas=True)
    api = system.api
    user = api.as_user('u1:p1')
    _set_quota(api, 'p1', instances=3, cores=4, ram=100000)
    first = _boot(user, 'a', min_count=2, max_count=2)
    assert first.status_code == 202, first.text
    message = nova_error(_boot(user, 'b', min_count=2, max_count=2), 403,
                         'forbidden')
    assert message == ('Quota exceeded for instances: Requested 2, but '
                       'already used 2 of 3 instances')
    # A request of 1..5 gets what fits.
    resp = _boot(user, 'c', min_count=1, max_count=5,
                 return_reservation_id=True)
    assert resp.status_code == 202, resp.text
    assert len(user.servers(
        reservation_id=resp.json()['reservation_id'])) == 1
    message = nova_error(_boot(user, 'd'), 403, 'forbidden')
    assert message.startswith('Quota exceeded for instances: Requested 1, '
                              'but already used 3 of 3 instances')

    limits = user.get('/v2.1/limits').json()['limits']
    assert limits['rate'] == []
    absolute = limits['absolute']
    assert (absolute['maxTotalInstances'], absolute['totalInstancesUsed'],
            absolute['maxTotalCores'], absolute['totalCoresUsed']) == (
        3, 3, 4, 3)

    # A deleted server counts no more.
    victim = user.servers()[0]['id']
    assert user.delete('/v2.1/servers/%s' % victim).status_code == 204
    user.wait_gone(victim)
    assert _boot(user, 'e').status_code == 202

    # Cores: m1.medium has 2 vCPUs; 3 of 4 are in use.
    _set_quota(api, 'p1', instances=10)
    message = nova_error(_boot(user, 'f', flavor='3'), 403, 'forbidden')
    assert message.startswith('Quota exceeded for cores: Requested 2, but '
                              'already used 3 of 4 cores')
    used_ram = _quota(api, 'p1', '/detail')['ram']['in_use']
    _set_quota(api, 'p1', cores=-1, ram=used_ram)
    message = nova_error(_boot(user, 'g'), 403, 'forbidden')
    assert message.startswith('Quota exceeded for ram: Requested ')

    # A limit below what is used needs force.
    nova_error(api.put('/v2.1/os-quota-sets/p1',
                       {'quota_set': {'instances': 1}}), 400, 'badRequest')
    assert _set_quota(api, 'p1', instances=1, force=True)['instances'] == 1
    detail = _quota(api, 'p1', '/detail')
    assert (detail['instances']['in_use'], detail['cores']['in_use']) == (
        3, 3)


def test_group_and_metadata_quotas(start_system):
    api = start_system(cells=1, hosts_per_cell=2, quotas=True).api
    user = api.as_user('u1:p1')
    _set_quota(api, 'p1', server_groups=1, server_group_members=1)
    resp = user.post('/v2.1/os-server-groups', {'server_group': {
        'name': 'g', 'policy': 'anti-affinity'}})
    assert resp.status_code == 200, resp.text
    group = resp.json()['server_group']['id']
    nova_error(user.post('/v2.1/os-server-groups', {'server_group': {
        'name': 'g2', 'policy': 'affinity'}}), 403, 'forbidden')
    body = {'server': {'name': 'm', 'flavorRef': '1', 'networks': 'none',
                       'imageRef': _image()},
            'os:scheduler_hints': {'group': group}}
    assert user.post('/v2.1/servers', body).status_code == 202
    assert 'too many servers in group' in nova_error(
        user.post('/v2.1/servers', body), 403, 'forbidden')
    nova_error(_boot(user, 'meta', metadata={
        'k%d' % i: 'v' for i in range(129)}), 403, 'forbidden')


def _image():
    from scheduler_split.image import catalog as images
    return images.find('cirros')[0]


def test_key_pairs_in_novas_shapes(start_system):
    system = start_system(cells=1, hosts_per_cell=1, quotas=True)
    user = system.api.as_user('u1:p1')
    # Generated key pairs are there until 2.91.
    resp = user.at('2.91').post('/v2.1/os-keypairs',
                                {'keypair': {'name': 'gen'}})
    assert resp.status_code == 201, resp.text
    generated = resp.json()['keypair']
    assert generated['private_key'].startswith('-----BEGIN RSA PRIVATE KEY')
    assert generated['public_key'].startswith('ssh-rsa ')
    assert generated['type'] == 'ssh' and generated['user_id'] == 'u1'
    assert len(generated['fingerprint'].split(':')) == 16
    # 2.2's x509 key pairs: a self-signed certificate, or an imported one.
    resp = user.at('2.91').post('/v2.1/os-keypairs', {'keypair': {
        'name': 'cert', 'type': 'x509'}})
    assert resp.status_code == 201, resp.text
    cert = resp.json()['keypair']
    assert cert['public_key'].startswith('-----BEGIN CERTIFICATE')
    assert cert['type'] == 'x509'
    assert len(cert['fingerprint'].split(':')) == 20
    resp = user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'cert2', 'type': 'x509', 'public_key': cert['public_key']}})
    assert resp.status_code == 201, resp.text
    assert resp.json()['keypair']['fingerprint'] == cert['fingerprint']
    nova_error(user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'cert3', 'type': 'x509', 'public_key': SSH_KEY}}), 400,
        'badRequest')
    assert user.delete('/v2.1/os-keypairs/cert2').status_code in (202, 204)

    resp = user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'imported.key', 'public_key': SSH_KEY}})
    assert resp.status_code == 201, resp.text
    assert 'private_key' not in resp.json()['keypair']
    old = user.at('2.1').post('/v2.1/os-keypairs', {'keypair': {
        'name': 'old', 'public_key': SSH_KEY}})
    assert old.status_code == 200 and 'type' not in old.json()['keypair']

    listed = user.get('/v2.1/os-keypairs').json()['keypairs']
    assert [k['keypair']['name'] for k in listed] == [
        'cert', 'gen', 'imported.key', 'old']
    page = user.get('/v2.1/os-keypairs', params={'limit': 1}).json()
    assert [k['keypair']['name'] for k in page['keypairs']] == ['cert']
    assert 'marker=cert' in page['keypairs_links'][0]['href']
    shown = user.get('/v2.1/os-keypairs/imported.key').json()['keypair']
    assert (shown['name'], shown['user_id'], shown['deleted']) == (
        'imported.key', 'u1', False)
    # Another user has none of them.
    assert system.api.as_user('u2:p1').get(
        '/v2.1/os-keypairs').json()['keypairs'] == []

    nova_error(user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'gen', 'public_key': SSH_KEY}}), 409, 'conflictingRequest')
    nova_error(user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'bad', 'public_key': 'ssh-rsa not-a-key'}}), 400,
        'badRequest')
    nova_error(user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'a/b', 'public_key': SSH_KEY}}), 400, 'badRequest')
    nova_error(user.at('2.92').post('/v2.1/os-keypairs', {'keypair': {
        'name': 'nokey'}}), 400, 'badRequest')
    nova_error(user.get('/v2.1/os-keypairs', params={'marker': 'zzz'}),
               400, 'badRequest')

    # At boot, key_name names one of the caller's key pairs.
    assert _boot(user, 'k', key_name='gen').status_code == 202
    assert nova_error(_boot(user, 'k2', key_name='nope'), 400,
                      'badRequest') == 'Invalid key_name provided.'

    assert user.delete('/v2.1/os-keypairs/gen').status_code == 204
    assert user.at('2.1').delete(
        '/v2.1/os-keypairs/old').status_code == 202
    nova_error(user.get('/v2.1/os-keypairs/gen'), 404, 'itemNotFound')

    system.api.put('/v2.1/os-quota-sets/p1',
                   {'quota_set': {'key_pairs': 1}})
    nova_error(user.post('/v2.1/os-keypairs', {'keypair': {
        'name': 'x', 'public_key': SSH_KEY}}), 403, 'forbidden')
