"""A database server that dies closes the connections in use: the
statement under way, or the commit, fails with "server closed the
connection unexpectedly" (it is not refused at connect). Every step of
a boot that meets one waits the outage out as it waits for refused
connections, and the boot ends ACTIVE: each statement and each commit
of a boot, after the API answered, fails once in turn here.

A commit whose connection closed may have been written or not; both are
tried: the commit that was lost, and the commit whose answer was.
"""

import logging
import threading

import pytest
import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import base as sqlite_base

from scheduler_split import conf
from scheduler_split.db import outage

pytestmark = pytest.mark.functional

CONF = conf.CONF

CLOSED = 'server closed the connection unexpectedly'


class Closer:
    """Counts the statements (or commits) of the threads that wait for
    databases (the API's requests do not: they answer 503) and fails the
    one numbered ``at`` once, as a connection the server closed."""

    def __init__(self, mode):
        self.mode = mode
        self.count = 0
        self.at = None
        self.hit = None
        self._lock = threading.Lock()

    def arm(self, at):
        with self._lock:
            self.count, self.at, self.hit = 0, at, None

    def disarm(self):
        with self._lock:
            self.at = None

    def _due(self, what):
        if outage.wait_seconds() == 0:
            return False
        with self._lock:
            number = self.count
            self.count += 1
            if self.at is None or number != self.at:
                return False
            self.hit = what
            return True

    def before_statement(self, conn, cursor, statement, params, context,
                         executemany):
        if self.mode == 'statement' and self._due(statement):
            raise sa.exc.OperationalError(statement, params,
                                          Exception(CLOSED))

    def wrap_commit(self, real):
        closer = self

        def do_commit(dialect, dbapi_connection):
            if closer.mode == 'commit lost' and closer._due('COMMIT'):
                raise sa.exc.OperationalError('COMMIT', {},
                                              Exception(CLOSED))
            real(dialect, dbapi_connection)
            if closer.mode == 'answer lost' and closer._due('COMMIT'):
                raise sa.exc.OperationalError('COMMIT', {},
                                              Exception(CLOSED))
        return do_commit


@pytest.mark.parametrize('mode', ['statement', 'commit lost',
                                  'answer lost'])
def test_every_step_of_a_boot_waits_out_a_closed_connection(
        start_system, monkeypatch, caplog, mode):
    CONF.set_override('retry_interval', 0.05, group='database')
    # No periodic work meanwhile: what fails is the boot's.
    CONF.set_override('report_interval', 600)
    system = start_system(cells=1, hosts_per_cell=2)
    closer = Closer(mode)
    sa.event.listen(sa.engine.Engine, 'before_cursor_execute',
                    closer.before_statement)
    monkeypatch.setattr(sqlite_base.SQLiteDialect, 'do_commit',
                        closer.wrap_commit(
                            sqlite_base.SQLiteDialect.do_commit))
    failed = []
    try:
        at = 0
        while True:
            closer.arm(at)
            server_id = system.api.boot(name='closed-%d' % at)
            server = system.api.wait_for(server_id, timeout=60)
            closer.disarm()
            hit = closer.hit
            if server['status'] != 'ACTIVE':
                failed.append((at, hit, server['status'],
                               server.get('fault', {}).get('message')))
            assert system.api.delete(
                '/v2.1/servers/%s' % server_id).status_code == 204
            system.api.wait_gone(server_id)
            if hit is None:
                # The boot ran fewer statements than ``at``: each failed.
                break
            at += 1
    finally:
        sa.event.remove(sa.engine.Engine, 'before_cursor_execute',
                        closer.before_statement)
    assert at > 3
    assert not failed, '\n'.join(map(repr, failed))
    # Waited out: no step logged an error.
    errors = [r.getMessage() for r in caplog.records
              if r.levelno >= logging.ERROR]
    assert not errors, errors
    assert system.allocations_after_settling({}) == {}
