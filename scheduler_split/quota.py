"""Quotas: what a project (or a user, for key pairs) may hold, and what
it holds now.

A limit is, from the most specific: the project's own (``quotas``), the
quota class ``default`` (``quota_classes``), the ``[quota]`` option; -1
means no limit. Usage is counted from the API database, which records
every server from its boot (instance mappings carry the vCPUs and RAM each
one counts) until the API deletes it.

Counting and recording are one transaction that first updates the
project's row of ``project_quota_locks``: two creates of one project
(in one API process or several) take turns there, so the second counts
what the first recorded and two creates can never both take the last
slot. Nothing is reserved ahead and nothing needs a recheck.
"""

import sqlalchemy as sa

from scheduler_split import conf
from scheduler_split.db import api_models
from scheduler_split.db import engines
from scheduler_split.db import outage
from scheduler_split import exception

CONF = conf.CONF

# What os-quota-sets shows and sets, in Nova's names.
RESOURCES = ('instances', 'cores', 'ram', 'metadata_items', 'key_pairs',
             'server_groups', 'server_group_members', 'injected_files',
             'injected_file_content_bytes', 'injected_file_path_bytes')
# Shown before 2.57 only (personality went away).
INJECTED = ('injected_files', 'injected_file_content_bytes',
            'injected_file_path_bytes')
# Shown before 2.36 only (the network proxies went away): nothing here
# counts them, and their limits are Nova's defaults.
NETWORK_DEFAULTS = {'fixed_ips': -1, 'floating_ips': 10,
                    'security_groups': 10, 'security_group_rules': 20}
DEFAULT_CLASS = 'default'


class OverQuota(exception.NotAuthorized):
    """403, in Nova's words: 'Quota exceeded for instances: Requested 1,
    but already used 10 of 10 instances'."""
    msg_fmt = 'Quota exceeded for %(resource)s: %(detail)s'


def _api_db():
    return CONF.api_database.connection


def _overridden(session, limits, model, column, owner):
    """``limits`` with the rows of ``model`` whose ``column`` is
    ``owner`` written over them."""
    for resource, limit in session.execute(
            sa.select(model.resource, model.hard_limit).where(
                getattr(model, column) == owner)):
        if resource in limits:
            limits[resource] = limit
    return limits


def defaults(session=None):
    """``{resource: limit}`` every project starts from."""
    if session is None:
        with engines.reader(_api_db()) as session:
            return defaults(session)
    # The network quotas are kept and shown before 2.36, as Nova keeps
    # them, and enforced nowhere: this cloud has no networks.
    return _overridden(
        session, dict({name: getattr(CONF.quota, name)
                       for name in RESOURCES}, **NETWORK_DEFAULTS),
        api_models.QuotaClass, 'class_name', DEFAULT_CLASS)


def class_limits(class_name):
    with engines.reader(_api_db()) as session:
        return _overridden(session, defaults(session), api_models.QuotaClass,
                           'class_name', class_name)


# The statements of every boot, built once, the project as a parameter.
_QC, _Q = api_models.QuotaClass.__table__, api_models.Quota.__table__
_LIMITS = sa.union_all(
    sa.select(sa.literal(0).label('rank'), _QC.c.resource, _QC.c.hard_limit)
    .where(_QC.c.class_name == DEFAULT_CLASS),
    sa.select(sa.literal(1).label('rank'), _Q.c.resource, _Q.c.hard_limit)
    .where(_Q.c.project_id == sa.bindparam('b_project_id')))
_IM = api_models.InstanceMapping.__table__
_SERVER_USAGE = sa.select(
    sa.func.count(_IM.c.id), sa.func.coalesce(sa.func.sum(_IM.c.vcpus), 0),
    sa.func.coalesce(sa.func.sum(_IM.c.memory_mb), 0)).where(
    _IM.c.project_id == sa.bindparam('b_project_id'),
    _IM.c.queued_for_delete.is_(False))
_LOCK = api_models.ProjectQuotaLock.__table__
_TAKE_TURN = _LOCK.update().where(
    _LOCK.c.project_id == sa.bindparam('b_project_id')).values(
    generation=_LOCK.c.generation + 1)


def limits(project_id, session=None):
    """``{resource: limit}`` of ``project_id``: the defaults, the quota
    class ``default`` over them and the project's own over that, read in
    one statement."""
    if session is None:
        with engines.reader(_api_db()) as session:
            return limits(project_id, session)
    rows = session.connection().execute(
        _LIMITS, dict(b_project_id=project_id)).all()
    result = dict({name: getattr(CONF.quota, name) for name in RESOURCES},
                  **NETWORK_DEFAULTS)
    for _, resource, limit in sorted(rows, key=lambda row: row[0]):
        if resource in result:
            result[resource] = limit
    return result


def usage(project_id, user_id=None, session=None):
    """What ``project_id`` holds: instances, cores, ram, server_groups
    (and the user's key_pairs with ``user_id``)."""
    if session is None:
        with engines.reader(_api_db()) as session:
            return usage(project_id, user_id, session)
    result = server_usage(session, project_id)
    result['server_groups'] = int(session.scalar(sa.select(sa.func.count(
        api_models.InstanceGroup.id)).where(
        api_models.InstanceGroup.project_id == project_id)))
    if user_id is not None:
        result['key_pairs'] = key_pair_count(session, user_id)
    return result


def server_usage(session, project_id):
    """The instances, cores and ram ``project_id``'s servers hold: what
    a boot is counted against."""
    count, cores, ram = session.connection().execute(
        _SERVER_USAGE, dict(b_project_id=project_id)).one()
    return {'instances': int(count), 'cores': int(cores), 'ram': int(ram)}


def key_pair_count(session, user_id):
    return int(session.scalar(sa.select(sa.func.count(
        api_models.KeyPair.id)).where(api_models.KeyPair.user_id == user_id)))


def group_member_count(session, group_uuid):
    ig, member = api_models.InstanceGroup, api_models.InstanceGroupMember
    return int(session.scalar(
        sa.select(sa.func.count(member.id))
        .join(ig, ig.id == member.group_id).where(ig.uuid == group_uuid)))


def _take_turn(session, project_id):
    return session.connection().execute(
        _TAKE_TURN, dict(b_project_id=project_id)).rowcount


def lock_project(session, project_id):
    """Take the project's turn: held until ``session`` commits."""
    if _take_turn(session, project_id):
        return
    # The project's first counted create.
    if session.get_bind().dialect.name == 'sqlite':
        # Writers take turns on the whole database already: make the
        # row, which holds the turn as the update would have.
        session.add(api_models.ProjectQuotaLock(project_id=project_id,
                                                generation=0))
        session.flush()
        return
    # The row is made in a transaction of its own, then updated here as
    # any later create does. Made in this one, concurrent first creates
    # would each wait on the row the first one inserted, and InnoDB keeps
    # the shared lock of such a wait after the duplicate is refused:
    # two of them updating the row then wait on each other (a deadlock).
    for _ in range(3):
        try:
            # Whoever makes it, the row is there: the create may still
            # be run again from the start (outage.retry_races).
            with outage.repeatable(), engines.writer(_api_db()) as other:
                other.add(api_models.ProjectQuotaLock(
                    project_id=project_id, generation=0))
        except sa.exc.IntegrityError:
            pass        # made by a concurrent create meanwhile
        except sa.exc.DBAPIError as exc:
            # Waiting creates of a row whose maker rolled back deadlock:
            # one of them makes it.
            if not engines.aborted_for_a_race(exc):
                raise
        if _take_turn(session, project_id):
            return
    raise exception.Invalid('the quota row of project %s could not be '
                            'made' % project_id)


def _unlimited(limit):
    return limit is None or limit < 0


def _over(resource, requested, used, limit):
    return OverQuota(resource=resource, detail=(
        'Requested %d, but already used %d of %d %s'
        % (requested, used, limit, resource)))


def check(resource, requested, used, limit):
    """OverQuota unless ``used + requested`` fits ``limit``."""
    if not _unlimited(limit) and used + requested > limit:
        raise _over(resource, requested, used, limit)


def check_metadata_items(metadata):
    """OverQuota, in Nova's words, for more metadata items than ``[quota]
    metadata_items`` (a server's; the API's schema has checked each key
    and value)."""
    allowed = CONF.quota.metadata_items
    if metadata and 0 <= allowed < len(metadata):
        raise OverQuota(
            resource='metadata items',
            detail='Requested %d, but the limit is %d. Maximum number of '
                   'metadata items exceeds %d'
                   % (len(metadata), allowed, allowed))


def servers_that_fit(session, project_id, flavor, min_count, max_count,
                     group_uuid=None):
    """How many servers of ``flavor`` (``min_count``..``max_count``) the
    project may boot now, counted in ``session`` (which holds the
    project's lock); OverQuota in Nova's words if not even ``min_count``.
    """
    allowed = limits(project_id, session)
    used = server_usage(session, project_id)
    each = {'instances': 1, 'cores': flavor.vcpus, 'ram': flavor.memory_mb}
    fit = max_count
    for resource, amount in each.items():
        limit = allowed[resource]
        if _unlimited(limit) or not amount:
            continue
        fit = min(fit, (limit - used[resource]) // amount)
    if group_uuid is not None:
        limit = allowed['server_group_members']
        if not _unlimited(limit):
            fit = min(fit, limit - group_member_count(session, group_uuid))
    if fit >= min_count:
        return fit
    # Name every resource the minimum does not fit, as Nova does.
    over = []
    for resource, amount in each.items():
        limit = allowed[resource]
        if not _unlimited(limit) and \
                used[resource] + amount * min_count > limit:
            over.append((resource, amount * min_count, used[resource],
                         limit))
    if not over and group_uuid is not None:
        raise OverQuota('Quota exceeded, too many servers in group')

    def join(index):
        return ', '.join(str(item[index]) for item in over)
    raise OverQuota(resource=join(0), detail=(
        'Requested %s, but already used %s of %s %s'
        % (join(1), join(2), join(3), join(0))))


def create_server_group(ctx, group):
    """Record ``group`` unless its project holds ``server_groups``
    already (counted in the project's turn)."""
    with engines.writer(_api_db()) as session:
        lock_project(session, group.project_id)
        check('server_groups', 1,
              usage(group.project_id, session=session)['server_groups'],
              limits(group.project_id, session)['server_groups'])
        group.create(ctx, session=session)


def count_resize(project_id, instance_uuid, old_flavor, new_flavor):
    """A resize of the server ``instance_uuid`` starts: in the project's
    turn, refuse it (OverQuota, in Nova's words) if the growth in cores
    or ram does not fit, else count the larger of the two flavors for the
    server until :func:`settle_resize` counts the one it ends with."""
    grow = {'cores': new_flavor.vcpus - old_flavor.vcpus,
            'ram': new_flavor.memory_mb - old_flavor.memory_mb}
    im = api_models.InstanceMapping
    with engines.writer(_api_db()) as session:
        lock_project(session, project_id)
        if any(amount > 0 for amount in grow.values()):
            allowed = limits(project_id, session)
            used = usage(project_id, session=session)
            for resource, amount in grow.items():
                if amount > 0:
                    check(resource, amount, used[resource],
                          allowed[resource])
        session.execute(sa.update(im).where(
            im.instance_uuid == instance_uuid).values(
            vcpus=max(old_flavor.vcpus, new_flavor.vcpus),
            memory_mb=max(old_flavor.memory_mb, new_flavor.memory_mb)))


def settle_resize(instance_uuid, flavor):
    """A resize ended (confirmed: the new flavor; reverted or failed:
    the old one): the server counts ``flavor`` again."""
    im = api_models.InstanceMapping
    with engines.writer(_api_db()) as session:
        session.execute(sa.update(im).where(
            im.instance_uuid == instance_uuid).values(
            vcpus=flavor.vcpus, memory_mb=flavor.memory_mb))


def count_restore(project_id, instance_uuid, flavor):
    """A soft-deleted server is restored: in the project's turn, refuse
    it (OverQuota, in Nova's words) unless one more server of ``flavor``
    fits, else count it again."""
    im = api_models.InstanceMapping
    with engines.writer(_api_db()) as session:
        lock_project(session, project_id)
        allowed = limits(project_id, session)
        used = server_usage(session, project_id)
        for resource, amount in (('instances', 1), ('cores', flavor.vcpus),
                                 ('ram', flavor.memory_mb)):
            check(resource, amount, used[resource], allowed[resource])
        session.execute(sa.update(im).where(
            im.instance_uuid == instance_uuid).values(
            queued_for_delete=False))
