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


class _BuildTask(base.ConductorTask):
    """A task that holds its instance, as builds and reschedules do."""

    def __init__(self, failure):
        self.instance = type('Instance', (), {'uuid': UUID})()
        self.failure = failure

    def _execute(self):
        raise self.failure


def test_the_line_names_the_instance_a_build_task_holds(caplog):
    caplog.set_level(logging.INFO, logger='scheduler_split')

    base.run_cast(_BuildTask(exception.NoValidHost(reason='full')))

    [record] = caplog.records
    assert (record.levelname, record.instance_uuid) == ('WARNING', UUID)
    assert record.getMessage().startswith(
        '_BuildTask of instance %s stopped: No valid host' % UUID)


def test_a_missing_flavor_or_cell_is_no_race_and_keeps_its_traceback():
    """Only what a user's delete or a concurrent action explains is
    expected; a record the code needed and did not find is a bug."""
    for failure in (exception.FlavorNotFound(flavor_id='7'),
                    exception.CellMappingNotFound(uuid=UUID),
                    exception.FlavorExists(name='m1.tiny')):
        with pytest.raises(type(failure)):
            base.run_cast(_Task(failure))


def test_a_guarded_save_that_lost_is_overtaken_also_from_another_service():
    class Conflict_Remote(exception.Conflict):
        """As oslo.messaging makes a remote Conflict."""

    assert exception.is_overtaken(exception.Conflict(reason='moved on'))
    assert exception.is_overtaken(Conflict_Remote(reason='moved on'))
    assert not exception.is_overtaken(exception.FlavorExists(name='x'))
    assert exception.is_expected(exception.ComputeTooOld(
        host='h', cap='1.0', needed='1.6'))
