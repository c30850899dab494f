"""scheduler-split-conductor: the super-conductor or a cell conductor.

``[conductor] role = super`` listens on the API bus (``transport_url``);
``role = cell`` listens on its cell's bus and uses ``[database]``.
"""

import sys

from scheduler_split.cmd import common
from scheduler_split import conf
from scheduler_split import deployment

CONF = conf.CONF


def main():
    common.parse_args(sys.argv)
    if CONF.conductor.role == 'super':
        svc = deployment.super_conductor_service()
    else:
        if not CONF.database.connection:
            return common.fail('A cell conductor needs [database] '
                               'connection (its cell database).')
        svc = deployment.cell_conductor_service(CONF.transport_url,
                                                CONF.database.connection)
    return common.run(svc)


if __name__ == '__main__':
    sys.exit(main())
