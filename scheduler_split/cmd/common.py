"""What every service script does first: config, logging, objects."""

import logging
import signal
import sys
import threading

from oslo_log import log as oslo_logging

from scheduler_split import conf
from scheduler_split import objects
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

oslo_logging.register_options(CONF)


def parse_args(argv, description=None):
    CONF(argv[1:], project='scheduler-split', description=description)
    oslo_logging.setup(CONF, 'scheduler-split')
    objects.register_all()


def run(svc):
    """Run ``svc`` until SIGTERM or SIGINT, then stop it gracefully.

    SIGTERM stops consuming, lets the messages being handled finish (a
    spawn, a scheduling call) and closes the connections; messages not
    taken yet stay on the bus for the next start. SIGHUP re-reads the
    mutable options of the config files (log levels, say), forgets the
    RPC version caps ``[upgrade_levels] auto`` resolved, and does
    whatever the service itself reloads (the scheduler: new cells).
    """
    stop = threading.Event()
    hup = threading.Event()

    def _stop(signum, frame):
        LOG.info('Caught signal %s, stopping', signum)
        stop.set()

    def _hup(signum, frame):
        hup.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGHUP, _hup)
    svc.start()
    while not stop.is_set():
        stop.wait(1)
        if hup.is_set():
            hup.clear()
            LOG.info('Caught SIGHUP, reloading')
            CONF.mutate_config_files()
            # [upgrade_levels] auto looks at the service records again.
            rpc.reset_auto_caps()
            svc.reload()
    svc.stop(graceful=True)
    rpc.cleanup()
    LOG.info('Stopped')
    return 0


def fail(message):
    print(message, file=sys.stderr)
    return 1
