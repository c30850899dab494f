"""Where the devstack checkout the plugin is tested against lives."""

import os
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / 'devstack'


def devstack_dir():
    """``$DEVSTACK_DIR``, else ``../shared/devstack`` beside the
    repository; None when neither is a devstack checkout."""
    for candidate in (os.environ.get('DEVSTACK_DIR'),
                      ROOT.parent / 'shared' / 'devstack'):
        if candidate and (pathlib.Path(candidate) / 'stackrc').is_file():
            return pathlib.Path(candidate).resolve()
    return None


SKIP_REASON = ('no devstack checkout: set DEVSTACK_DIR or put one at '
               '../shared/devstack beside the repository')
