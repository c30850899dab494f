"""Bursts of boots through the REST API, and what must hold after a
component died in the middle of one.

A :class:`Burst` posts boots (single and multi-instance) and a few
deletes from several threads, and keeps every answer. :func:`verify`
then waits for the builds to settle and checks, as an operator or a user
could: every accepted server ends ACTIVE or in ERROR with a fault (and
an ERROR is explained: injected spawn failures on every host tried, or
no room), every
listed server can be shown and deleted, claims match live servers, no
host is over capacity, and no request was answered with a 500.
"""

import collections
import dataclasses
import glob
import json
import os
import random
import re
import threading
import time

import requests

from scheduler_split.compute.virt.fake import RUNNING

# The states a build may rest in.
FINAL = ('ACTIVE', 'ERROR')
# The only 5xx a request may get while a component is down.
UNAVAILABLE = 503


class Client:
    """Speaks to the API as admin:admin and keeps every answer's status:
    refusals (4xx, 503 with a Retry-After) in Nova's error shape are
    expected while a component is down; a 500, an error in another shape,
    or no answer at all are counted apart."""

    def __init__(self, base_url, timeout=60):
        self.base_url = base_url
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers['X-Auth-Token'] = 'admin:admin'
        self.session.headers['OpenStack-API-Version'] = 'compute 2.96'
        self.lock = threading.Lock()
        self.refused = 0
        self.http_500 = []
        self.malformed = []
        self.unreachable = 0
        # What each request without an answer met.
        self.unanswered = []

    def request(self, method, path, **kwargs):
        """The response, or None when none came (connection refused or
        cut, timeout)."""
        try:
            resp = self.session.request(method, self.base_url + path,
                                        timeout=self.timeout, **kwargs)
        except requests.RequestException as exc:
            with self.lock:
                self.unreachable += 1
                self.unanswered.append('%s %s: %r' % (method, path, exc))
            return None
        if resp.status_code >= 400:
            with self.lock:
                if resp.status_code >= 500 and \
                        resp.status_code != UNAVAILABLE:
                    self.http_500.append('%s %s: %s %s' % (
                        method, path, resp.status_code, resp.text[:300]))
                else:
                    self.refused += 1
                if not _nova_error_shape(resp) or (
                        resp.status_code == UNAVAILABLE and
                        'Retry-After' not in resp.headers):
                    self.malformed.append('%s %s: %s %s %s' % (
                        method, path, resp.status_code,
                        dict(resp.headers), resp.text[:300]))
        return resp

    def servers(self):
        """Every server of the project by name, or None if the API could
        not list them."""
        resp = self.request('GET', '/v2.1/servers/detail')
        if resp is None or resp.status_code != 200:
            return None
        return {s['name']: s for s in resp.json()['servers']}


def _nova_error_shape(resp):
    """``{"<name>": {"code": <status>, "message": "..."}}``."""
    try:
        body = resp.json()
    except ValueError:
        return False
    if not isinstance(body, dict) or len(body) != 1:
        return False
    (inner,) = body.values()
    return (isinstance(inner, dict) and inner.get('code') == resp.status_code
            and isinstance(inner.get('message'), str))


class Burst:
    """Threads posting boots (some for several servers at once) and a few
    deletes of servers they booted, until stopped or ``max_requests`` were
    answered. A request without an answer (the API is down) spends none
    of the budget; its thread waits a second before the next.

    Each request gets a name of its own (``<prefix>-<n>``; a boot of k
    servers names them ``<prefix>-<n>-1`` ... ``-k``), so the servers of
    every accepted request can be found in the list whatever id the
    answer carried.
    """

    def __init__(self, client, prefix, threads=3, pause=0.3,
                 max_requests=36, seed=0):
        self.client = client
        self.prefix = prefix
        self.threads = threads
        self.pause = pause
        self.max_requests = max_requests
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.sent = 0
        self.answered = 0
        # Names of the servers of every boot answered 202.
        self.accepted = set()
        # name -> id of single boots answered 202, candidates for delete.
        self.deletable = {}
        # Names of servers whose DELETE was answered 204.
        self.deleted = set()
        # name -> when its boot was answered 202 (time.monotonic()).
        self.accepted_at = {}
        self.started = None
        # Set at each 202 for a boot of several servers: a moment when
        # every service has work in flight.
        self.multi_accepted = threading.Event()
        self._workers = []
        from scheduler_split.image import catalog as images
        self.image = images.find('cirros')[0]

    def start(self):
        self.started = time.monotonic()
        for index in range(self.threads):
            worker = threading.Thread(target=self._run, daemon=True,
                                      name='burst-%d' % index)
            worker.start()
            self._workers.append(worker)
        return self

    def stop(self):
        self.stopping.set()
        for worker in self._workers:
            worker.join(timeout=self.client.timeout + 10)

    def wait_for_requests(self, count, timeout=60):
        deadline = time.monotonic() + timeout
        while self.sent < count and time.monotonic() < deadline:
            time.sleep(0.05)

    def wait_for_busy_moment(self, after, timeout=60):
        """Wait until ``after`` requests went out and then for the next
        boot of several servers to be accepted."""
        self.wait_for_requests(after, timeout)
        self.multi_accepted.clear()
        self.multi_accepted.wait(timeout)

    def _next(self):
        """The next request to send: ('boot', name, count) or
        ('delete', name, id); None once the budget is spent."""
        with self.lock:
            if self.answered >= self.max_requests:
                return None
            self.sent += 1
            number = self.sent
            roll = self.random.random()
            if roll < 0.15 and self.deletable:
                name = self.random.choice(sorted(self.deletable))
                return ('delete', name, self.deletable.pop(name))
            count = self.random.choice((2, 3)) if roll > 0.75 else 1
            return ('boot', '%s-%d' % (self.prefix, number), count)

    def _run(self):
        while not self.stopping.is_set():
            step = self._next()
            if step is None:
                return
            if step[0] == 'boot':
                resp = self._boot(step[1], step[2])
            else:
                resp = self._delete(step[1], step[2])
            if resp is None:
                self.stopping.wait(1)
                continue
            with self.lock:
                self.answered += 1
            self.stopping.wait(self.pause)

    def _boot(self, name, count):
        server = {'name': name, 'flavorRef': '1', 'imageRef': self.image,
                  'networks': 'none'}
        if count > 1:
            server['min_count'] = server['max_count'] = count
        resp = self.client.request('POST', '/v2.1/servers',
                                   json={'server': server})
        if resp is None or resp.status_code != 202:
            return resp
        now = time.monotonic()
        with self.lock:
            if count == 1:
                names = [name]
                self.deletable[name] = resp.json()['server']['id']
            else:
                names = ['%s-%d' % (name, index)
                         for index in range(1, count + 1)]
                self.multi_accepted.set()
            self.accepted.update(names)
            self.accepted_at.update(dict.fromkeys(names, now))
        return resp

    def _delete(self, name, server_id):
        resp = self.client.request('DELETE', '/v2.1/servers/%s' % server_id)
        if resp is not None and resp.status_code == 204:
            with self.lock:
                self.deleted.add(name)
        return resp


class Runs:
    """What the fake hosts run, from their records in ``record_dir``
    (``[fake_driver] record_dir``), looked at every ``interval`` seconds
    from :meth:`start` to :meth:`stop`: the servers seen running on two
    hosts at once, and for how long at most."""

    def __init__(self, record_dir, interval=0.2):
        self.record_dir = record_dir
        self.interval = interval
        # uuid -> (hosts, seconds seen on two or more at once)
        self.twice = {}
        self._since = {}
        self._stopping = threading.Event()
        self._thread = None
        # What stopped the looks, if anything did: the count would be
        # short, so verify fails on it.
        self.error = None

    def running(self):
        """``{uuid: {host}}`` of the servers running now."""
        found = {}
        for path in glob.glob(os.path.join(self.record_dir, '*.json')):
            host = os.path.basename(path)[:-len('.json')]
            try:
                with open(path) as f:
                    record = json.load(f)
            except FileNotFoundError:
                continue
            for uuid, power_state in record.items():
                if power_state == RUNNING:
                    found.setdefault(uuid, set()).add(host)
        return found

    def look(self):
        now = time.monotonic()
        doubled = {uuid: hosts for uuid, hosts in self.running().items()
                   if len(hosts) > 1}
        for uuid, hosts in doubled.items():
            since = self._since.setdefault(uuid, now)
            seen, longest = self.twice.get(uuid, (set(), 0.0))
            self.twice[uuid] = (seen | hosts, max(longest, now - since))
        for uuid in set(self._since) - set(doubled):
            del self._since[uuid]

    def start(self):
        def run():
            try:
                while not self._stopping.wait(self.interval):
                    self.look()
            except Exception as exc:
                self.error = repr(exc)

        self._thread = threading.Thread(target=run, daemon=True,
                                        name='runs')
        self._thread.start()
        return self

    def stop(self):
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
        self.look()
        return self


@dataclasses.dataclass
class Figures:
    """What one victim's run left behind; ``line`` is what it prints."""

    accepted: int = 0
    active: int = 0
    error: int = 0
    # Servers in ERROR because every host they tried failed their spawn,
    # as the fake driver was told to (its failure_rate), or because no
    # host had room: the only ERRORs a single fault may leave. Any other
    # ERROR is ``failed``.
    exhausted: int = 0
    no_room: int = 0
    failed: int = 0
    refused: int = 0
    stuck: int = 0
    lost: int = 0
    undeleted: int = 0
    ghosts: int = 0
    leaked_claims: int = 0
    unclaimed: int = 0
    overcommitted: int = 0
    # From the fake hosts' records (see Runs), when they keep them:
    # servers seen running on two hosts at once, and ACTIVE servers that
    # do not run on their host alone once settled.
    twice: int = 0
    misrun: int = 0
    http_500: int = 0
    malformed: int = 0
    unreachable: int = 0
    settle: float = 0.0
    # With the time of the fault: seconds from it to the first boot
    # accepted after it that ended ACTIVE, and the boots accepted per
    # second before it and while it lasted.
    recovered: float = None
    rate_before: float = None
    rate_during: float = None
    details: list = dataclasses.field(default_factory=list)

    def timing(self, burst, servers, struck, back):
        """Fill in ``recovered`` and the rates, for a fault from
        ``struck`` to ``back``."""
        times = burst.accepted_at
        after = [at for name, at in times.items() if at >= struck and
                 servers.get(name, {}).get('status') == 'ACTIVE']
        self.recovered = min(after) - struck if after else None
        self.rate_before = sum(at < struck for at in times.values()) / max(
            struck - burst.started, 0.001)
        self.rate_during = sum(
            struck <= at < back for at in times.values()) / max(
            back - struck, 0.001)

    def timing_line(self):
        return 'recovered=%s boots/s before=%.2f during=%.2f' % (
            'never' if self.recovered is None else
            '%.1fs' % self.recovered, self.rate_before, self.rate_during)

    def line(self, victim):
        return ('victim=%s accepted=%d active=%d error=%d exhausted=%d '
                'no_room=%d failed=%d refused=%d '
                'stuck=%d lost=%d undeleted=%d ghosts=%d leaked_claims=%d '
                'unclaimed=%d overcommitted=%d twice=%d misrun=%d '
                'http_500=%d malformed=%d unreachable=%d settle=%.1fs' % (
                    victim, self.accepted, self.active, self.error,
                    self.exhausted, self.no_room, self.failed,
                    self.refused, self.stuck, self.lost, self.undeleted,
                    self.ghosts, self.leaked_claims, self.unclaimed,
                    self.overcommitted, self.twice, self.misrun,
                    self.http_500, self.malformed, self.unreachable,
                    self.settle))

    def note(self, what, items):
        if items:
            self.details.append('%s: %s' % (what, sorted(items)[:10]))


_UUID = re.compile('[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                   '[0-9a-f]{12}')


def fault_messages(servers):
    """How many servers in ERROR show each fault message (uuids left
    out, so that alike faults count together)."""
    return collections.Counter(
        _UUID.sub('<uuid>', (s.get('fault') or {}).get('message', ''))
        for s in servers if s['status'] == 'ERROR')


# The faults a single fault may explain (see Figures).
EXHAUSTED = 'Exhausted all hosts available for retrying build failures'
NO_ROOM = 'No valid host was found'
# What the fake driver says of a spawn it was told to fail.
INJECTED = 'injected'


def _events(client, server_id):
    """Every event of the server's instance actions, oldest first, or
    None when they could not be read."""
    resp = client.request('GET', '/v2.1/servers/%s/os-instance-actions'
                          % server_id)
    if resp is None or resp.status_code != 200:
        return None
    events = []
    for action in resp.json()['instanceActions']:
        detail = client.request(
            'GET', '/v2.1/servers/%s/os-instance-actions/%s' % (
                server_id, action['request_id']))
        if detail is None or detail.status_code != 200:
            return None
        events += detail.json()['instanceAction']['events']
    return sorted(events, key=lambda e: e.get('start_time') or '')


def _attempts(events):
    """``(host, result, details)`` of every attempt to build the server
    (its compute's build events) among its ``events``."""
    return [(e.get('host'), e['result'], e.get('details') or '')
            for e in events or ()
            if e['event'] == 'compute_build_and_run_instance']


def _story(events):
    """The server's events, oldest first, as one line (what a failure
    shows)."""
    if events is None:
        return 'its actions could not be read'
    return '; '.join('%s %s %s %s' % (e['event'], e.get('host'),
                                      e['result'], e.get('details') or '')
                     for e in events)


def explain_errors(client, servers, figures):
    """Sort the servers in ERROR: ``exhausted`` when every attempt that
    ended on a host was a spawn the driver was told to fail (an attempt
    whose host died with it is none: its host never answered) and at
    least one was; ``no_room``; ``failed`` for any other."""
    failed = set()
    for name, server in servers.items():
        if server['status'] != 'ERROR':
            continue
        message = (server.get('fault') or {}).get('message', '')
        if NO_ROOM in message:
            figures.no_room += 1
            continue
        events = _events(client, server['id'])
        ended = [a for a in _attempts(events) if a[1] != 'Success']
        if EXHAUSTED in message and ended and all(
                INJECTED in details for _, _, details in ended):
            figures.exhausted += 1
            continue
        figures.failed += 1
        failed.add('%s: %s [%s]' % (name, message[:120], _story(events)))
    figures.note('ERROR for another reason than injected failures or no '
                 'room', failed)


def _settled(server):
    return server['status'] in FINAL and (
        server['status'] == 'ACTIVE' or (server.get('fault') or {}).get(
            'message'))


def settle(client, burst, since, timeout=120):
    """Wait until every server the burst got accepted is ACTIVE or in
    ERROR with a fault, every server it deleted is gone, and every other
    server of its prefix (one whose answer never came) is settled too, at
    most ``timeout`` seconds after ``since`` (a ``time.monotonic()``).
    Returns ``(servers by name, seconds since ``since``)``."""
    deadline = since + timeout
    servers = {}
    while True:
        listed = client.servers()
        if listed is not None:
            servers = listed
            mine = {n for n in servers
                    if n.startswith(burst.prefix + '-')}
            waiting = [n for n in burst.accepted - burst.deleted
                       if n not in servers or not _settled(servers[n])]
            waiting += [n for n in mine - burst.accepted
                        if not _settled(servers[n])]
            leftover = burst.deleted & set(servers)
            if not waiting and not leftover:
                break
        if time.monotonic() > deadline:
            break
        time.sleep(1)
    return servers, time.monotonic() - since


def claims(deployment):
    """``{consumer: {host}}`` from the scheduler database."""
    result = {}
    for consumer, host in deployment.allocations():
        result.setdefault(consumer, set()).add(host)
    return result


def claim_mismatch(deployment, servers):
    """Claims no live server needs, and ACTIVE servers whose claim is not
    on their host."""
    active = {s['id']: s['OS-EXT-SRV-ATTR:host'] for s in servers.values()
              if s['status'] == 'ACTIVE'}
    held = claims(deployment)
    leaked = set(held) - set(active)
    unclaimed = {sid for sid, host in active.items()
                 if held.get(sid) != {host}}
    return leaked, unclaimed


def overcommitted(deployment):
    """(host, resource class, used, capacity) over capacity."""
    return [row for row in deployment.usage() if row[2] > row[3]]


def delete_everything(client, figures, timeout=60):
    """Show and delete every listed server: a listed server GET or DELETE
    answers 404 for is a ghost; one still listed or shown ``timeout``
    seconds after its 204 is undeleted."""
    listed = client.servers() or {}
    ghosts, undeleted, pending = set(), set(), {}
    for name, server in listed.items():
        sid = server['id']
        resp = client.request('GET', '/v2.1/servers/%s' % sid)
        if resp is not None and resp.status_code == 404:
            ghosts.add(sid)
        resp = client.request('DELETE', '/v2.1/servers/%s' % sid)
        if resp is None:
            undeleted.add(sid)
        elif resp.status_code == 404:
            ghosts.add(sid)
        elif resp.status_code != 204:
            undeleted.add(sid)
        else:
            pending[sid] = name
    deadline = time.monotonic() + timeout
    while pending and time.monotonic() < deadline:
        now_listed = client.servers() or {}
        still = {s['id'] for s in now_listed.values()}
        for sid in list(pending):
            resp = client.request('GET', '/v2.1/servers/%s' % sid)
            if sid not in still and resp is not None and \
                    resp.status_code == 404:
                del pending[sid]
        time.sleep(0.5)
    undeleted |= set(pending)
    figures.ghosts += len(ghosts)
    figures.undeleted += len(undeleted)
    figures.note('ghosts', ghosts)
    figures.note('undeleted', undeleted)


def timers_conf(lost_build_timeout, redrive_interval, heal_interval,
                heal_grace, unfinished_build_check_interval, spawn_delay,
                failure_rate, record_dir=None):
    """The config file of a fault round's short timers and its fake
    driver's spawns (a delay, and a rate of injected failures), and
    where each fake host records what it runs (see :class:`Runs`)."""
    record = 'record_dir = %s' % record_dir if record_dir else ''
    return """\
        [DEFAULT]
        service_down_time = 60
        [conductor]
        lost_build_timeout = %d
        build_redrive_interval = %d
        heal_allocations_interval = %d
        heal_allocations_grace = %d
        [compute]
        unfinished_build_check_interval = %d
        [fake_driver]
        spawn_delay = %s
        failure_rate = %s
        %s
        """ % (lost_build_timeout, redrive_interval, heal_interval,
               heal_grace, unfinished_build_check_interval, spawn_delay,
               failure_rate, record)


def healthy(deployment, client, heal_window):
    """Every process running and every host reporting, no server left,
    and within ``heal_window`` no claim: one victim's failure does not
    spill into the next one's figures."""
    dead = deployment.dead()
    if dead:
        deployment.start(*dead)
    deployment.wait_for_api()
    deployment.wait_for_hosts(deployment.hosts, timeout=120)
    delete_everything(client, Figures())
    deadline = time.monotonic() + heal_window
    while claims(deployment) and time.monotonic() < deadline:
        time.sleep(1)


def verify(deployment, client, burst, heal_window, back,
           settle_timeout=120, struck=None, runs=None):
    """Everything that must hold once the victim is back (at ``back``, a
    ``time.monotonic()``); the figures, with their timing from the
    fault at ``struck`` when it is given, and what the fake hosts ran
    when ``runs`` (a started :class:`Runs`) looks at their records."""
    figures = Figures(accepted=len(burst.accepted), refused=client.refused)
    servers, figures.settle = settle(client, burst, back, settle_timeout)
    if struck is not None:
        figures.timing(burst, servers, struck, back)
    expected = burst.accepted - burst.deleted
    mine = {n for n in servers if n.startswith(burst.prefix + '-')}
    figures.details.append('faults: %s' % dict(fault_messages(
        servers[n] for n in mine)))
    lost = expected - set(servers)
    stuck = {n for n in (expected | mine) & set(servers)
             if not _settled(servers[n])}
    figures.lost, figures.stuck = len(lost), len(stuck)
    figures.note('lost', lost)
    figures.note('stuck', {'%s %s/%s' % (n, servers[n]['status'],
                                         servers[n]['OS-EXT-STS:task_state'])
                           for n in stuck})
    figures.active = sum(servers[n]['status'] == 'ACTIVE' for n in mine)
    figures.error = sum(servers[n]['status'] == 'ERROR' for n in mine)
    explain_errors(client, {n: servers[n] for n in mine}, figures)
    not_gone = burst.deleted & set(servers)
    figures.undeleted += len(not_gone)
    figures.note('deleted but still listed', not_gone)

    # Once the heal had its chance, claims follow the live servers.
    deadline = time.monotonic() + heal_window
    while True:
        servers = client.servers() or servers
        leaked, unclaimed = claim_mismatch(deployment, servers)
        if (not leaked and not unclaimed) or time.monotonic() > deadline:
            break
        time.sleep(1)
    figures.leaked_claims, figures.unclaimed = len(leaked), len(unclaimed)
    figures.note('leaked claims', leaked)
    figures.note('ACTIVE without their claim', unclaimed)
    over = overcommitted(deployment)
    figures.overcommitted = len(over)
    figures.note('over capacity', over)
    if runs is not None:
        runs.stop()
        assert runs.error is None, 'the records stopped being read: %s' % (
            runs.error)
        figures.twice = len(runs.twice)
        figures.note('running on two hosts (hosts, seconds)', {
            '%s %s %.1fs' % (uuid, sorted(hosts), seconds)
            for uuid, (hosts, seconds) in runs.twice.items()})
        running = runs.running()
        misrun = {'%s on %s, runs on %s' % (
            s['id'], s['OS-EXT-SRV-ATTR:host'],
            sorted(running.get(s['id'], ())))
            for s in servers.values() if s['status'] == 'ACTIVE' and
            running.get(s['id']) != {s['OS-EXT-SRV-ATTR:host']}}
        figures.misrun = len(misrun)
        figures.note('ACTIVE but not running on its host alone', misrun)

    delete_everything(client, figures)
    # Deleting every server gives every claim back (or the heal does).
    deadline = time.monotonic() + heal_window
    while claims(deployment) and time.monotonic() < deadline:
        time.sleep(1)
    left = set(claims(deployment))
    figures.leaked_claims += len(left)
    figures.note('claims left after deleting every server', left)

    figures.http_500 = len(client.http_500)
    figures.malformed = len(client.malformed)
    figures.unreachable = client.unreachable
    figures.note('no answer', client.unanswered)
    figures.note('500s', client.http_500)
    figures.note('not in Nova\'s error shape', client.malformed)
    return figures
