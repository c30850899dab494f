"""Shared fixtures of the unit tests."""

import pytest

from scheduler_split import conf
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import objects
from tests.unit import helpers

objects.register_all()

CONF = conf.CONF


@pytest.fixture(autouse=True)
def _no_outage_reported(monkeypatch):
    """Each test starts with no database outage reported in the process
    (whose first WARNING makes the next ones DEBUG lines)."""
    monkeypatch.setattr(outage, '_outages', outage._Outages())


@pytest.fixture
def override():
    """``override(name, value, group=None)``: a CONF override undone after.
    """
    done = []

    def _override(name, value, group=None):
        CONF.set_override(name, value, group=group)
        done.append((name, group))

    yield _override
    for name, group in reversed(done):
        CONF.clear_override(name, group=group)


@pytest.fixture
def scheduler_db(tmp_path):
    """URL of an empty scheduler database at head, in a file of tmp_path."""
    url = helpers.database_at_head('scheduler',
                                   tmp_path / 'scheduler.sqlite')
    yield url
    engines.dispose_all()
