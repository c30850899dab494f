"""Host aggregates, as the scheduler owns them in its database.

The API manages them through the scheduler library (scheduler RPC 1.3);
whichever scheduler the call reaches writes the database. Every change
bumps the aggregate's ``generation``, so each scheduler process notices a
change made by another one with one small query before it selects
(``signature``) and reloads them all then: selecting never reads the
aggregate tables host by host.

A host's availability zone is the ``availability_zone`` metadata of its
aggregates; a host in no zone aggregate keeps the zone its compute
reports (``[compute] availability_zone``, ``nova`` by default).
"""

import datetime
import logging

from oslo_utils import uuidutils
import sqlalchemy as sa

from scheduler_split.db import engines
from scheduler_split.db import scheduler_models
from scheduler_split import exception

AZ_KEY = 'availability_zone'
LOG = logging.getLogger(__name__)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def _iso(value):
    return value.isoformat() if value is not None else None


def to_dict(row):
    """An aggregate as the RPC carries it: plain values only."""
    metadata = {m.key: m.value for m in row.metadata_items}
    return {'id': row.id, 'uuid': row.uuid, 'name': row.name,
            'availability_zone': metadata.get(AZ_KEY),
            'hosts': [h.host for h in row.hosts], 'metadata': metadata,
            'deleted': bool(row.deleted), 'deleted_at': _iso(row.deleted_at),
            'created_at': _iso(row.created_at),
            'updated_at': _iso(row.updated_at)}


class Aggregate:
    """What filters and weighers read of one aggregate of a host."""

    __slots__ = ('id', 'uuid', 'name', 'metadata', 'hosts')

    def __init__(self, values):
        self.id = values['id']
        self.uuid = values['uuid']
        self.name = values['name']
        self.metadata = values['metadata']
        self.hosts = values['hosts']

    def __repr__(self):
        return '<Aggregate %s %s>' % (self.id, self.name)


def metadata_of(host_state):
    """``{key: {value, ...}}`` over every aggregate of the host."""
    metadata = {}
    for aggregate in getattr(host_state, 'aggregates', None) or ():
        for key, value in aggregate.metadata.items():
            metadata.setdefault(key, set()).add(value)
    return metadata


def smallest(host_state, key, default, kind=float):
    """The smallest ``key`` of the host's aggregates' metadata read as
    ``kind``, else ``default``: how an aggregate overrides a limit or a
    weigher's multiplier for its hosts. A value that does not read is
    logged and ignored."""
    values = []
    for aggregate in getattr(host_state, 'aggregates', None) or ():
        raw = aggregate.metadata.get(key)
        if raw is None:
            continue
        try:
            values.append(kind(raw))
        except ValueError:
            LOG.warning('Aggregate %s sets %s to %r, which is not a valid '
                        '%s; ignoring it', aggregate.name, key, raw,
                        kind.__name__)
    return min(values) if values else default


_AGGREGATES = scheduler_models.Aggregate.__table__
# The two values of the signature, each a scalar subquery, for a reader
# that asks them with other values in one statement.
SIGNATURE_COUNT = sa.select(
    sa.func.count(_AGGREGATES.c.id)).scalar_subquery()
SIGNATURE_SUM = sa.select(
    sa.func.coalesce(sa.func.sum(_AGGREGATES.c.generation),
                     0)).scalar_subquery()
_SIGNATURE = sa.select(SIGNATURE_COUNT, SIGNATURE_SUM)


def signature(conn):
    """What changes whenever any aggregate changes: (count, generations),
    read on ``conn`` (a connection of the scheduler database)."""
    count, total = conn.execute(_SIGNATURE).one()
    return int(count), int(total)


def by_host(db_url):
    """``{host: [Aggregate, ...]}`` of every live aggregate."""
    result = {}
    for values in list_all(db_url):
        aggregate = Aggregate(values)
        for host in values['hosts']:
            result.setdefault(host, []).append(aggregate)
    return result


def zone_of(aggregates, reported=None):
    """The availability zone of a host in ``aggregates``."""
    zones = sorted({a.metadata[AZ_KEY] for a in aggregates
                    if a.metadata.get(AZ_KEY)})
    if zones:
        return ','.join(zones)
    return reported


# The largest id a row can have (a signed 64-bit integer's largest).
MAX_ID = 2 ** 63 - 1


# --- reads and writes, each one transaction ---------------------------------

def _live(session, aggregate_id):
    agg = scheduler_models.Aggregate
    query = sa.select(agg).where(agg.deleted == 0)
    if uuidutils.is_uuid_like(str(aggregate_id)):
        query = query.where(agg.uuid == str(aggregate_id))
    else:
        try:
            wanted = int(aggregate_id)
        except (TypeError, ValueError):
            raise exception.AggregateNotFound(aggregate_id=aggregate_id)
        if not 0 < wanted <= MAX_ID:
            # No row has it, and a database driver may refuse to bind it.
            raise exception.AggregateNotFound(aggregate_id=aggregate_id)
        query = query.where(agg.id == wanted)
    row = session.scalars(query).first()
    if row is None:
        raise exception.AggregateNotFound(aggregate_id=aggregate_id)
    return row


def list_all(db_url):
    agg = scheduler_models.Aggregate
    with engines.reader(db_url) as session:
        return [to_dict(row) for row in session.scalars(
            sa.select(agg).where(agg.deleted == 0).order_by(agg.id))]


def get(db_url, aggregate_id):
    with engines.reader(db_url) as session:
        return to_dict(_live(session, aggregate_id))


def _name_taken(session, name, but=None):
    agg = scheduler_models.Aggregate
    query = sa.select(agg.id).where(agg.deleted == 0, agg.name == name)
    if but is not None:
        query = query.where(agg.id != but)
    return session.scalars(query).first() is not None


def _zones_of_hosts(session, hosts, but):
    """``{host: zone}`` that the aggregates other than ``but`` give
    ``hosts``."""
    agg, ah = scheduler_models.Aggregate, scheduler_models.AggregateHost
    meta = scheduler_models.AggregateMetadata
    rows = session.execute(
        sa.select(ah.host, meta.value)
        .join(agg, agg.id == ah.aggregate_id)
        .join(meta, sa.and_(meta.aggregate_id == agg.id,
                            meta.key == AZ_KEY))
        .where(agg.deleted == 0, agg.id != but, ah.host.in_(list(hosts))))
    return dict(rows.all())


def _check_zone(session, row, zone, action):
    """A host is in one zone at most: refuse ``zone`` for ``row`` if one
    of its hosts is in another zone through another aggregate."""
    if not zone or not row.hosts:
        return
    conflicts = sorted({z for z in _zones_of_hosts(
        session, [h.host for h in row.hosts], row.id).values() if z != zone})
    if conflicts:
        raise exception.InvalidAggregateAction(
            action=action, aggregate_id=row.id,
            reason='One or more hosts already in availability zone(s) %s'
            % conflicts)


def _bump(session, row):
    row.generation = (row.generation or 0) + 1
    row.updated_at = _now()


def create(db_url, name, availability_zone=None):
    with engines.writer(db_url) as session:
        if _name_taken(session, name):
            raise exception.AggregateNameExists(aggregate_name=name)
        row = scheduler_models.Aggregate(uuid=uuidutils.generate_uuid(),
                                         name=name, generation=1, deleted=0)
        if availability_zone:
            row.metadata_items = [scheduler_models.AggregateMetadata(
                key=AZ_KEY, value=availability_zone)]
        session.add(row)
        try:
            session.flush()
        except sa.exc.IntegrityError:
            raise exception.AggregateNameExists(aggregate_name=name)
        return to_dict(row)


def update(db_url, aggregate_id, name=None, availability_zone=None,
           set_zone=False):
    """Rename, and with ``set_zone`` set (or with None clear) the zone."""
    with engines.writer(db_url) as session:
        row = _live(session, aggregate_id)
        if name is not None and name != row.name:
            if _name_taken(session, name, but=row.id):
                raise exception.AggregateNameExists(aggregate_name=name)
            row.name = name
        if set_zone:
            _set_metadata(session, row, {AZ_KEY: availability_zone},
                          'update')
        _bump(session, row)
        try:
            session.flush()
        except sa.exc.IntegrityError:
            raise exception.AggregateNameExists(aggregate_name=name)
        return to_dict(row)


def delete(db_url, aggregate_id):
    with engines.writer(db_url) as session:
        row = _live(session, aggregate_id)
        if row.hosts:
            raise exception.AggregateNotEmpty(aggregate_id=row.id)
        row.metadata_items = []
        row.deleted = row.id
        row.deleted_at = _now()
        _bump(session, row)


def add_host(db_url, aggregate_id, host, known_hosts):
    """Add ``host``, which must be among ``known_hosts`` (hosts whose
    compute has reported)."""
    with engines.writer(db_url) as session:
        row = _live(session, aggregate_id)
        if host not in known_hosts:
            raise exception.ComputeHostNotFound(host=host)
        if host in [h.host for h in row.hosts]:
            raise exception.AggregateHostExists(aggregate_id=row.id, host=host)
        zone = {m.key: m.value for m in row.metadata_items}.get(AZ_KEY)
        if zone:
            other = _zones_of_hosts(session, [host], row.id).get(host)
            if other and other != zone:
                raise exception.InvalidAggregateAction(
                    action='add host to', aggregate_id=row.id,
                    reason='One or more hosts already in availability '
                           'zone(s) %s' % [other])
        row.hosts.append(scheduler_models.AggregateHost(host=host))
        _bump(session, row)
        session.flush()
        return to_dict(row)


def remove_host(db_url, aggregate_id, host):
    with engines.writer(db_url) as session:
        row = _live(session, aggregate_id)
        kept = [h for h in row.hosts if h.host != host]
        if len(kept) == len(row.hosts):
            raise exception.AggregateHostNotFound(aggregate_id=row.id,
                                                  host=host)
        row.hosts = kept
        _bump(session, row)
        session.flush()
        return to_dict(row)


def _set_metadata(session, row, metadata, action):
    if AZ_KEY in metadata:
        _check_zone(session, row, metadata[AZ_KEY], action)
    items = {m.key: m for m in row.metadata_items}
    for key, value in metadata.items():
        if value is None:
            if key in items:
                row.metadata_items.remove(items.pop(key))
        elif key in items:
            items[key].value = value
        else:
            item = scheduler_models.AggregateMetadata(key=key, value=value)
            row.metadata_items.append(item)
            items[key] = item


def set_metadata(db_url, aggregate_id, metadata):
    """Set keys; a None value removes its key."""
    with engines.writer(db_url) as session:
        row = _live(session, aggregate_id)
        _set_metadata(session, row, metadata, 'update metadata of')
        _bump(session, row)
        session.flush()
        return to_dict(row)
