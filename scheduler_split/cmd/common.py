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
    """Run ``svc`` until SIGTERM or SIGINT, then stop it gracefully."""
    stop = threading.Event()

    def _handler(signum, frame):
        LOG.info('Caught signal %s, stopping', signum)
        stop.set()

    signal.signal(signal.SIGTERM, _handler)
    signal.signal(signal.SIGINT, _handler)
    svc.start()
    while not stop.is_set():
        stop.wait(1)
    svc.stop(graceful=True)
    rpc.cleanup()
    return 0


def fail(message):
    print(message, file=sys.stderr)
    return 1
