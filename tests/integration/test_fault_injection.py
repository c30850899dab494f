"""Each component SIGKILLed in the middle of a burst of boots: once it
is back, every accepted server is ACTIVE (but those whose every host
failed the spawn as the fake driver was told to, or that found no room),
no build is left in BUILD, every listed server can be shown and
deleted, claims follow the live servers, no host is over capacity, and
no request was answered with a 500. A database server's restart also
leaves no traceback in any service's log, and one WARNING for it at
most in each.

One deployment (two cells of two computes, two schedulers, RabbitMQ and
PostgreSQL) serves every victim in turn; each prints one line of
figures; a second one, on MariaDB, serves the round of its database
server. Their timers are short so that lost builds and leaked claims are
settled within the test's bounds.
"""

import datetime
import os
import re
import time

import pytest

from tests.integration import backends
from tests.integration import conftest
from tests.integration import deployment as deployment_mod
from tests.integration import faults

pytestmark = [pytest.mark.integration, pytest.mark.faults,
              pytest.mark.serial]

LOST_BUILD_TIMEOUT = 15
# Boots the bus lost are cast again after this long (three times at
# most, within LOST_BUILD_TIMEOUT); computes look this often for builds
# on their host that no longer run.
REDRIVE_INTERVAL = 3
UNFINISHED_BUILD_CHECK_INTERVAL = 3
HEAL_INTERVAL = 3
HEAL_GRACE = 5
# How long the claims may take to follow the servers: one heal after
# the grace, and some slack for a loaded machine.
HEAL_WINDOW = HEAL_GRACE + 2 * HEAL_INTERVAL + 10
# Seconds a victim stays dead, the burst going on meanwhile; a database
# server longer, as a restart of a real one takes (and well within
# [database] retry_timeout, which the services wait it out for).
DOWN = 3
DATABASE_DOWN = 6
# Seconds after the victim is back within which every build settles.
SETTLE = 120
# A line of a service's log that is a WARNING about a database: its
# outage, or work that failed for it.
DATABASE_WARNING = re.compile(
    r' WARNING .*(database|psycopg|pymysql|OperationalError|'
    r'InterfaceError|DisconnectionError)', re.IGNORECASE)
# What a database server's restart may leave in each service's log: one
# WARNING, its first sign there (the requests, tasks, tries and steps
# that meet it next log at DEBUG), not one per request, task or try.
DATABASE_WARNINGS = 1

# A spawn takes a second and one in five fails (and is rescheduled by
# its cell conductor), so that every service has work in flight.
SPAWN_DELAY = 1.0
FAILURE_RATE = 0.2

# victim -> (the process killed, or None for a backend killed and
# restarted on its port and data directory; seconds from a boot's 202 to
# the kill, when the victim is likely to be working on that boot).
VICTIMS = {
    'scheduler': ('scheduler', 0.05),
    'super-conductor': ('super-conductor', 0.0),
    'cell-conductor': ('conductor-cell1', SPAWN_DELAY),
    'compute': ('cell1-compute2', 0.5),
    'api': ('api', 0.0),
    'rabbitmq': (None, 0.3),
    'postgresql': (None, 0.3),
    'mariadb': (None, 0.3),
}
# The victims of each deployment: every one on PostgreSQL; on MariaDB,
# its database server.
ROUNDS = [pytest.param('postgresql', victim,
                       id='postgresql-%s' % victim)
          for victim in VICTIMS if victim != 'mariadb'] + [
    pytest.param('mariadb', 'mariadb', id='mariadb-mariadb',
                 marks=pytest.mark.mariadb)]


@pytest.fixture(scope='module')
def system(request, tmp_path_factory):
    dep = deployment_mod.Deployment(tmp_path_factory.mktemp('faults'),
                                    schedulers=2,
                                    database=conftest.database(request))
    processes = (['api', 'super-conductor', 'scheduler', 'scheduler-2'] +
                 ['conductor-%s' % cell for cell in dep.CELLS] + dep.hosts)
    # service_down_time stays at its default: a broker restart shorter
    # than it must not make every compute look down.
    dep.add_config(processes, 'faults.conf', faults.timers_conf(
        LOST_BUILD_TIMEOUT, REDRIVE_INTERVAL, HEAL_INTERVAL, HEAL_GRACE,
        UNFINISHED_BUILD_CHECK_INTERVAL, SPAWN_DELAY, FAILURE_RATE))
    try:
        yield dep.bring_up()
    finally:
        dep.teardown()


def _log(dep, text):
    """A line in the deployment's log directory, beside the services'
    logs, to tell what the test did when."""
    with open(os.path.join(dep.log_dir, 'faults.log'), 'a') as f:
        f.write('%s %s\n' % (datetime.datetime.now().isoformat(' '), text))


def _kill_and_bring_back(dep, victim):
    """SIGKILL the victim, leave it dead for DOWN seconds (a database
    server DATABASE_DOWN), start it again and wait until it serves."""
    name = VICTIMS[victim][0]
    if victim == 'rabbitmq':
        dep.rabbit.kill_and_restart(down=DOWN)
        # Every compute's report crossing its cell bus to a scheduler.
        dep.wait_for_hosts(dep.hosts, timeout=120)
        return
    if victim in backends.DATABASES:
        dep.database.kill_and_restart(down=DATABASE_DOWN)
        dep.wait_for_hosts(dep.hosts, timeout=120)
        return
    dep.kill(name)
    time.sleep(DOWN)
    since = dep.log_size(name)
    dep.start(name)
    if name == 'api':
        dep.wait_for_api()
    elif name in dep.hosts:
        dep.wait_for_log(name, ' started', since)
        dep.wait_for_hosts([name])
    else:
        dep.wait_for_log(name, ' started', since)


@pytest.mark.parametrize('system,victim', ROUNDS, indirect=['system'],
                         scope='module')
def test_sigkill_mid_burst_leaves_no_build_stuck_and_no_claim_astray(
        system, victim, capsys):
    client = faults.Client(system.base_url)
    faults.healthy(system, client, HEAL_WINDOW)
    client = faults.Client(system.base_url)
    # Where what the services log during the round starts.
    log_sizes = system.log_sizes()
    _log(system, '%s: burst' % victim)
    burst = faults.Burst(client, 'kill-%s' % victim,
                         seed=list(VICTIMS).index(victim)).start()
    try:
        burst.wait_for_busy_moment(after=6)
        time.sleep(VICTIMS[victim][1])
        _log(system, '%s: kill' % victim)
        _kill_and_bring_back(system, victim)
        back = time.monotonic()
        _log(system, '%s: back' % victim)
        # Some boots against the component just back.
        time.sleep(2)
    finally:
        burst.stop()
    figures = faults.verify(system, client, burst, HEAL_WINDOW, back,
                            settle_timeout=SETTLE)
    _log(system, '\n  '.join([figures.line(victim)] + figures.details))
    with capsys.disabled():
        print('\n' + figures.line(victim))

    assert figures.accepted, 'no boot was accepted: %s' % figures.line(
        victim)
    # Every accepted server ends ACTIVE, but those whose every host
    # failed their spawn as the driver was told to, or that found no
    # room (each counted on the line).
    problems = ['failed', 'stuck', 'lost', 'undeleted', 'ghosts',
                'leaked_claims', 'unclaimed', 'overcommitted', 'http_500',
                'malformed']
    if victim != 'api':
        # Only a dead API may leave a request without an answer.
        problems.append('unreachable')
    found = [p for p in problems if getattr(figures, p)]
    assert not found, '%s\n%s' % (figures.line(victim),
                                  '\n'.join(figures.details))
    if victim in backends.DATABASES:
        _check_logs_of_database_restart(system, log_sizes)


def _check_logs_of_database_restart(dep, log_sizes):
    """What every service wrote during the round (since ``log_sizes``)
    holds no traceback, nor more than DATABASE_WARNINGS WARNING lines
    about the database in any log; some service reported the outage."""
    written = dep.written_since(log_sizes)
    tracebacks = {name: text for name, text in written.items()
                  if 'Traceback' in text}
    assert not tracebacks, 'tracebacks in %s:\n%s' % (
        sorted(tracebacks), '\n'.join(
            text[max(0, text.index('Traceback') - 300):][:3000]
            for text in tracebacks.values()))
    warnings = {name: [line for line in text.splitlines()
                       if DATABASE_WARNING.search(line)]
                for name, text in written.items() if name.endswith('.log')}
    _log(dep, 'database WARNINGs per log: %s' % {
        name: len(lines) for name, lines in sorted(warnings.items())
        if lines})
    flooded = {name: lines for name, lines in warnings.items()
               if len(lines) > DATABASE_WARNINGS}
    assert not flooded, (
        'more than %d WARNING about the database in a log:\n%s' % (
            DATABASE_WARNINGS, '\n'.join(
                '%s:\n  %s' % (name, '\n  '.join(
                    line[:300] for line in lines[:20]))
                for name, lines in sorted(flooded.items()))))
    assert any(warnings.values()), 'no service reported the outage'
