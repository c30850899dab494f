"""Filters and weighers are found by name: a new one is one class in one
file and one line of config; a name config gets wrong is an error that
says which."""

import pathlib

import pytest

from scheduler_split import conf
from scheduler_split.scheduler import filters
from scheduler_split.scheduler import manager as scheduler_manager
from scheduler_split.scheduler import weights
from tests.unit import helpers

CONF = conf.CONF


@pytest.fixture
def registered():
    """Classes a test defines, taken out of their registry after it."""
    defined = []
    yield defined.append
    for cls in defined:
        cls.registry.remove(cls)


def _modules(package):
    return sorted(path.stem for path in
                  pathlib.Path(package.__file__).parent.glob('*.py')
                  if path.stem != '__init__')


def test_every_filter_module_holds_one_registered_filter():
    names = filters.BaseHostFilter.registry.names()
    assert len(names) == len(_modules(filters)) == 17
    for name in names:
        cls = getattr(filters, name)
        assert cls.__module__.startswith(filters.__name__ + '.')
        assert cls.__doc__, name


def test_every_weigher_module_holds_one_registered_weigher():
    names = weights.BaseHostWeigher.registry.names()
    assert len(names) == len(_modules(weights)) == 7
    for name in names:
        assert getattr(weights, name).__doc__, name


def test_the_default_options_name_registered_classes():
    assert [type(f).__name__ for f in filters.load(
        CONF.filter_scheduler.enabled_filters)] == \
        CONF.filter_scheduler.enabled_filters
    assert [type(w).__name__ for w in weights.load(
        CONF.filter_scheduler.weighers)] == CONF.filter_scheduler.weighers


def test_an_unknown_filter_in_config_is_an_error_naming_it(override,
                                                           scheduler_db):
    override('enabled_filters', ['ComputeFilter', 'RamFiltre'],
             group='filter_scheduler')
    with pytest.raises(ValueError) as error:
        scheduler_manager.SchedulerManager(scheduler_db)
    message = str(error.value)
    assert message.startswith('[filter_scheduler] enabled_filters names '
                              'unknown scheduler filters: RamFiltre (known: ')
    assert 'RamFilter' in message


def test_an_unknown_weigher_in_config_is_an_error_naming_it(override,
                                                            scheduler_db):
    override('weighers', ['RAMWeighter'], group='filter_scheduler')
    with pytest.raises(ValueError, match=r'\[filter_scheduler\] weighers '
                       r'names unknown scheduler weighers: RAMWeighter '):
        scheduler_manager.SchedulerManager(scheduler_db)


def test_a_new_filter_is_found_by_its_name(registered):
    class OddHostFilter(filters.BaseHostFilter):
        """Rejects hosts whose name ends in an odd digit."""

        def host_passes(self, host_state, spec_obj):
            return int(host_state.host[-1]) % 2 == 0

    registered(OddHostFilter)
    [odd] = filters.load(['OddHostFilter'])
    assert isinstance(odd, OddHostFilter)
    assert filters.OddHostFilter is OddHostFilter


def test_a_new_filter_runs_once_enabled(registered, override, scheduler_db):
    class NoHostFilter(filters.BaseHostFilter):
        """Rejects every host."""

        def host_passes(self, host_state, spec_obj):
            return False

    registered(NoHostFilter)
    override('enabled_filters', ['ComputeFilter', 'NoHostFilter'],
             group='filter_scheduler')
    manager = scheduler_manager.SchedulerManager(scheduler_db)
    manager.host_manager.update_from_stats('cell', 'h1', 'h1',
                                           helpers.host_stats())
    candidates, _, record = manager._candidates(
        manager.host_manager.host_states(), helpers.make_spec())
    assert candidates == []
    assert record.counts() == [('ComputeFilter', 0), ('NoHostFilter', 1)]


def test_a_new_weigher_is_found_by_its_name(registered):
    class NameWeigher(weights.BaseHostWeigher):
        """Scores hosts by the length of their name."""

        def raw_weight(self, host_state, spec_obj):
            return len(host_state.host)

    registered(NameWeigher)
    assert [type(w) for w in weights.load(['NameWeigher'])] == [NameWeigher]


def test_a_base_meant_to_be_derived_is_not_a_filter():
    assert filters.BaseHostFilter.registry.get('ResourceFilter') is None
    assert filters.BaseHostFilter.registry.get('BaseHostFilter') is None
    assert weights.BaseHostWeigher.registry.get('SoftGroupWeigher') is None
    with pytest.raises(AttributeError):
        filters.NoSuchFilter


def test_two_filters_of_one_name_are_refused():
    with pytest.raises(TypeError, match='Two scheduler filters are named '
                       'RamFilter'):
        class RamFilter(filters.BaseHostFilter):
            pass
