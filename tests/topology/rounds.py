"""What every fault round of the clustered cloud shares: its timers and
injected spawn failures, the fake hosts' records of what they run, and
a round itself (a burst of boots, the fault in its middle, then
:func:`tests.integration.faults.verify`)."""

import os
import time

from tests.integration import faults

# Longer than a controller takes to come back (its RabbitMQ and Galera
# nodes rejoin their clusters first): a build it held is re-driven,
# not given up.
LOST_BUILD_TIMEOUT = 60
REDRIVE_INTERVAL = 3
HEAL_INTERVAL = 3
HEAL_GRACE = 5
HEAL_WINDOW = HEAL_GRACE + 2 * HEAL_INTERVAL + 15
SETTLE = 180
SPAWN_DELAY = 1.0
FAILURE_RATE = 0.2
# What must be 0 after every round. The cloud has room for every server
# a burst can ask for (36 requests of at most 3 servers, ROOM_PER_HOST
# on each of 4 hosts): a boot that found no host did not lack room.
PROBLEMS = ('failed', 'no_room', 'stuck', 'lost', 'undeleted', 'ghosts',
            'leaked_claims', 'unclaimed', 'overcommitted', 'twice',
            'misrun', 'http_500', 'malformed', 'unreachable')


def record_dir(cloud):
    return os.path.join(cloud.base, 'records')


def configure(cloud):
    """The rounds' timers, injected failures and records, the same for
    every module of rounds (so that the services start once for all)."""
    cloud.configure({'faults.conf': faults.timers_conf(
        LOST_BUILD_TIMEOUT, REDRIVE_INTERVAL, HEAL_INTERVAL, HEAL_GRACE, 3,
        SPAWN_DELAY, FAILURE_RATE, record_dir=record_dir(cloud))})
    return cloud


def run(cloud, mode, victim, fault, seed, after=None):
    """A burst of boots with ``fault()`` (what it hit, in words) in its
    middle, and ``after()`` once it ended, the burst still going: the
    figures, and the line that says them."""
    client = faults.Client(cloud.api_urls[0])
    cloud.set_mode(mode)
    faults.healthy(cloud, client, HEAL_WINDOW)
    runs = faults.Runs(record_dir(cloud)).start()
    burst = faults.Burst(client, victim, seed=seed).start()
    try:
        burst.wait_for_busy_moment(after=6)
        struck = time.monotonic()
        hit = fault()
        back = time.monotonic()
        if after is not None:
            after()
        cloud.wait_for_hosts(cloud.hosts, timeout=120)
        time.sleep(2)
    finally:
        burst.stop()
    figures = faults.verify(cloud, client, burst, HEAL_WINDOW, back,
                            settle_timeout=SETTLE, struck=struck, runs=runs)
    line = '%s %s %s down=%.1fs %s' % (
        figures.line(victim), mode, hit, back - struck,
        figures.timing_line())
    return figures, line


def problems(figures):
    return [p for p in PROBLEMS if getattr(figures, p)]
