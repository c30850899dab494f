"""scheduler-split-compute: one compute host on its cell's bus."""

import sys

from scheduler_split.cmd import common
from scheduler_split import conf
from scheduler_split import deployment

CONF = conf.CONF


def main():
    common.parse_args(sys.argv)
    if not CONF.database.connection:
        return common.fail('A compute needs [database] connection (its '
                           'cell database).')
    return common.run(deployment.compute_service(
        CONF.host, CONF.transport_url, CONF.database.connection))


if __name__ == '__main__':
    sys.exit(main())
