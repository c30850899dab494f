"""The one liveness rule: up, down or forced down, given the clock and
``[DEFAULT] service_down_time``."""

import datetime

import sqlalchemy as sa

from scheduler_split import context
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import objects
from scheduler_split.objects import service as service_obj
from scheduler_split.scheduler import host_state
from scheduler_split import servicegroup
from tests.unit import helpers

NOW = datetime.datetime(2030, 1, 1, 12, 0, 0)


def _ago(seconds, **kwargs):
    return NOW - datetime.timedelta(seconds=seconds, **kwargs)


def _state(last_seen, forced_down=False, down_time=60):
    return servicegroup.state(last_seen, forced_down,
                              servicegroup.up_since(NOW, down_time))


def test_a_service_heard_from_exactly_service_down_time_ago_is_up():
    assert _state(_ago(60)) == servicegroup.UP


def test_a_service_heard_from_a_microsecond_past_the_threshold_is_down():
    assert _state(_ago(60, microseconds=1)) == servicegroup.DOWN


def test_a_service_that_never_reported_is_down():
    assert _state(None) == servicegroup.DOWN
    assert not servicegroup.is_up(None)


def test_a_forced_down_service_is_forced_down_however_recent_its_heartbeat():
    assert _state(NOW, forced_down=True) == servicegroup.FORCED_DOWN
    assert _state(None, forced_down=True) == servicegroup.FORCED_DOWN
    assert not servicegroup.is_up(NOW, forced_down=True,
                                  since=servicegroup.up_since(NOW))


def test_the_threshold_is_the_configured_service_down_time(override):
    override('service_down_time', 120)
    since = servicegroup.up_since(NOW)
    assert servicegroup.is_up(_ago(90), since=since)
    assert not servicegroup.is_up(_ago(121), since=since)


def test_the_default_clock_is_now(override):
    override('service_down_time', 30)
    now = datetime.datetime.now(datetime.timezone.utc)
    assert servicegroup.is_up(now - datetime.timedelta(seconds=5))
    assert not servicegroup.is_up(now - datetime.timedelta(seconds=31))


def test_a_time_with_a_zone_is_compared_in_utc():
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    seen = _ago(10).replace(tzinfo=datetime.timezone.utc).astimezone(
        plus_two)
    assert _state(seen) == servicegroup.UP


def test_a_disabled_host_that_reports_is_up_but_takes_no_builds(override):
    override('service_down_time', 60)
    state = host_state.HostState('uuid', 'h1', 'h1', 'cell')
    state.last_report_at = servicegroup.up_since(down_time=1)
    state.disabled = True
    assert state.is_up()
    assert not state.takes_builds()
    state.disabled = False
    assert state.takes_builds()


def test_a_host_that_stopped_reporting_is_down_enabled_or_not(override):
    override('service_down_time', 60)
    state = host_state.HostState('uuid', 'h1', 'h1', 'cell')
    state.last_report_at = servicegroup.up_since(down_time=61)
    assert not state.is_up()
    assert not state.takes_builds()


def test_the_database_counts_the_same_services_up(scheduler_db, override):
    override('service_down_time', 60)
    svc = scheduler_models.SchedulerService
    with engines.writer(scheduler_db) as session:
        for host, age in (('edge', 60), ('late', 61)):
            session.add(svc(host=host, binary=service_obj.SCHEDULER,
                            topic='scheduler', report_count=1,
                            last_seen_up=_ago(age)))
    since = servicegroup.up_since(NOW)
    with engines.reader(scheduler_db) as session:
        up = set(session.scalars(sa.select(svc.host).where(
            servicegroup.recent(svc.last_seen_up, since))))
    assert up == {'edge'}


def test_a_first_heartbeat_that_loses_the_race_to_create_the_record_reports(
        tmp_path, monkeypatch):
    """Two first heartbeats of one compute at once (a call sent again
    through another conductor): the one whose insert of the record the
    database refuses as a duplicate refreshes the record the other made,
    instead of failing the service's start."""
    url = 'sqlite:///' + str(tmp_path / 'cell.sqlite')
    helpers.database_at_head('cell', tmp_path / 'cell.sqlite')
    ctx = context.targeted(context.get_admin_context(), url)
    real = service_obj.heartbeat_row
    calls = []

    def racing(session, model, host, binary, topic, *args, **kwargs):
        calls.append(host)
        if len(calls) == 1:
            # The other conductor creates the record first; this one,
            # having found none, inserts its own.
            with engines.writer(url) as other:
                real(other, model, host, binary, topic)
            session.add(model(host=host, binary=binary, topic=topic,
                              report_count=0))
            session.flush()
        return real(session, model, host, binary, topic, *args, **kwargs)

    monkeypatch.setattr(service_obj, 'heartbeat_row', racing)
    try:
        service = objects.Service.heartbeat(ctx, 'h', service_obj.COMPUTE,
                                            'compute')
        assert len(calls) == 2
        assert service.host == 'h' and service.uuid
        with engines.reader(url) as session:
            rows = session.scalars(sa.select(cell_models.Service)).all()
        assert [(r.host, r.report_count) for r in rows] == [('h', 2)]
    finally:
        engines.dispose_all()
