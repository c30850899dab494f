"""A database server whose link is cut (its packets dropped, not
refused) fails a call within ``[database] link_timeout`` and a few
seconds to connect, on PostgreSQL and on MariaDB through PyMySQL, rather
than hanging it for as long as TCP retransmits; the link healed, the
next call is answered. A transaction cut between a write and its commit
holds its row locks no longer than ``[database]
idle_transaction_timeout``.

Each backend runs in a network namespace of its own (its own loopback,
its own iptables), made and removed here: nothing outside it is cut.
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from tests.integration import backends

pytestmark = pytest.mark.integration

ROOT = pathlib.Path(__file__).resolve().parents[2]
LINK_TIMEOUT = 4
IDLE_TRANSACTION_TIMEOUT = 3
# What opening a connection may add (engines.CONNECT_TIMEOUT, at most
# the link timeout), and slack for a loaded machine.
CONNECT = min(5, LINK_TIMEOUT)
SLACK = 3


@pytest.fixture
def namespace():
    if os.geteuid() != 0 or shutil.which('ip') is None:
        pytest.skip('needs root and iproute2 for a network namespace')
    if shutil.which('iptables') is None:
        backends.install_packages('iptables')
    name = 'ss-cut-%d' % os.getpid()
    subprocess.run(['ip', 'netns', 'add', name], check=True)
    try:
        subprocess.run(['ip', 'netns', 'exec', name, 'ip', 'link', 'set',
                        'lo', 'up'], check=True)
        yield name
    finally:
        pids = subprocess.run(['ip', 'netns', 'pids', name],
                              capture_output=True, text=True).stdout.split()
        for pid in pids:
            subprocess.run(['kill', '-9', pid])
        subprocess.run(['ip', 'netns', 'del', name])


@pytest.mark.parametrize('backend', [
    'postgresql', pytest.param('mariadb', marks=pytest.mark.mariadb)])
def test_a_cut_link_fails_each_call_within_the_link_timeout(
        namespace, backend):
    # The server's packages here, where the package registry is reached:
    # the namespace the probe runs in has no network.
    if backend == 'mariadb':
        backends.install_packages('mariadb')
    else:
        backends.install_packages('postgresql')
    done = subprocess.run(
        ['ip', 'netns', 'exec', namespace, sys.executable, '-m',
         'tests.integration.cut_link_probe', backend, str(LINK_TIMEOUT),
         str(IDLE_TRANSACTION_TIMEOUT)],
        cwd=str(ROOT), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    print('\n%s: %s' % (backend, report))
    # A statement whose packets go unacknowledged, and one the server
    # took before the cut (keep-alive probes find the peer gone): each
    # fails as a database outage within the link timeout.
    for case in ('statement', 'answer'):
        took, error, is_outage = report[case]
        assert took != 'hang', (case, report)
        assert error is not None and is_outage, (case, report)
        assert took < LINK_TIMEOUT + SLACK, (case, report)
    # A rested pooled connection: its ping meets the cut, then so does
    # the connection opened in its place.
    took, error, is_outage = report['rested']
    assert took != 'hang' and error is not None and is_outage, report
    assert took < LINK_TIMEOUT + CONNECT + SLACK, report
    assert report['healed'][1] is None, report
    # A transaction cut between its write and its commit: the server ends
    # it once idle that long, and another connection writes its row.
    took, error, _ = report['locks']
    assert took != 'hang' and error is None, report
    assert took < IDLE_TRANSACTION_TIMEOUT + SLACK, report
