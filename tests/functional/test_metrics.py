"""What an operator scrapes from /metrics while servers boot.

Every test reads its numbers as differences between two scrapes: the
counters belong to the test process, which outlives each system.
"""

import os
import signal
import socket
import subprocess
import sys
import time

from prometheus_client import parser
import pytest
import requests

from scheduler_split import conf
from tests.functional import fixtures
from tests.integration import backends

pytestmark = pytest.mark.functional

CONF = conf.CONF

POST_SERVERS = ('scheduler_split_api_requests_total',
                {'route': '/v2.1/servers', 'method': 'POST',
                 'status': '202'})


def parse(text):
    """``{(sample name, ((label, value), ...)): value}`` of a scrape."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text)
            for s in family.samples}


def scrape(api):
    resp = api.get('/metrics')
    assert resp.status_code == 200, resp.text
    assert resp.headers['Content-Type'].startswith('text/plain; version=')
    return parse(resp.text)


class Scrapes:
    """A scrape before and one after: what moved in between."""

    def __init__(self, api):
        self.api = api
        self.before = scrape(api)
        self.after = None

    def again(self):
        self.after = scrape(self.api)
        return self

    def value(self, name, **labels):
        return self.after.get((name, tuple(sorted(labels.items()))), 0.0)

    def moved(self, name, **labels):
        key = (name, tuple(sorted(labels.items())))
        return self.after.get(key, 0.0) - self.before.get(key, 0.0)


def test_metrics_move_as_servers_boot_and_one_finds_no_host(start_system):
    system = start_system(cells=2, hosts_per_cell=2)
    api = system.api
    scrapes = Scrapes(api)

    fitting = [api.boot(name='fits%d' % i) for i in range(3)]
    # m1.xlarge wants all of a host's 16 GiB; each keeps 512 MiB back.
    too_big = api.boot(name='too-big', flavor='5')
    statuses = {s: api.wait_for(s)['status'] for s in fitting + [too_big]}
    assert statuses == dict.fromkeys(fitting, 'ACTIVE') | {too_big: 'ERROR'}
    active = sum(1 for status in statuses.values() if status == 'ACTIVE')

    m = scrapes.again()
    # The scheduler: four selects, three placed, one NoValidHost.
    assert m.moved('scheduler_split_scheduler_select_destinations_seconds'
                   '_count') == 4
    assert m.moved('scheduler_split_scheduler_select_destinations_seconds'
                   '_sum') > 0
    assert m.moved('scheduler_split_scheduler_select_destinations_total',
                   result='placed') == 3
    assert m.moved('scheduler_split_scheduler_select_destinations_total',
                   result='no_valid_host') == 1
    assert m.moved('scheduler_split_scheduler_select_destinations_total',
                   result='error') == 0
    assert m.moved('scheduler_split_scheduler_claims_total',
                   result='won') == active == 3
    assert m.moved('scheduler_split_scheduler_claims_total',
                   result='conflict') == 0
    # Each instance looked at all four hosts; m1.xlarge passed no filter.
    assert m.moved('scheduler_split_scheduler_filtered_hosts_count') == 4
    assert m.moved('scheduler_split_scheduler_filtered_hosts_sum') == 16
    assert m.moved('scheduler_split_scheduler_scored_hosts_count') == 4
    assert m.moved('scheduler_split_scheduler_scored_hosts_sum') == 12
    for cell in ('cell1', 'cell2'):
        assert m.value('scheduler_split_scheduler_known_hosts',
                       cell=cell) == 2
        assert m.value('scheduler_split_scheduler_usable_hosts',
                       cell=cell) == 2
    assert m.value('scheduler_split_scheduler_host_state_load_seconds'
                   '_count') >= 1
    # The conductors: three builds started, one instance in cell0.
    assert m.moved('scheduler_split_conductor_builds_started_total') == 3
    assert m.moved('scheduler_split_conductor_builds_buried_in_cell0_total',
                   reason='no_valid_host') == 1
    assert m.moved('scheduler_split_conductor_builds_rescheduled_total') == 0
    # The API: four boots accepted, each timed.
    assert m.moved(POST_SERVERS[0], **POST_SERVERS[1]) == 4
    assert m.moved('scheduler_split_api_request_duration_seconds_count',
                   route='/v2.1/servers', method='POST') == 4
    # Requests are counted under their route's template, not their path.
    assert m.moved('scheduler_split_api_requests_total',
                   route='/v2.1/servers/{server_id}', method='GET',
                   status='200') >= 4
    assert not any(too_big in dict(labels).get('route', '')
                   for _, labels in m.after)


def test_disabling_a_host_shows_in_the_usable_hosts(start_system):
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    compute = [s for s in api.get('/v2.1/os-services').json()['services']
               if s['host'] == 'cell1-compute1'][0]
    resp = api.put('/v2.1/os-services/%s' % compute['id'],
                   {'status': 'disabled'})
    assert resp.status_code == 200, resp.text

    m = Scrapes(api).again()
    assert m.value('scheduler_split_scheduler_known_hosts',
                   cell='cell1') == 2
    assert m.value('scheduler_split_scheduler_usable_hosts',
                   cell='cell1') == 1


def test_a_failing_host_shows_as_a_reschedule(start_system, fake_driver):
    fake_driver('fail_hosts', ['cell1-compute1'])
    system = start_system(cells=1, hosts_per_cell=2)
    api = system.api
    scrapes = Scrapes(api)
    # Two instances on two equal hosts: one is claimed on the failing
    # host first, fails there and goes to its alternate.
    api.boot(name='pair', count=2)
    servers = [api.wait_for(s['id']) for s in api.servers()]
    assert [s['status'] for s in servers] == ['ACTIVE', 'ACTIVE']

    m = scrapes.again()
    assert m.moved('scheduler_split_scheduler_select_destinations_total',
                   result='placed') == 1
    assert m.moved('scheduler_split_conductor_builds_started_total') == 2
    assert m.moved('scheduler_split_conductor_builds_rescheduled_total') == 1
    assert m.moved('scheduler_split_conductor_reschedules_exhausted_total') \
        == 0
    # The failed host's claim was won too (and given back).
    assert m.moved('scheduler_split_scheduler_claims_total',
                   result='won') == len(servers) + 1
    assert m.moved(POST_SERVERS[0], **POST_SERVERS[1]) == 1


def test_only_admins_read_the_metrics(start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    member = system.api.as_user('demo:demo')
    message = fixtures.nova_error(member.get('/metrics'), 403, 'forbidden')
    assert 'scheduler_split:metrics' in message
    assert system.api.get('/metrics').status_code == 200

    keystone_member = system.as_keystone_user('u1', 'p1', ['member'])
    assert keystone_member.get('/metrics').status_code == 403
    keystone_admin = system.as_keystone_user('u0', 'p0', ['admin'])
    resp = keystone_admin.get('/metrics')
    assert resp.status_code == 200
    assert 'scheduler_split_scheduler_claims_total' in resp.text
    # Without a validated token, nothing.
    resp = requests.get(keystone_admin.base_url + '/metrics', timeout=30)
    assert resp.status_code == 401


def test_an_api_not_listed_in_enabled_services_has_no_metrics(
        start_system):
    system = start_system(cells=1, hosts_per_cell=1)
    CONF.set_override('enabled_services', ['scheduler'], group='metrics')
    fixtures.nova_error(system.api.get('/metrics'), 404, 'itemNotFound')


def _scrape_port(port):
    return requests.get('http://127.0.0.1:%d/metrics' % port, timeout=5)


def test_a_scheduler_process_serves_its_metrics_on_its_own_port(tmp_path):
    port = backends.free_port()
    config = tmp_path / 'scheduler-split.conf'
    config.write_text(
        '[DEFAULT]\n'
        'transport_url = kombu+memory:////api\n'
        'host = metrics-test\n'
        '[api_database]\n'
        'connection = sqlite:///%(dir)s/api.sqlite\n'
        '[scheduler_database]\n'
        'connection = sqlite:///%(dir)s/scheduler.sqlite\n'
        '[metrics]\n'
        'scheduler_port = %(port)d\n' % {'dir': tmp_path, 'port': port})
    bin_dir = os.path.dirname(sys.executable)
    subprocess.run([os.path.join(bin_dir, 'scheduler-split-manage'),
                    '--config-file', str(config), 'db', 'sync'],
                   check=True, capture_output=True, timeout=120)
    proc = subprocess.Popen(
        [os.path.join(bin_dir, 'scheduler-split-scheduler'),
         '--config-file', str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                resp = _scrape_port(port)
                break
            except requests.ConnectionError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, 'no metrics port'
                time.sleep(0.1)
        assert resp.status_code == 200
        assert resp.headers['Content-Type'].startswith('text/plain')
        found = parse(resp.text)
        names = {name for name, _ in found}
        # The scheduler's own metrics, at rest, and its process's.
        assert found[('scheduler_split_scheduler_select_destinations_'
                      'seconds_count', ())] == 0
        assert found[('scheduler_split_scheduler_host_state_load_seconds_'
                      'count', ())] >= 1
        assert 'process_cpu_seconds_total' in names
        # Nothing of the services it is not.
        assert not [n for n in names
                    if n.startswith(('scheduler_split_api_',
                                     'scheduler_split_conductor_'))]
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    # The port closed with the service.
    with socket.socket() as sock:
        assert sock.connect_ex(('127.0.0.1', port)) != 0


def test_gunicorn_workers_add_up_in_every_scrape(tmp_path):
    """Each worker serves one request and is replaced, so that every
    scrape reaches a worker that saw almost none of them: only the sum
    kept in PROMETHEUS_MULTIPROC_DIR shows them all."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    port = backends.free_port()
    config = tmp_path / 'api.conf'
    config.write_text(
        '[DEFAULT]\n'
        'transport_url = kombu+memory:////api\n'
        '[api]\n'
        'auth_strategy = noauth2\n'
        '[api_database]\n'
        'connection = sqlite:///%s/api.sqlite\n' % tmp_path)
    multiproc = tmp_path / 'metrics'
    multiproc.mkdir()
    env = dict(os.environ, SCHEDULER_SPLIT_CONFIG_FILES=str(config),
               PROMETHEUS_MULTIPROC_DIR=str(multiproc))
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), 'gunicorn'),
         '--config', os.path.join(root, 'etc', 'scheduler-split',
                                  'multi-cell', 'gunicorn.conf.py'),
         '--bind', '127.0.0.1:%d' % port, '--workers', '2',
         '--max-requests', '1', '--access-logfile', '-',
         'scheduler_split.api.wsgi_app:application'],
        cwd=str(tmp_path), env=env, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    url = 'http://127.0.0.1:%d' % port

    def get(path):
        deadline = time.monotonic() + 60
        while True:
            try:
                # A connection each: no keep-alive to one worker.
                return requests.get(url + path, timeout=30,
                                    headers={'Connection': 'close'})
            except requests.ConnectionError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline, 'gunicorn never answered'
                time.sleep(0.1)

    try:
        answered = 0
        for _ in range(6):
            assert get('/v2.1/').status_code == 200
            answered += 1
        scrapes = []
        for _ in range(2):
            resp = get('/metrics')
            assert resp.status_code == 200, resp.text
            scrapes.append(parse(resp.text).get((
                'scheduler_split_api_requests_total',
                (('method', 'GET'), ('route', '/v2.1/'),
                 ('status', '200')))))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert scrapes == [answered, answered]
