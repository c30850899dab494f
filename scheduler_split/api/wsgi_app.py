"""WSGI entry point: ``scheduler_split.api.wsgi_app:application``.

Reads ``/etc/scheduler-split/scheduler-split.conf`` (or the files named in
``SCHEDULER_SPLIT_CONFIG_FILES``, comma separated).
"""

import os

from scheduler_split.cmd import common


def _init():
    files = os.environ.get('SCHEDULER_SPLIT_CONFIG_FILES',
                           '/etc/scheduler-split/scheduler-split.conf')
    argv = ['scheduler-split-api']
    for path in filter(None, files.split(',')):
        argv += ['--config-file', path]
    common.parse_args(argv)
    from scheduler_split.api import wsgi
    return wsgi.make_app()


application = _init()
