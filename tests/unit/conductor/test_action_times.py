"""When an instance action and its events began and ended: each event
from when its step began to when it was recorded, and no action starting
after any of its events, whoever sent them and whatever their clock."""

import datetime

from scheduler_split.conductor import records
from scheduler_split.conductor import rpcapi as conductor_rpcapi
from scheduler_split import context
from scheduler_split.objects import instance_action
from tests.unit import helpers

SECOND = datetime.timedelta(seconds=1)


def _request(cloud, request_id='req-1'):
    ctx = context.RequestContext(user_id='user', project_id='project',
                                 request_id=request_id, overwrite=False)
    return context.target_cell(ctx, cloud.cell1)


def _action(cloud, ctx, uuid):
    return instance_action.get_action(cloud.in_cell(), uuid,
                                      ctx.request_id)


def test_an_event_runs_from_when_its_step_began_to_when_it_was_recorded(
        cloud):
    uuid = cloud.server().uuid
    ctx = _request(cloud)
    instance_action.start_action(ctx, uuid, 'stop')
    began = helpers.naive_utcnow()

    instance_action.record_event(ctx, uuid, 'compute_stop_instance',
                                 host='src', action='stop',
                                 start_time=began)

    action = _action(cloud, ctx, uuid)
    [event] = action['events']
    assert event['start_time'] == began
    assert event['finish_time'] >= began
    assert action['start_time'] <= event['start_time']


def test_a_step_that_began_before_its_action_moves_the_actions_start(
        cloud):
    uuid = cloud.server().uuid
    ctx = _request(cloud)
    instance_action.start_action(ctx, uuid, 'migrate')
    recorded = _action(cloud, ctx, uuid)['start_time']
    # A host whose clock is behind, or a step that began before the
    # action row was written.
    earlier = recorded - 5 * SECOND

    instance_action.record_event(ctx, uuid, 'compute_prep_resize',
                                 action='migrate', start_time=earlier)
    instance_action.record_event(ctx, uuid, 'compute_resize_instance',
                                 action='migrate',
                                 start_time=earlier + 2 * SECOND)

    action = _action(cloud, ctx, uuid)
    assert action['start_time'] == earlier
    assert action['start_time'] <= min(e['start_time']
                                       for e in action['events'])


def test_an_action_an_event_creates_starts_with_that_event(cloud):
    uuid = cloud.server().uuid
    ctx = _request(cloud)
    began = helpers.naive_utcnow() - SECOND

    instance_action.record_event(ctx, uuid, 'compute_stop_instance',
                                 action='stop', start_time=began)

    action = _action(cloud, ctx, uuid)
    assert action['start_time'] == began == action['events'][0][
        'start_time']


def test_a_start_from_a_clock_ahead_is_no_later_than_the_finish(cloud):
    uuid = cloud.server().uuid
    ctx = _request(cloud)

    instance_action.record_event(
        ctx, uuid, 'compute_stop_instance', action='stop',
        start_time=helpers.naive_utcnow() + datetime.timedelta(hours=1))

    action = _action(cloud, ctx, uuid)
    [event] = action['events']
    assert event['start_time'] == event['finish_time']
    assert action['start_time'] <= event['start_time']


def test_the_conductor_takes_a_start_as_the_bus_carries_it_or_none(cloud):
    uuid = cloud.server().uuid
    endpoint = records.ComputeRecords(cloud.cell1.database_connection)
    began = helpers.naive_utcnow() - SECOND

    # From 1.12: an ISO 8601 string, with its zone.
    endpoint.instance_action_event(
        _request(cloud, 'req-new'), uuid, 'compute_stop_instance',
        action='stop', start_time=began.replace(
            tzinfo=datetime.timezone.utc).isoformat())
    # A compute before 1.12 sends none: the step began when it ended.
    endpoint.instance_action_event(
        _request(cloud, 'req-old'), uuid, 'compute_stop_instance',
        action='stop')

    [new] = _action(cloud, _request(cloud, 'req-new'), uuid)['events']
    [old] = _action(cloud, _request(cloud, 'req-old'), uuid)['events']
    assert new['start_time'] == began
    assert old['start_time'] == old['finish_time']


def test_a_conductor_before_1_12_is_sent_no_start():
    began = datetime.datetime(2026, 1, 2, 3, 4, 5, 600000,
                              tzinfo=datetime.timezone.utc)
    event = {'event': 'compute_build_and_run_instance', 'host': 'h1',
             'start_time': began}

    assert conductor_rpcapi._event_as_sent(event, '1.11') == {
        'event': 'compute_build_and_run_instance', 'host': 'h1'}
    sent = conductor_rpcapi._event_as_sent(event, '1.12')
    assert sent['start_time'] == '2026-01-02T03:04:05.600000+00:00'
    assert instance_action.as_time(sent['start_time']) == began.replace(
        tzinfo=None)
    # The caller's event is left as it was.
    assert event['start_time'] is began
