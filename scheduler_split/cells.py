"""Setting up databases and cells (``scheduler-split-manage``)."""

import logging
import re

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
        migration.upgrade(kind, url)
        echo('%s database: at revision %s' % (kind,
                                              migration.current(kind, url)))
    cell_urls = {}
    ctx = ss_context.get_admin_context()
    for cell in objects.CellMapping.get_all(ctx):
        cell_urls[cell.database_connection] = cell.name
    if CONF.database.connection:
        cell_urls.setdefault(CONF.database.connection, '[database]')
    for url, name in cell_urls.items():
        migration.upgrade('cell', url)
        echo('cell database %s: at revision %s'
             % (name, migration.current('cell', url)))


def map_cell0(database_connection, echo=print):
    ctx = ss_context.get_admin_context()
    for cell in objects.CellMapping.get_all(ctx):
        if cell.is_cell0:
            echo('Cell0 is already set up.')
            return cell
    cell = objects.CellMapping(uuid=cell_mapping_obj.CELL0_UUID,
                               name='cell0', transport_url='none:///',
                               database_connection=database_connection)
    cell.create(ctx)
    migration.upgrade('cell', database_connection)
    echo('Cell0 mapped to %s' % _safe(database_connection))
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
    cell.create(ctx)
    migration.upgrade('cell', database_connection)
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


def _safe(url):
    """A URL with its password masked, for printing."""
    return re.sub(r'(://[^/@:]*:)[^/@]*@', r'\1****@', url)


def list_cells(echo=print, verbose=False):
    ctx = ss_context.get_admin_context()
    rows = [('Name', 'UUID', 'Transport URL', 'Database Connection',
             'Disabled')]
    for cell in objects.CellMapping.get_all(ctx):
        show = (lambda x: x) if verbose else _safe
        rows.append((cell.name, cell.uuid, show(cell.transport_url),
                     show(cell.database_connection), str(cell.disabled)))
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
