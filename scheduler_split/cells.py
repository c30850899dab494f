"""Setting up databases and cells (``scheduler-split-manage``)."""

import contextlib
import logging
import re

import oslo_messaging
from sqlalchemy.engine import make_url
import sqlalchemy.exc

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import migration
from scheduler_split import exception
from scheduler_split import objects
from scheduler_split.objects import cell_mapping as cell_mapping_obj

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# The flavors Nova ships as examples, created by ``flavor create-defaults``.
DEFAULT_FLAVORS = [
    # flavorid, name, memory_mb, vcpus, root_gb
    ('1', 'm1.tiny', 512, 1, 1),
    ('2', 'm1.small', 2048, 1, 20),
    ('3', 'm1.medium', 4096, 2, 40),
    ('4', 'm1.large', 8192, 4, 80),
    ('5', 'm1.xlarge', 16384, 8, 160),
]


def db_sync(echo=print):
    """Create or upgrade the API, scheduler and every cell database."""
    for kind, url in (('api', CONF.api_database.connection),
                      ('scheduler', CONF.scheduler_database.connection)):
        if not url:
            raise exception.CellsNotConfigured(
                reason='[%s_database] connection is not set' % kind)
        with database(kind, url):
            migration.upgrade(kind, url)
            echo('%s database: at revision %s'
                 % (kind, migration.current(kind, url)))
    for name, url in _cell_databases():
        with database(name, url):
            migration.upgrade('cell', url)
            echo('cell database %s: at revision %s'
                 % (name, migration.current('cell', url)))


def _cell_databases():
    """(name, URL) of every mapped cell's database, cell0 included, and of
    ``[database] connection`` when no cell maps it."""
    ctx = ss_context.get_admin_context()
    with database('api', CONF.api_database.connection):
        found = [(cell.name, cell.database_connection)
                 for cell in objects.CellMapping.get_all(ctx)]
    if CONF.database.connection and CONF.database.connection not in {
            url for name, url in found}:
        found.append(('[database]', CONF.database.connection))
    return found


@contextlib.contextmanager
def database(label, url):
    """Report a database that cannot be reached or used in one line that
    names it (password masked), not as a driver's traceback."""
    try:
        yield
    except sqlalchemy.exc.SQLAlchemyError as exc:
        reason = getattr(exc, 'orig', None) or exc
        raise exception.DatabaseUnusable(
            label=label, url=safe_url(url or ''),
            reason=' '.join(str(reason).split())) from exc


def db_versions():
    """One row per database: (name, current revision, head, up to date),
    and the failures of those that could not be read."""
    rows, failures = [], []

    def _add(name, kind, url):
        head = migration.head(kind)
        if not url:
            rows.append((name, 'not configured', head, 'no'))
            return
        try:
            with database(name, url):
                current = migration.current(kind, url)
        except exception.DatabaseUnusable as exc:
            rows.append((name, 'unreachable', head, 'no'))
            failures.append(exc)
            return
        rows.append((name, current or 'none', head,
                     'yes' if current == head else 'no'))

    _add('api', 'api', CONF.api_database.connection)
    _add('scheduler', 'scheduler', CONF.scheduler_database.connection)
    if rows[0][1] in ('none', 'unreachable', 'not configured'):
        # The cells are mapped in the API database.
        failures.append(exception.CellsNotConfigured(
            reason='the cell databases are unknown until the API database '
                   'is reachable and synced (db sync)'))
        return rows, failures
    for name, url in _cell_databases():
        _add(name, 'cell', url)
    return rows, failures


def map_cell0(database_connection, echo=print):
    ctx = ss_context.get_admin_context()
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            echo('Cell0 is already set up.')
            return cell
    cell = objects.CellMapping(uuid=cell_mapping_obj.CELL0_UUID,
                               name='cell0', transport_url='none:///',
                               database_connection=database_connection)
    # Schema first: a database that cannot take it leaves nothing mapped.
    migration.upgrade('cell', database_connection)
    cell.create(ctx)
    echo('Cell0 mapped to %s' % safe_url(database_connection))
    return cell


def create_cell(name, transport_url, database_connection, uuid=None,
                echo=print):
    ctx = ss_context.get_admin_context()
    for cell in objects.CellMapping.get_all(ctx):
        if cell.name == name:
            raise exception.Conflict(reason='a cell named %s exists (%s)'
                                     % (name, cell.uuid))
        if (cell.transport_url, cell.database_connection) == (
                transport_url, database_connection):
            raise exception.Conflict(
                reason='cell %s already uses this transport URL and '
                       'database' % cell.name)
    cell = objects.CellMapping(name=name, transport_url=transport_url,
                               database_connection=database_connection)
    if uuid:
        cell.uuid = uuid
    migration.upgrade('cell', database_connection)
    cell.create(ctx)
    echo(cell.uuid)
    return cell


def discover_hosts(echo=print):
    """Map every compute host found in a cell database to its cell."""
    ctx = ss_context.get_admin_context()
    found = []
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            continue
        cctx = ss_context.target_cell(ctx, cell)
        hosts = [s.host for s in objects.Service.get_all(
            cctx, binary='scheduler-split-compute')]
        for host in objects.HostMapping.map_new_hosts(ctx, cell, hosts):
            echo('Mapped host %s to cell %s (%s)' % (host, cell.name,
                                                     cell.uuid))
            found.append(host)
    return found


def safe_url(url):
    """A URL with its password masked, for printing."""
    return re.sub(r'(://[^/@:]*:)[^/@]*@', r'\1****@', url)


def list_cells(echo=print, verbose=False):
    ctx = ss_context.get_admin_context()
    rows = [('Name', 'UUID', 'Transport URL', 'Database Connection',
             'Disabled')]
    for cell in objects.CellMapping.get_all(ctx):
        show = (lambda x: x) if verbose else safe_url
        rows.append((cell.name, cell.uuid, show(cell.transport_url),
                     show(cell.database_connection), str(cell.disabled)))
    table(rows, echo)


def table(rows, echo=print):
    """Print ``rows`` (the first one the header) as a boxed table."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    line = '+' + '+'.join('-' * (w + 2) for w in widths) + '+'
    echo(line)
    for i, row in enumerate(rows):
        echo('| ' + ' | '.join(c.ljust(w) for c, w in zip(row, widths))
             + ' |')
        if i == 0:
            echo(line)
    echo(line)


def create_default_flavors(echo=print):
    ctx = ss_context.get_admin_context()
    existing = {f.flavorid for f in objects.Flavor.get_all(ctx,
                                                           is_public=None)}
    for flavorid, name, ram, vcpus, disk in DEFAULT_FLAVORS:
        if flavorid in existing:
            continue
        objects.Flavor(flavorid=flavorid, name=name, memory_mb=ram,
                       vcpus=vcpus, root_gb=disk, ephemeral_gb=0, swap=0,
                       rxtx_factor=1.0, is_public=True,
                       disabled=False).create(ctx)
        echo('Created flavor %s' % name)


def list_hosts(cell_uuid=None, echo=print):
    """The mapped compute hosts, of one cell or of all."""
    ctx = ss_context.get_admin_context()
    if cell_uuid:
        mappings = objects.HostMapping.get_by_cell(
            ctx, objects.CellMapping.get_by_uuid(ctx, cell_uuid))
    else:
        mappings = objects.HostMapping.get_all(ctx)
    rows = [('Cell Name', 'Cell UUID', 'Hostname')]
    rows += [(m.cell_mapping.name, m.cell_mapping.uuid, m.host)
             for m in mappings]
    table(rows, echo)


def delete_cell(cell_uuid, force=False, echo=print):
    """Unmap an empty cell. Hosts still mapped to it keep it unless
    ``force`` (they are unmapped with it, and map again with
    discover_hosts if their computes report to another cell); instances
    not deleted always keep it."""
    ctx = ss_context.get_admin_context()
    cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
    hosts = [m.host for m in objects.HostMapping.get_by_cell(ctx, cell)]
    if hosts and not force:
        raise exception.CellHasHosts(name=cell.name, uuid=cell.uuid,
                                     hosts=', '.join(hosts))
    mapped = objects.InstanceMapping.count_by_cell(ctx, cell)
    if mapped:
        # Only then is the cell's database read: one already gone does
        # not keep an empty cell mapped.
        with database(cell.name, cell.database_connection):
            live = objects.Instance.get_all(
                ss_context.target_cell(ctx, cell), limit=1)
        if live:
            raise exception.CellHasInstances(name=cell.name,
                                             uuid=cell.uuid, count=mapped)
        if not force:
            raise exception.CellHasInstanceMappings(
                name=cell.name, uuid=cell.uuid, count=mapped)
        objects.InstanceMapping.destroy_by_cell(ctx, cell)
    if hosts:
        objects.HostMapping.destroy_by_cell(ctx, cell)
        echo('Unmapped hosts %s' % ', '.join(hosts))
    cell.destroy(ctx)
    echo('Deleted cell %s (%s)' % (cell.name, cell.uuid))


def check_transport_url(url):
    """ValueError unless oslo.messaging can read ``url``."""
    if not url:
        raise ValueError('the transport URL is empty')
    try:
        oslo_messaging.TransportURL.parse(CONF, url)
    except (oslo_messaging.InvalidTransportURL, ValueError) as exc:
        raise ValueError('invalid transport URL %s: %s'
                         % (safe_url(url), exc))


def check_database_url(url):
    """ValueError unless SQLAlchemy can read ``url`` and has its driver."""
    if not url:
        raise ValueError('the database connection is empty')
    try:
        make_url(url).get_dialect()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise ValueError('invalid database connection %s: %s'
                         % (safe_url(url), exc))


def update_cell(cell_uuid, name=None, transport_url=None,
                database_connection=None, echo=print):
    """Change a cell's name, bus or database; what is not given stays.

    Running services keep the bus and database they opened until they
    restart."""
    ctx = ss_context.get_admin_context()
    cell = objects.CellMapping.get_by_uuid(ctx, cell_uuid)
    if transport_url is not None:
        if cell.is_cell0 and transport_url != cell.transport_url:
            # No service listens on cell0: it only stores what failed
            # before reaching a cell.
            raise exception.Invalid(
                reason='cell0 has no message bus; its transport URL stays '
                       '%s' % cell.transport_url)
        check_transport_url(transport_url)
        cell.transport_url = transport_url
    if database_connection is not None:
        check_database_url(database_connection)
        cell.database_connection = database_connection
    if name is not None:
        if not name.strip():
            raise exception.Invalid(reason='a cell name cannot be empty')
        cell.name = name
    for other in objects.CellMapping.get_all(ctx):
        if other.uuid == cell.uuid:
            continue
        if other.name == cell.name:
            raise exception.Conflict(reason='cell %s is already named %s'
                                     % (other.uuid, cell.name))
        if (other.transport_url, other.database_connection) == (
                cell.transport_url, cell.database_connection):
            raise exception.Conflict(
                reason='cell %s (%s) already uses this transport URL and '
                       'database' % (other.name, other.uuid))
    changed = sorted(cell.obj_what_changed())
    cell.save(ctx)
    echo('Updated cell %s (%s): %s' % (
        cell.name, cell.uuid, ', '.join(changed) or 'nothing changed'))
    return cell
