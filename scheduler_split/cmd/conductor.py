"""scheduler-split-conductor: the super-conductor or a cell conductor.

``[conductor] role = super`` listens on the API bus (``transport_url``);
``role = cell`` listens on its cell's bus and uses ``[database]``.
"""

import sys

from scheduler_split.cmd import common
from scheduler_split.cmd import preflight
from scheduler_split import conf
from scheduler_split import deployment

CONF = conf.CONF


def main():
    common.parse_args(sys.argv, description=common.summary(__doc__))
    if CONF.conductor.role == 'super':
        common.require(preflight.TRANSPORT_URL, preflight.API_DATABASE)
        return common.run(deployment.super_conductor_service)
    common.require(preflight.TRANSPORT_URL, preflight.CELL_DATABASE)
    return common.run(lambda: deployment.cell_conductor_service(
        CONF.transport_url, CONF.database.connection))


if __name__ == '__main__':
    sys.exit(main())
