"""scheduler-split-scheduler: chooses and claims hosts for every cell.

It listens on the API bus and on every cell's bus.
"""

import sys

from scheduler_split.cmd import common
from scheduler_split.cmd import preflight
from scheduler_split import context as ss_context
from scheduler_split import deployment
from scheduler_split import objects


def _build():
    cells = objects.CellMapping.get_all(ss_context.get_admin_context())
    return deployment.scheduler_service(cells)


def main():
    common.parse_args(sys.argv, description=common.summary(__doc__))
    common.require(preflight.TRANSPORT_URL, preflight.API_DATABASE,
                   preflight.SCHEDULER_DATABASE)
    return common.run(_build)


if __name__ == '__main__':
    sys.exit(main())
