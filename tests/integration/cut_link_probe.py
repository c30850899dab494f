"""Run inside a network namespace of its own by test_cut_link: start a
private database server there, connect to it through the project's
engines, drop every packet to and from its port with iptables, and say
(JSON on standard output) how long each kind of call took to fail and
with what, then whether a call succeeds once the packets flow again.

Last, a transaction whose link goes between its write and its commit:
how long until another connection writes the row it holds.

Usage: python -m tests.integration.cut_link_probe BACKEND LINK_TIMEOUT \
    IDLE_TRANSACTION_TIMEOUT
"""

import json
import subprocess
import sys
import threading
import time

import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import outage
from tests.integration import backends

# What a statement that the server answers late looks like on each.
SLEEP = {'postgresql': 'SELECT pg_sleep(60)', 'mariadb': 'SELECT SLEEP(60)'}
# How long a call is given before it counts as hanging.
HANG = 90


def _iptables(action, port):
    for match in ('--dport', '--sport'):
        subprocess.run(['iptables', action, 'INPUT', '-p', 'tcp', match,
                        str(port), '-j', 'DROP'], check=True)


def _failure(func):
    """``func()``'s failure: (seconds, exception class, whether it is a
    database outage); ``None`` for the exception if it returned."""
    started = time.monotonic()
    try:
        func()
    except Exception as exc:
        return (round(time.monotonic() - started, 2), type(exc).__name__,
                outage.is_database_outage(exc))
    return round(time.monotonic() - started, 2), None, False


def _select_one(engine):
    with engine.connect() as conn:
        conn.execute(sa.text('SELECT 1'))


def _in_thread(func):
    """Run ``func`` in a thread (at most HANG seconds): what it raised,
    seconds from the start; a hang is ('hang', HANG)."""
    result = {}

    def run():
        with outage.not_waiting():
            result['failure'] = _failure(func)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def main(backend, link_timeout, idle_timeout):
    conf.CONF.set_override('link_timeout', link_timeout, group='database')
    conf.CONF.set_override('idle_transaction_timeout', idle_timeout,
                           group='database')
    server = backends.DATABASES[backend]()
    server.start()
    report = {}
    try:
        url = server.create_database('ss_cut')
        engine = engines.get_engine(url, writer=False)

        # A statement sent on a connection that was just used: its
        # packets go unacknowledged.
        _select_one(engine)
        _iptables('-A', server.port)
        thread, result = _in_thread(lambda: _select_one(engine))
        thread.join(HANG)
        report['statement'] = result.get('failure', ('hang', HANG))
        _iptables('-D', server.port)

        # A statement the server took and is working on when the link
        # goes: only keep-alive probes can tell the peer is gone.
        _select_one(engine)
        thread, result = _in_thread(lambda: _select_one_slow(engine,
                                                             backend))
        time.sleep(1)
        cut = time.monotonic()
        _iptables('-A', server.port)
        thread.join(HANG)
        if 'failure' in result:
            took = round(time.monotonic() - cut, 2)
            report['answer'] = (took,) + tuple(result['failure'][1:])
        else:
            report['answer'] = ('hang', HANG)
        _iptables('-D', server.port)

        # A pooled connection that rested, taken out while the link is
        # cut: its ping and then a new connection both meet the cut.
        _select_one(engine)
        time.sleep(engines.PING_AFTER_REST + 0.5)
        _iptables('-A', server.port)
        thread, result = _in_thread(lambda: _select_one(engine))
        thread.join(HANG)
        report['rested'] = result.get('failure', ('hang', HANG))
        _iptables('-D', server.port)

        # The link back: the next call is answered.
        thread, result = _in_thread(lambda: _select_one(engine))
        thread.join(HANG)
        report['healed'] = result.get('failure', ('hang', HANG))

        report['locks'] = _locks_of_a_cut_transaction(url, backend)
    finally:
        engines.dispose_all()
        server.stop()
    json.dump(report, sys.stdout)


# The client's port of the connection, as the server sees it.
CLIENT_PORT = {
    'postgresql': 'SELECT inet_client_port()',
    'mariadb': "SELECT SUBSTRING_INDEX(host, ':', -1) FROM "
               "information_schema.processlist WHERE id = CONNECTION_ID()"}


def _drop_connection(port, action):
    """Drop (``-A``) or let through (``-D``) the packets of the one
    connection whose client has ``port``: its client is cut, every
    other connection to the server is not."""
    for match in ('--dport', '--sport'):
        subprocess.run(['iptables', action, 'INPUT', '-p', 'tcp', match,
                        str(port), '-j', 'DROP'], check=True)


def _locks_of_a_cut_transaction(url, backend):
    """A transaction writes a row, and its client's link goes before the
    commit: seconds until another connection writes that row, or
    ('hang', HANG)."""
    engine = engines.get_engine(url, writer=True)
    with engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE held (id INT PRIMARY KEY, '
                             'v INT)'))
        conn.execute(sa.text('INSERT INTO held VALUES (1, 0)'))
    holder = engine.connect()
    holder.begin()
    port = int(holder.execute(sa.text(CLIENT_PORT[backend])).scalar())
    holder.execute(sa.text('UPDATE held SET v = 1 WHERE id = 1'))
    _drop_connection(port, '-A')
    try:
        cut = time.monotonic()

        def write():
            with engine.begin() as conn:
                conn.execute(sa.text('UPDATE held SET v = 2 WHERE id = 1'))

        thread, result = _in_thread(write)
        thread.join(HANG)
        if 'failure' not in result:
            return 'hang', HANG
        return (round(time.monotonic() - cut, 2),) + tuple(
            result['failure'][1:])
    finally:
        _drop_connection(port, '-D')
        # Dropped by the server by now, or left to be.
        holder.invalidate()


def _select_one_slow(engine, backend):
    with engine.connect() as conn:
        conn.execute(sa.text(SLEEP[backend]))


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
