"""The plan of an unfinished build in a cell: the host it was cast to,
the alternates not tried yet, the attempts so far and its request spec
(``cell_models.BuildPlan``).

The super-conductor records it as it hands a build to a compute; each
reschedule moves it on to the next alternate, only from the host it
read (so two conductors never both move a build); a build starts only on
the host its plan names; a host that gives a build back clears its host.
Never sent over RPC: a cell conductor reads it from its own database.
"""

import datetime

from oslo_serialization import jsonutils
import sqlalchemy as sa

from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split.objects import base
from scheduler_split.objects import instance as instance_obj
from scheduler_split.objects import request_spec as request_spec_obj
from scheduler_split.objects import selection as selection_obj

_PLANS = cell_models.BuildPlan.__table__
_INSTANCES = cell_models.Instance.__table__
_INSERT = _PLANS.insert()


def _host_is(host):
    """The plan's host is ``host`` (NULL for None)."""
    if host is None:
        return _PLANS.c.host.is_(None)
    return _PLANS.c.host == host


class BuildPlan:
    """One row of ``build_plans``."""

    def __init__(self, instance_uuid, host, node, request_spec, alternates,
                 retry, recasts=0, updated_at=None):
        self.instance_uuid = instance_uuid
        self.host = host
        self.node = node
        self.request_spec = request_spec
        self.alternates = list(alternates)
        self.retry = retry
        self.recasts = recasts
        self.updated_at = updated_at

    def __repr__(self):
        return '<BuildPlan %s on %s, alternates %s, %d recasts>' % (
            self.instance_uuid, self.host,
            [s.service_host for s in self.alternates], self.recasts)

    @classmethod
    def _from_row(cls, row):
        return cls(row.instance_uuid, row.host, row.node,
                   request_spec_obj.RequestSpec.from_json(row.request_spec),
                   [selection_obj.Selection.obj_from_primitive(p)
                    for p in jsonutils.loads(row.alternates)],
                   request_spec_obj.SchedulerRetries.from_json(row.retry),
                   row.recasts, row.updated_at)

    @staticmethod
    def _alternates_json(alternates):
        return jsonutils.dumps([s.obj_to_primitive() for s in alternates])

    def create(self, ctx):
        """Record it: once per build, as it is handed to its first host
        (one statement). False if the build has a plan already."""
        now = base.naive_utc(base.utcnow())
        values = dict(instance_uuid=self.instance_uuid, host=self.host,
                      node=self.node,
                      request_spec=self.request_spec.to_json(),
                      alternates=self._alternates_json(self.alternates),
                      retry=self.retry.to_json(), recasts=self.recasts,
                      created_at=now, updated_at=now)
        try:
            with engines.writer(instance_obj.cell_db(ctx)) as session:
                session.connection().execute(_INSERT, values)
        except sa.exc.IntegrityError:
            with engines.reader(instance_obj.cell_db(ctx)) as session:
                if session.execute(sa.select(_PLANS.c.instance_uuid).where(
                        _PLANS.c.instance_uuid ==
                        self.instance_uuid)).first() is None:
                    raise
            return False
        self.updated_at = now
        return True

    @classmethod
    def get(cls, ctx, instance_uuid):
        """The instance's plan, or None (a build recorded before plans
        were, or one that is finished)."""
        with engines.connection(instance_obj.cell_db(ctx)) as conn:
            row = conn.execute(sa.select(_PLANS).where(
                _PLANS.c.instance_uuid == instance_uuid)).first()
        return None if row is None else cls._from_row(row)

    def _update_if_unchanged(self, ctx, **values):
        """Write ``values`` into the plan if nobody changed it since this
        copy was read (its host and its casts as this copy has them):
        whether it did. One of several conductors doing so wins.

        On Galera with conductors writing to different nodes, each
        node's update matches and the loser learns it lost only at
        commit, which the cluster refuses (a deadlock error): the update
        is run again, and matches nothing once the winner's write is
        there."""
        return outage.retry_races(self._update_once, ctx, values)

    def _update_once(self, ctx, values):
        now = base.naive_utc(base.utcnow())
        with engines.writer(instance_obj.cell_db(ctx)) as session:
            result = session.connection().execute(
                _PLANS.update().where(
                    _PLANS.c.instance_uuid == self.instance_uuid,
                    _host_is(self.host),
                    _PLANS.c.recasts == self.recasts)
                .values(updated_at=now, **values))
        if result.rowcount != 1:
            return False
        self.updated_at = now
        return True

    def move_to(self, ctx, selection, rest, retry):
        """Name ``selection``'s host as the one the build goes to next,
        with the alternates ``rest`` and ``retry``, if nobody moved the
        plan since it was read: True for exactly one of several
        conductors moving it from the same host."""
        if not self._update_if_unchanged(
                ctx, host=selection.service_host, node=selection.nodename,
                alternates=self._alternates_json(rest),
                retry=retry.to_json(), recasts=0):
            return False
        self.host, self.node = selection.service_host, selection.nodename
        self.alternates, self.retry, self.recasts = list(rest), retry, 0
        return True

    def go_back_to(self, ctx, host, node, retry, recasts):
        """Name ``host`` (and ``node``) again, with no alternates left,
        ``retry`` and ``recasts`` casts counted, if nobody moved the plan
        since it was read: whether it did. A build none of whose
        alternates took it so waits for the host that still holds its
        claim."""
        if not self._update_if_unchanged(
                ctx, host=host, node=node,
                alternates=self._alternates_json([]),
                retry=retry.to_json(), recasts=recasts):
            return False
        self.host, self.node, self.alternates = host, node, []
        self.retry, self.recasts = retry, recasts
        return True

    def note_recast(self, ctx):
        """Count one more cast to the plan's host, if nobody changed the
        plan since it was read: True if this caller is to cast."""
        if not self._update_if_unchanged(ctx, recasts=self.recasts + 1):
            return False
        self.recasts += 1
        return True

    @classmethod
    def get_stalled(cls, ctx, seconds):
        """``[(instance, plan)]`` of the builds waiting for a host (task
        state ``scheduling``, no host) that neither their row nor their
        plan saw a change of for ``seconds``: the cast to their host, or
        a host's give-back of them to this conductor, was lost."""
        cutoff = base.naive_utc(base.utcnow()) - datetime.timedelta(
            seconds=seconds)
        touched = sa.func.coalesce(cell_models.Instance.updated_at,
                                   cell_models.Instance.created_at)
        with engines.reader(instance_obj.cell_db(ctx)) as session:
            rows = session.execute(
                sa.select(cell_models.Instance, cell_models.BuildPlan).join(
                    cell_models.BuildPlan,
                    cell_models.BuildPlan.instance_uuid ==
                    cell_models.Instance.uuid).where(
                    cell_models.Instance.deleted.is_(False),
                    cell_models.Instance.vm_state == instance_obj.BUILDING,
                    cell_models.Instance.task_state == instance_obj.SCHEDULING,
                    cell_models.Instance.host.is_(None),
                    touched < cutoff,
                    sa.func.coalesce(
                        cell_models.BuildPlan.updated_at,
                        cell_models.BuildPlan.created_at) < cutoff)
                .order_by(cell_models.Instance.id)).all()
            return [(instance_obj.Instance.from_row(instance),
                     cls._from_row(plan)) for instance, plan in rows]

    @staticmethod
    def prune(ctx):
        """Delete the plans of builds that are over (the instance is
        no longer building, or is gone); how many went."""
        building = sa.select(_INSTANCES.c.uuid).where(
            _INSTANCES.c.deleted.is_(False),
            _INSTANCES.c.vm_state == instance_obj.BUILDING)
        with engines.writer(instance_obj.cell_db(ctx)) as session:
            result = session.connection().execute(_PLANS.delete().where(
                _PLANS.c.instance_uuid.not_in(building)))
        return result.rowcount
