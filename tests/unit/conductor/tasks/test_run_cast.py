"""A cast has nobody to answer: what its task expects ends there in one
line of log, a bug goes on to the bus's dispatcher with its
traceback."""

import logging

import pytest

from scheduler_split.conductor.tasks import base
from scheduler_split import exception

UUID = '6c1d0e4a-3b1f-4c55-9d7e-2f0a8c1b9e11'


class _Task(base.ConductorTask):

    uuid = UUID

    def __init__(self, failure):
        self.failure = failure

    def _execute(self):
        raise self.failure


def test_a_cast_overtaken_by_a_delete_is_one_line(caplog):
    caplog.set_level(logging.INFO, logger='scheduler_split')

    base.run_cast(_Task(exception.InstanceNotFound(instance_id=UUID)))

    assert [(r.levelname, r.getMessage(), r.exc_info)
            for r in caplog.records] == [
        ('INFO', '_Task of instance %s stopped: Instance %s could not be '
         'found.' % (UUID, UUID), None)]


def test_a_cast_that_trips_on_a_bug_goes_on_to_the_dispatcher():
    with pytest.raises(KeyError):
        base.run_cast(_Task(KeyError('bug')))
