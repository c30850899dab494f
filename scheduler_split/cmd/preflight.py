"""What a service needs before it can start, said in one line each.

A service script names the options it cannot run without
(:func:`missing`); a configuration that lacks one, or holds a value
that does not parse (:func:`bad_value`), ends the script before
anything is built. While the service starts, :class:`StartWatch` tries
the address of its bus and of its databases: a start waits for a broker
or a database server that is away (services start in any order), and
the operator reads on standard error which one, at once, instead of a
silent wait.
"""

import logging
import os
import re
import socket
import sys
import threading
import time

from oslo_config import cfg
import oslo_messaging as messaging
from sqlalchemy.engine import make_url

from scheduler_split import conf
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# (group, option): what each service script may need.
TRANSPORT_URL = ('DEFAULT', 'transport_url')
API_DATABASE = ('api_database', 'connection')
SCHEDULER_DATABASE = ('scheduler_database', 'connection')
CELL_DATABASE = ('database', 'connection')

# Where oslo.config looks when no --config-file is given (the SNAP
# directories aside).
SEARCHED = '~/.scheduler-split/, ~/, /etc/scheduler-split/ or /etc/'

# Seconds a start may take before its addresses are tried, between two
# tries of an address while the start waits, the longest one try waits
# for an answer, and between two lines about an address that stays away.
FIRST_PROBE_AFTER = 1.0
PROBE_INTERVAL = 2.0
PROBE_TIMEOUT = 2.0
REPEAT_INTERVAL = 300.0

_BUS_PORTS = {'rabbit': 5672, 'amqp': 5672, 'kafka': 9092}
_DATABASE_PORTS = {'postgresql': 5432, 'mysql': 3306, 'mariadb': 3306}


def option_name(need):
    group, name = need
    return '[%s] %s' % (group, name)


def _value(need):
    group, name = need
    group = None if group == 'DEFAULT' else group
    value = CONF[name] if group is None else CONF[group][name]
    if not value:
        return None
    # oslo.messaging's default transport_url, rabbit://, is a broker on
    # localhost: a service that nobody told where its bus is would wait
    # for it for ever.
    if CONF.get_location(name, group).location == cfg.Locations.opt_default:
        return None
    # The location oslo.config reports can outlive an override it reset:
    # the default's value is no setting either.
    if value == CONF._get_opt_info(name, group)['opt'].default:
        return None
    return value


def _and(names):
    return names[0] if len(names) == 1 else '%s and %s' % (
        ', '.join(names[:-1]), names[-1])


def missing(prog, needs):
    """The line that says which of ``needs`` are not set, and where the
    configuration was looked for; None when every one is."""
    unset = [option_name(need) for need in needs if _value(need) is None]
    if unset:
        verb = 'is' if len(unset) == 1 else 'are'
        if not CONF.config_file and not CONF.config_dir:
            return ('%s: no configuration file: no --config-file given and '
                    'no scheduler-split.conf or %s.conf in %s; %s %s not set'
                    % (prog, prog, SEARCHED, _and(unset), verb))
        dirs = CONF.config_dir or []
        read = list(CONF.config_file) + (
            [dirs] if isinstance(dirs, str) else list(dirs))
        return '%s: %s %s not set in %s' % (prog, _and(unset), verb,
                                            ', '.join(read))
    for need in needs:
        if need == TRANSPORT_URL:
            continue
        url = _value(need)
        where = _sqlite_directory(url)
        if where and not os.path.isdir(where):
            return ('%s: %s = %s: the directory %s does not exist' % (
                prog, option_name(need), url, where))
    return None


def _sqlite_directory(url):
    try:
        parsed = make_url(url)
    except Exception:
        return None
    if parsed.get_backend_name() != 'sqlite' or not parsed.database or \
            parsed.database == ':memory:':
        return None
    return os.path.dirname(os.path.abspath(parsed.database))


def bad_value(prog):
    """The line that names the first option whose value does not parse
    (oslo.config checks a value only as it is read, which would be in
    the middle of the start); None when every value parses."""
    for key in list(CONF):
        try:
            value = CONF[key]
        except cfg.Error as exc:
            return _describe(prog, 'DEFAULT', key, exc)
        if not isinstance(value, cfg.ConfigOpts.GroupAttr):
            continue
        for name in list(value):
            try:
                value[name]
            except cfg.Error as exc:
                return _describe(prog, key, name, exc)
    return None


def _describe(prog, group, name, exc):
    text = ' '.join(str(exc).split())
    reason = text.split(' is not valid: ', 1)[-1]
    # oslo.config names the file only inside its LocationInfo's repr.
    found = re.search(r"detail='([^']+)'", text)
    where = ' in %s' % found.group(1) if found else ''
    return '%s: [%s] %s%s: %s' % (prog, group, name, where, reason)


def masked(url):
    """A transport URL with its passwords masked."""
    return re.sub(r'(?<=:)[^:/@,]*(?=@)', '***', url)


def _bus_addresses(url):
    parsed = messaging.TransportURL.parse(CONF, url)
    port = _BUS_PORTS.get(parsed.transport)
    if port is None:
        # In memory (the all-in-one, tests): nothing to reach.
        return []
    return [(host.hostname or 'localhost', host.port or port)
            for host in parsed.hosts] or [('localhost', port)]


def _database_addresses(url):
    parsed = make_url(url)
    port = _DATABASE_PORTS.get(parsed.get_backend_name())
    if port is None or not parsed.host:
        # SQLite, or a server behind a Unix socket.
        return []
    return [(parsed.host, parsed.port or port)]


def _reason(addresses):
    """None if one of ``addresses`` takes a TCP connection, else why
    the first does not."""
    reasons = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), PROBE_TIMEOUT):
                return None
        except OSError as exc:
            reasons.append('%s:%s: %s' % (
                host, port, exc.strerror or type(exc).__name__))
    return reasons[0]


class StartWatch:
    """Tries the addresses of the bus and the databases a service needs
    once its start has taken FIRST_PROBE_AFTER seconds, until
    :meth:`done`, and says on standard error (and in the log) which it
    cannot reach: at the first try, and again every REPEAT_INTERVAL
    seconds while the start still waits. An address reached is not
    tried again."""

    def __init__(self, prog, needs):
        self.prog = prog
        self.targets = []
        for need in needs:
            url = _value(need)
            if not url:
                continue
            try:
                if need == TRANSPORT_URL:
                    self.targets.append((need, 'the bus', masked(url),
                                         _bus_addresses(url)))
                else:
                    self.targets.append((need, 'the database',
                                         rpc.database_name(url),
                                         _database_addresses(url)))
            except Exception:
                # A URL that does not parse fails the start itself, with
                # the driver's words.
                continue
        self.targets = [t for t in self.targets if t[3]]
        self._done = threading.Event()
        self._thread = None

    def start(self):
        if self.targets:
            self._thread = threading.Thread(
                target=self._watch, name='start-watch', daemon=True)
            self._thread.start()
        return self

    def done(self):
        """The service started (or will not): no more tries."""
        self._done.set()

    def _watch(self):
        # A start that is over by then needed no word, and took no
        # connection from a server that would log it as dropped.
        if self._done.wait(FIRST_PROBE_AFTER):
            return
        waiting = list(self.targets)
        said = {}
        while waiting:
            for target in list(waiting):
                need, what, shown, addresses = target
                reason = _reason(addresses)
                if self._done.is_set():
                    return
                if reason is None:
                    # Reached: what the start still waits for is not it.
                    waiting.remove(target)
                    continue
                now = time.monotonic()
                if need in said and now - said[need] < REPEAT_INTERVAL:
                    continue
                said[need] = now
                LOG.warning('Cannot reach %s %s (%s): %s; waiting for it',
                            what, shown, option_name(need), reason)
                print('%s: cannot reach %s %s (%s): %s; waiting for it' % (
                    self.prog, what, shown, option_name(need), reason),
                    file=sys.stderr, flush=True)
            if self._done.wait(PROBE_INTERVAL):
                return
