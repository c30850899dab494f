"""A server list across cells reads a page from each cell, not every
server: each cell's database filters, sorts and cuts its share after the
marker, and the API merges the shares (as Nova's instance list does)."""

import datetime
import threading
import urllib.parse

from oslo_utils import uuidutils
import pytest
from sqlalchemy import event
import webob

from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split.db import cell_models
from scheduler_split.db import engines
from scheduler_split import objects
from scheduler_split.objects import instance as instance_obj

CONF = conf.CONF
pytestmark = pytest.mark.functional

SERVERS = 2000
LIMIT = 100
# Beyond a page, what a cell may be asked for: the row that tells whether
# another page follows, and the marker's own row in the cell holding it.
SLACK = 2
START = datetime.datetime(2024, 1, 1)


class Server:
    """What the test wrote of one server."""

    def __init__(self, index, cell, project='admin'):
        self.uuid = uuidutils.generate_uuid()
        self.cell = cell
        self.project = project
        self.created_at = START + datetime.timedelta(seconds=index)
        # Names in another order than creation, spread over both cells.
        self.name = 'srv-%04d' % (index * 7919 % SERVERS)
        self.host = 'far-%s' % cell.name


def _write(ctx, servers):
    """The servers' instances in their cells, and their instance
    mappings and request specs in the API database (as a placement
    leaves them), through the objects."""
    flavor = objects.Flavor.get_by_flavor_id(ctx, '1')
    records = []
    for server in servers:
        instance = objects.Instance(
            uuid=server.uuid, display_name=server.name, hostname=server.name,
            project_id=server.project, user_id=ctx.user_id,
            host=server.host, node=server.host,
            vm_state=instance_obj.ACTIVE, task_state=None,
            power_state=instance_obj.RUNNING, flavor=flavor,
            image_ref='cirros', availability_zone='nova', key_name=None,
            metadata={}, reservation_id='r-crowd', launch_index=0,
            launched_at=server.created_at, terminated_at=None,
            created_at=server.created_at, updated_at=None, deleted_at=None,
            deleted=False)
        instance.create(ss_context.target_cell(ctx, server.cell))
        spec = objects.RequestSpec(
            instance_uuid=server.uuid, project_id=server.project,
            flavor=flavor, availability_zone='zone-%s' % server.cell.name)
        mapping, spec_row, _ = objects.BuildRequest(
            instance_uuid=server.uuid, project_id=server.project,
            instance=instance).rows(spec)
        mapping[1]['cell_id'] = server.cell.id
        records += [model(**values) for model, values in (mapping,
                                                          spec_row)]
    with engines.writer(CONF.api_database.connection) as session:
        session.add_all(records)


class Crowd:
    """The all-in-one's application, the servers of the admin's project
    (``servers``), those of another, newer than all of them
    (``others``), and the two cells."""


@pytest.fixture(scope='module')
def crowd(tmp_path_factory):
    from tests.functional import fixtures
    system = fixtures.System(tmp_path_factory.mktemp('crowd'), 2, 1).start()
    crowd = Crowd()
    crowd.cells = [c for c in objects.CellMapping.get_all(_admin())
                   if not c.is_cell0]
    crowd.servers = [Server(i, crowd.cells[i % 2]) for i in range(SERVERS)]
    crowd.others = [Server(SERVERS + i, crowd.cells[i % 2], 'other')
                    for i in range(10)]
    _write(_admin(), crowd.servers + crowd.others)
    crowd.app = system.aio.wsgi_app()
    yield crowd
    system.stop()


def _admin():
    return ss_context.RequestContext(user_id='admin', project_id='admin',
                                     is_admin=True, overwrite=False)


def _get(app, path, microversion='2.96'):
    req = webob.Request.blank(path, headers={
        'X-Auth-Token': 'admin:admin',
        'OpenStack-API-Version': 'compute %s' % microversion})
    resp = req.get_response(app)
    assert resp.status_int == 200, resp.text
    return resp.json


def _next(page):
    [link] = page['servers_links']
    url = urllib.parse.urlsplit(link['href'])
    return url.path + '?' + url.query


def _every_page(app, path):
    """The ids of every server of the list, following its next links."""
    listed = []
    while True:
        page = _get(app, path)
        listed += [s['id'] for s in page['servers']]
        if 'servers_links' not in page:
            return listed
        path = _next(page)


class Reads:
    """What each database answered to this thread: the instance rows
    each cell's database returned and the statements each database ran
    (a request is served in the thread that calls the application)."""

    def __init__(self, cells):
        self.thread = threading.get_ident()
        self.engines = {c.name: engines.get_engine(c.database_connection,
                                                   False) for c in cells}
        self.cells = {id(e): name for name, e in self.engines.items()}
        self.api = engines.get_engine(CONF.api_database.connection, False)
        self.rows = {c.name: 0 for c in cells}
        self.statements = {c.name: [] for c in cells}
        self.api_statements = []
        self._listening = []

    def _loaded(self, target, context):
        if threading.get_ident() == self.thread:
            name = self.cells.get(id(context.session.get_bind()))
            if name is not None:
                self.rows[name] += 1

    def _ran(self, into):
        def ran(conn, cursor, statement, parameters, context, many):
            if threading.get_ident() == self.thread:
                into.append(statement)
        return ran

    def _listen(self, target, name, fn):
        event.listen(target, name, fn)
        self._listening.append((target, name, fn))

    def __enter__(self):
        self._listen(cell_models.Instance, 'load', self._loaded)
        for name, engine in self.engines.items():
            self._listen(engine, 'after_cursor_execute',
                         self._ran(self.statements[name]))
        self._listen(self.api, 'after_cursor_execute',
                     self._ran(self.api_statements))
        return self

    def __exit__(self, *exc):
        for target, name, fn in self._listening:
            event.remove(target, name, fn)

    def instance_queries(self, cell):
        return len([s for s in self.statements[cell] if
                    'FROM instances' in s])

    def request_spec_queries(self):
        return len([s for s in self.api_statements
                    if 'FROM request_specs' in s])


def _newest_first(servers):
    return [s.uuid for s in sorted(
        servers, key=lambda s: (s.created_at, s.uuid), reverse=True)]


def test_each_page_reads_at_most_a_page_from_each_cell(crowd):
    app, servers, cells = crowd.app, crowd.servers, crowd.cells
    expected = _newest_first(servers)

    with Reads(cells) as first_reads:
        first = _get(app, '/v2.1/servers/detail?limit=%d' % LIMIT)
    assert [s['id'] for s in first['servers']] == expected[:LIMIT]
    # 2.96: the zone each boot asked for, read for the page at once.
    by_uuid = {s.uuid: s for s in servers}
    assert {s['pinned_availability_zone'] for s in first['servers']} == {
        'zone-%s' % c.name for c in cells}
    for shown in first['servers']:
        assert shown['pinned_availability_zone'] == 'zone-%s' % by_uuid[
            shown['id']].cell.name

    with Reads(cells) as second_reads:
        second = _get(app, _next(first))
    assert [s['id'] for s in second['servers']] == expected[LIMIT:2 * LIMIT]

    for reads in (first_reads, second_reads):
        print('rows per cell %s, instance queries per cell %s, request '
              'spec queries %d' % (
                  reads.rows, {c.name: reads.instance_queries(c.name)
                               for c in cells},
                  reads.request_spec_queries()))
        for cell in cells:
            assert reads.rows[cell.name] <= LIMIT + SLACK
            assert reads.instance_queries(cell.name) <= 2
        assert reads.request_spec_queries() == 1
    # Page 1 asks each cell once; page 2 also reads the marker's row.
    assert sum(first_reads.instance_queries(c.name) for c in cells) == 2
    assert sum(second_reads.instance_queries(c.name) for c in cells) == 3


@pytest.mark.parametrize('direction', ['asc', 'desc'])
def test_a_sort_key_merges_the_cells_in_its_order(crowd, direction):
    app, servers, cells = crowd.app, crowd.servers, crowd.cells
    expected = [s.uuid for s in sorted(servers, key=lambda s: s.name,
                                       reverse=direction == 'desc')]

    page = _get(app, '/v2.1/servers?limit=%d&sort_key=display_name&'
                     'sort_dir=%s' % (LIMIT, direction))
    listed = [s['id'] for s in page['servers']]

    assert listed == expected[:LIMIT]
    assert {s.cell.name for s in servers if s.uuid in listed} == {
        c.name for c in cells}
    following = _get(app, _next(page))
    assert [s['id'] for s in following['servers']] == \
        expected[LIMIT:2 * LIMIT]


def test_ties_of_a_sort_key_are_newest_first_in_every_cell(crowd):
    app, servers = crowd.app, crowd.servers
    # Every server of a cell is on that cell's one host.
    expected = [s.uuid for s in sorted(
        sorted(servers, key=lambda s: (s.created_at, s.uuid),
               reverse=True), key=lambda s: s.host)]

    listed = _every_page(app, '/v2.1/servers?limit=700&sort_key=host&'
                              'sort_dir=asc')

    assert listed == expected


def test_a_marker_in_the_other_cell_continues_the_list(crowd):
    app, servers = crowd.app, crowd.servers
    by_name = sorted(servers, key=lambda s: s.name)
    # A page whose last server is in one cell and whose next one is in
    # the other.
    cut = next(i for i in range(1, SERVERS)
               if by_name[i - 1].cell.id != by_name[i].cell.id)
    marker = by_name[cut - 1]

    page = _get(app, '/v2.1/servers?sort_key=display_name&sort_dir=asc&'
                     'limit=5&marker=%s' % marker.uuid)

    assert [s['id'] for s in page['servers']] == [
        s.uuid for s in by_name[cut:cut + 5]]
    assert by_name[cut].cell.id != marker.cell.id


def test_a_name_filter_pages_through_the_cells_it_thins(crowd):
    app, servers = crowd.app, crowd.servers
    wanted = [s.uuid for s in sorted(servers, key=lambda s: s.created_at,
                                     reverse=True)
              if s.name.endswith('7')]

    listed = _every_page(app, '/v2.1/servers?limit=30&name=7$')

    assert listed == wanted


def test_a_build_request_is_listed_and_pages_on_into_the_cells(crowd):
    app, servers = crowd.app, crowd.servers
    ctx = _admin()
    flavor = objects.Flavor.get_by_flavor_id(ctx, '1')
    uuid = uuidutils.generate_uuid()
    # Newer than every server of the cells (and young, so that no
    # conductor takes it for a lost boot).
    newest = datetime.datetime.now(datetime.timezone.utc)
    instance = objects.Instance(
        uuid=uuid, display_name='not-placed', project_id='admin',
        user_id='admin', host=None, node=None,
        vm_state=instance_obj.BUILDING, task_state=instance_obj.SCHEDULING,
        power_state=instance_obj.NOSTATE, flavor=flavor, image_ref='cirros',
        availability_zone=None, key_name=None, metadata={},
        reservation_id='r-alone', launch_index=0, created_at=newest)
    build_request = objects.BuildRequest(
        instance_uuid=uuid, project_id='admin', instance=instance,
        created_at=newest)
    build_request.create(ctx, objects.RequestSpec(
        instance_uuid=uuid, project_id='admin', flavor=flavor))
    # Taken, as by a conductor scheduling it: nothing re-drives it here.
    assert build_request.take(ctx)
    try:
        first = _get(app, '/v2.1/servers?limit=1')
        assert [s['id'] for s in first['servers']] == [uuid]
        second = _get(app, _next(first))
        assert [s['id'] for s in second['servers']] == \
            _newest_first(servers)[:1]
        building = _get(app, '/v2.1/servers?status=BUILD')
        assert [s['id'] for s in building['servers']] == [uuid]
    finally:
        build_request.destroy(ctx)


def test_changes_since_pages_on_from_its_marker(crowd):
    since = START + datetime.timedelta(seconds=SERVERS - 250)
    wanted = _newest_first([s for s in crowd.servers
                            if s.created_at >= since])

    listed = _every_page(crowd.app, '/v2.1/servers?limit=%d&'
                         'changes-since=%sZ' % (LIMIT, since.isoformat()))

    assert listed == wanted and len(listed) == 250


def test_all_tenants_pages_through_every_project(crowd):
    everyone = _newest_first(crowd.others + crowd.servers)

    first = _get(crowd.app, '/v2.1/servers?all_tenants=1&limit=%d'
                 % LIMIT)
    following = _get(crowd.app, _next(first))
    one_project = _every_page(crowd.app, '/v2.1/servers?all_tenants=1&'
                              'tenant_id=other&limit=4')

    assert [s['id'] for s in first['servers'] + following['servers']] == \
        everyone[:2 * LIMIT]
    assert one_project == _newest_first(crowd.others)
    # Another project's server is no marker of the caller's own list.
    resp = webob.Request.blank(
        '/v2.1/servers?marker=%s' % crowd.others[0].uuid,
        headers={'X-Auth-Token': 'admin:admin'}).get_response(crowd.app)
    assert resp.status_int == 400
    assert resp.json['badRequest']['message'] == \
        'marker [%s] not found' % crowd.others[0].uuid


@pytest.mark.parametrize('param', ['status', 'image', 'flavor',
                                   'reservation_id', 'name', 'host'])
def test_a_filter_given_empty_filters_nothing(crowd, param):
    page = _get(crowd.app, '/v2.1/servers?limit=5&%s=' % param)

    assert [s['id'] for s in page['servers']] == \
        _newest_first(crowd.servers)[:5]
