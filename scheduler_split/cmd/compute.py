"""scheduler-split-compute: one compute host on its cell's bus.

It needs only its cell's ``transport_url`` (and ``host``): no database.
"""

import sys

from scheduler_split.cmd import common
from scheduler_split.cmd import preflight
from scheduler_split import conf
from scheduler_split import deployment

CONF = conf.CONF


def main():
    common.parse_args(sys.argv, description=common.summary(__doc__))
    common.require(preflight.TRANSPORT_URL)
    # A hypervisor host holds no database credentials: everything the
    # compute persists goes through its cell conductor.
    return common.run(lambda: deployment.compute_service(
        CONF.host, CONF.transport_url))


if __name__ == '__main__':
    sys.exit(main())
