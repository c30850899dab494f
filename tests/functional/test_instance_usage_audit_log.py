"""``/os-instance_usage_audit_log``: an admin asks how far the computes'
usage audit of a period got; no compute runs that audit here, so every
compute host is reported as not run, in Nova's shape and words."""

import datetime
import urllib.parse

import pytest

from tests.functional.fixtures import nova_error

pytestmark = pytest.mark.functional

KEYS = {'hosts_not_run', 'log', 'num_hosts', 'num_hosts_done',
        'num_hosts_not_run', 'num_hosts_running', 'overall_status',
        'period_beginning', 'period_ending', 'total_errors',
        'total_instances'}


def _compute_hosts(api):
    services = api.get('/v2.1/os-services',
                       params={'binary': 'nova-compute'}).json()['services']
    return sorted(s['host'] for s in services)


def test_every_compute_host_counts_as_not_run_for_the_last_month(
        start_system):
    api = start_system(cells=2, hosts_per_cell=2).api
    hosts = _compute_hosts(api)
    assert len(hosts) == 4

    resp = api.get('/v2.1/os-instance_usage_audit_log')

    assert resp.status_code == 200, resp.text
    log = resp.json()['instance_usage_audit_logs']
    assert set(log) == KEYS
    assert sorted(log['hosts_not_run']) == hosts
    assert (log['num_hosts'], log['num_hosts_not_run'],
            log['num_hosts_done'], log['num_hosts_running']) == (4, 4, 0, 0)
    assert log['overall_status'] == '0 of 4 hosts done. 0 errors.'
    assert (log['log'], log['total_errors'], log['total_instances']) == (
        {}, 0, 0)
    # The last calendar month that ended: from the 1st of the month
    # before this one to the 1st of this one, at midnight UTC.
    now = datetime.datetime.utcnow()
    ending = datetime.datetime(now.year, now.month, 1)
    assert log['period_ending'] == str(ending)
    assert log['period_beginning'] < log['period_ending']
    assert log['period_beginning'].endswith('-01 00:00:00')


@pytest.mark.parametrize('before, beginning, ending', [
    ('2024-03-15 10:20:30', '2024-02-01 00:00:00', '2024-03-01 00:00:00'),
    ('2024-01-10 00:00:00.5', '2023-12-01 00:00:00',
     '2024-01-01 00:00:00'),
    # A period that ends exactly then is not over before it.
    ('2024-03-01 00:00:00', '2024-01-01 00:00:00', '2024-02-01 00:00:00'),
])
def test_the_audit_before_a_time_is_of_the_last_month_ended_before_it(
        start_system, before, beginning, ending):
    api = start_system(cells=1, hosts_per_cell=1).api

    resp = api.get('/v2.1/os-instance_usage_audit_log/%s'
                   % urllib.parse.quote(before))

    assert resp.status_code == 200, resp.text
    log = resp.json()['instance_usage_audit_log']
    assert set(log) == KEYS
    assert (log['period_beginning'], log['period_ending']) == (beginning,
                                                               ending)
    assert log['overall_status'] == '0 of 1 hosts done. 0 errors.'


@pytest.mark.parametrize('before', [
    'invalid_time', '2024-13-01 00:00:00', '2024-03-01T00:00:00',
    '0001-01-01 00:00:00'])
def test_a_time_that_is_not_one_is_a_400(start_system, before):
    api = start_system(cells=1, hosts_per_cell=1).api

    resp = api.get('/v2.1/os-instance_usage_audit_log/%s'
                   % urllib.parse.quote(before))

    assert nova_error(resp, 400, 'badRequest') == (
        'Invalid timestamp for date %s' % before)


def test_only_admins_read_the_audit_log(start_system):
    user = start_system(cells=1, hosts_per_cell=1).api.as_user('u1:p1')

    for path in ('/v2.1/os-instance_usage_audit_log',
                 '/v2.1/os-instance_usage_audit_log/2024-03-01%2000:00:00'):
        nova_error(user.get(path), 403, 'forbidden')
