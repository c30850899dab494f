"""scheduler-split-scheduler: listens on the API bus and every cell bus."""

import sys

from scheduler_split.cmd import common
from scheduler_split import context as ss_context
from scheduler_split import deployment
from scheduler_split import objects


def main():
    common.parse_args(sys.argv)
    cells = objects.CellMapping.get_all(ss_context.get_admin_context())
    return common.run(deployment.scheduler_service(cells))


if __name__ == '__main__':
    sys.exit(main())
