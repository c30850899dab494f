"""The order the suite's files run in.

With pytest-xdist's ``--dist loadfile`` (the README's test command) each
file runs whole on one worker, and a worker takes the next file when it
is done. The tiers of the longest files come first, so that the run does
not end on one of them alone while the other worker has nothing left.
Each file's own tests keep their order. (xdist would otherwise hand out
the files with the most tests first: Tempest's one test, minutes long,
came last.)
"""

import os
import shutil

import pytest

from tests.integration import backends
from tests.packaging import installs

# Tiers by how long their longest file takes (Tempest's one test takes
# minutes, a unit test file seconds).
LONGEST_FIRST = ('tempest', 'devstack', 'libvirt', 'gabbi', 'packaging',
                 'integration', 'topology', 'functional', 'project',
                 'unit')


def _rank(item):
    parts = os.path.relpath(str(item.path), os.path.dirname(
        __file__)).split(os.sep)
    tier = parts[0] if len(parts) > 1 else ''
    return (LONGEST_FIRST.index(tier) if tier in LONGEST_FIRST
            else len(LONGEST_FIRST))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # A stable sort: the items of one file stay together, in order.
    items.sort(key=_rank)


def pytest_configure(config):
    if hasattr(config.option, 'loadscopereorder'):
        config.option.loadscopereorder = False


@pytest.fixture(scope='session')
def libvirt_venv(tmp_path_factory):
    """The wheel of this tree with its libvirt extra, in a fresh venv, as
    an operator installs a compute host that runs real guests; Debian's
    libvirt, QEMU and the test guest's packages installed when missing
    (``tools/install-test-packages libvirt``)."""
    if os.geteuid() != 0 or shutil.which('apt-get') is None:
        pytest.skip('needs root and apt-get (a Debian machine)')
    backends.install_packages('libvirt')
    work = tmp_path_factory.mktemp('libvirt-install')
    wheel = installs.build_wheel(str(work))
    return installs.UserVenv.create(work / 'venv', wheel + '[libvirt]')
