"""A cell's share of a server list, in real SQLite cell databases: the
status filter and the order its database gives agree with what the API
computes in Python, and pages merged across cells, each started after
the last one's final server, hold every server once."""

import datetime
import itertools

import pytest

from scheduler_split.api import multi_cell_list
from scheduler_split.api import server_views
from scheduler_split import context
from scheduler_split.db import engines
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import instance_list
from tests.unit import helpers

START = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)


@pytest.fixture
def cells(tmp_path, override):
    """Two cells mapped in an API database, each a targeted context."""
    api = 'sqlite:///' + str(tmp_path / 'api.sqlite')
    helpers.database_at_head('api', tmp_path / 'api.sqlite')
    override('connection', api, group='api_database')
    ctx = context.get_admin_context()
    targeted = []
    for name in ('cell1', 'cell2'):
        url = 'sqlite:///' + str(tmp_path / (name + '.sqlite'))
        helpers.database_at_head('cell', tmp_path / (name + '.sqlite'))
        objects.CellMapping(name=name, transport_url='fake://',
                            database_connection=url).create(ctx)
        targeted.append(context.targeted(ctx, url))
    yield targeted
    engines.dispose_all()


def _instance(ctx, index, **fields):
    values = dict(
        uuid='3b0d8f7e-5a4c-4e1b-9c2d-%012d' % index,
        display_name='vm-%d' % index, project_id='p', user_id='u',
        host='h', node='h', vm_state=instance_obj.ACTIVE, task_state=None,
        power_state=instance_obj.RUNNING, flavor=helpers.make_flavor(),
        image_ref='img', availability_zone=None, key_name=None, metadata={},
        reservation_id='r', launch_index=0, launched_at=None,
        terminated_at=None,
        created_at=START + datetime.timedelta(seconds=index),
        updated_at=None, deleted_at=None, deleted=False)
    values.update(fields)
    instance = objects.Instance(**values)
    instance.create(ctx)
    return instance


def test_the_status_a_cell_filters_on_is_the_one_the_api_shows(cells):
    ctx = cells[0]
    vm_states = sorted({r[0] for r in server_views.STATUS_RULES
                        if r[0]} | {'shelved'})
    task_states = sorted({r[1] for r in server_views.STATUS_RULES
                          if r[1]} | {'powering-off'}) + [None]
    made = [_instance(ctx, i, vm_state=vm, task_state=task)
            for i, (vm, task) in enumerate(
                itertools.product(vm_states, task_states))]
    shown = {i.uuid: server_views.status_of(i) for i in made}

    for status in set(shown.values()):
        found = instance_list.get_sorted(
            ctx, instance_list.Filters(
                status=(status, server_views.STATUS_RULES)),
            ['uuid'], ['asc'], len(made))

        assert sorted(i.uuid for i in found) == sorted(
            uuid for uuid, s in shown.items() if s == status), status


@pytest.mark.parametrize('key', ['launched_at', 'display_name', 'locked'])
@pytest.mark.parametrize('direction', ['asc', 'desc'])
def test_pages_merged_across_cells_hold_every_server_once_in_order(
        cells, key, direction):
    names = ['b', 'B', 'a', None, '\u00e9', 'a', 'Z', None, 'z', '\u00c9']
    made = []
    for index, name in enumerate(names * 2):
        made.append(_instance(
            cells[index % 2], index, display_name=name,
            locked=index % 3 == 0,
            # Some never launched: they sort first ascending, last
            # descending.
            launched_at=None if index % 4 == 0 else
            START + datetime.timedelta(minutes=index % 5)))
    order = multi_cell_list.SortOrder([key], [direction],
                                      [('created_at', 'desc'),
                                       ('uuid', 'desc')])
    expected = [i.uuid for i in sorted(made, key=order.position)]
    filters = instance_list.Filters()

    listed = []
    marker = None
    while True:
        page, more = multi_cell_list.get_instances(
            context.get_admin_context(), filters, order, 3, marker)
        listed += [i.uuid for i in page]
        if not more:
            break
        marker = page[-1]

    assert listed == expected


def test_equal_values_tie_and_none_comes_first_ascending():
    order = multi_cell_list.SortOrder(['display_name'], ['asc'])

    class Named(dict):
        uuid = None

        def get(self, key, default=None):
            return dict.get(self, key, default)

    first, second = Named(display_name='a'), Named(display_name='a')
    assert not order.position(first) < order.position(second)
    assert not order.position(second) < order.position(first)
    assert order.position(Named()) < order.position(first)
