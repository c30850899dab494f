import pytest

from scheduler_split import conf
from tests.functional import fixtures

CONF = conf.CONF


@pytest.fixture
def override():
    """``override(name, value, group=None)``: a CONF override undone after
    the test."""
    done = []

    def _override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        done.append((name, group))

    yield _override
    for name, group in reversed(done):
        CONF.clear_override(name, group=group)


@pytest.fixture
def fake_driver():
    """Set [fake_driver] options for one test; spawns are fast by default.
    """
    overrides = []

    def set_option(name, value):
        CONF.set_override(name, value, group='fake_driver')
        overrides.append(name)

    set_option('spawn_delay', 0.05)
    yield set_option
    for name in overrides:
        CONF.clear_override(name, group='fake_driver')


@pytest.fixture
def start_system(tmp_path, fake_driver):
    """Start the whole system: ``start_system(cells=2, hosts_per_cell=2)``.
    """
    started = []

    def start(cells=2, hosts_per_cell=2, state_dir=None, quotas=False):
        if not quotas:
            # Most tests boot more servers than the default quota of one
            # project allows; the quota tests ask for the defaults.
            for name in ('instances', 'cores', 'ram'):
                CONF.set_override(name, -1, group='quota')
        system = fixtures.System(state_dir or tmp_path / 'state', cells,
                                 hosts_per_cell).start()
        started.append(system)
        return system

    yield start
    for system in started:
        system.stop()
    CONF.reset()
