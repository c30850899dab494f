"""The compute API as a boot run (:mod:`.boot`) speaks to it: one HTTP
connection per thread of the run, each request that finds no API or
answers an error turned into a BenchError that says what was being
done; and the questions the run asks besides its POSTs: the flavor and
the image by name, room in the project's quota (and the quota put back
after), the servers changed since a time (every page of them), how many
hosts each server's build was tried on, and the deletes of the servers
at the end."""

import http.client
import threading
import urllib.parse

from oslo_utils import uuidutils

from scheduler_split.benchmark import api_client
from scheduler_split.benchmark import base

# Instance actions show their events to every reader from 2.51 (before,
# to admins only).
ACTIONS_MICROVERSION = '2.51'
# Each attempt to build a server on a host records this event in the
# server's create action, whether the spawn worked or not; more than one
# means the server was rescheduled.
BUILD_ATTEMPT_EVENT = 'compute_build_and_run_instance'


class BootApi:
    """The compute API at ``endpoint`` (no trailing slash), as the user
    of ``token`` (in ``project_id``, if given) reaches it, from any
    thread of a run."""

    def __init__(self, endpoint, token, project_id):
        self.endpoint = endpoint
        self.token = token
        self.project_id = project_id
        self._local = threading.local()
        self._clients = []
        self._lock = threading.Lock()
        # A URL that is none fails here, before any work.
        api_client.parse_endpoint(self.endpoint)

    def client(self):
        """This thread's connection."""
        client = getattr(self._local, 'client', None)
        if client is None:
            client = self._local.client = api_client.ComputeClient(
                self.endpoint, self.token, self.project_id)
            with self._lock:
                self._clients.append(client)
        return client

    def request(self, method, path, what, body=None, **kwargs):
        """The answer to ``method`` on ``path``; BenchError, saying
        ``what`` was being done, if no API answered."""
        try:
            return self.client().request(method, path, body, **kwargs)
        except (OSError, http.client.HTTPException) as exc:
            raise base.BenchError('%s %s%s (%s) found no API: %s'
                                  % (method, self.endpoint, path, what,
                                     exc or type(exc).__name__))

    def get(self, path, what, **kwargs):
        """The answer to a GET of ``path`` (``what``), which must be 200
        (else BenchError)."""
        resp = self.request('GET', path, what, **kwargs)
        if resp.status != 200:
            raise base.BenchError('Reading %s (GET %s%s) answered %d: %s'
                                  % (what, self.endpoint, path, resp.status,
                                     resp.error_message()))
        return resp

    def close(self):
        """Close every thread's connection."""
        with self._lock:
            for client in self._clients:
                client.close()

    # --- before the clock starts -------------------------------------------

    def find_flavor(self, flavor_ref):
        """The flavor named ``flavor_ref`` (or of that id)."""
        resp = self.get('/flavors/detail', 'the flavors')
        for flavor in resp.body['flavors']:
            if flavor_ref in (flavor['name'], flavor['id']):
                return flavor
        raise base.BenchError('No flavor %r: the API offers %s' % (
            flavor_ref,
            ', '.join(f['name'] for f in resp.body['flavors']) or 'none'))

    def find_image(self, image_ref):
        """The image's id: looked up by name in the image catalog beside
        the compute API (``<root>/image``, the all-in-one's), unless it
        is an id already. Where nothing serves that catalog (a
        deployment's API on the built-in catalog, which takes a name as
        ``imageRef``), the name itself is sent."""
        if uuidutils.is_uuid_like(image_ref):
            return image_ref
        client = self.client()
        root = self.endpoint.rsplit('/v2', 1)[0]
        path = client.base_path.rsplit('/v2', 1)[0] + '/image/v2/images'
        query = urllib.parse.urlencode({'name': image_ref})
        try:
            resp = client.request('GET', path + '?' + query, absolute=True)
        except (OSError, http.client.HTTPException) as exc:
            resp = None
            reason = str(exc)
        else:
            reason = 'it answered %d' % resp.status
            if resp.status == 404:
                return image_ref
        if resp is not None and resp.status == 200:
            for image in resp.body.get('images', []):
                if image.get('name') == image_ref:
                    return image['id']
            reason = 'it has no image of that name'
        raise base.BenchError('Cannot find image %r in the image catalog '
                              'at %s/image (%s); give --image an image id'
                              % (image_ref, root, reason))

    def make_room(self, flavor, servers):
        """Raise the project's quota where it is too small for
        ``servers`` more servers of ``flavor``; ``(the server's time
        before the run, the limits it replaced (None if it changed
        none))``."""
        resp = self.get('/limits', 'the limits')
        # The server's time before the run: where the watcher's first
        # look for changed servers starts.
        since = resp.server_time()
        absolute = resp.body['limits']['absolute']
        each = {'instances': ('maxTotalInstances', 'totalInstancesUsed', 1),
                'cores': ('maxTotalCores', 'totalCoresUsed',
                          flavor['vcpus']),
                'ram': ('maxTotalRAMSize', 'totalRAMUsed',
                        flavor['ram'])}
        short = {}
        for resource, (limit_key, used_key, amount) in each.items():
            limit = absolute[limit_key]
            wanted = absolute[used_key] + servers * amount
            if limit != -1 and limit < wanted:
                short[resource] = wanted
        if not short:
            return since, None
        if not self.project_id:
            raise base.BenchError(
                'The quota of your project is too small for %d more '
                'servers of %s (it needs %s); raise it (openstack quota '
                'set) or ask for fewer --servers'
                % (servers, flavor['name'],
                   ', '.join('%s=%d' % i for i in sorted(short.items()))))
        path = '/os-quota-sets/%s' % self.project_id
        before = self.get(path, 'the quota').body['quota_set']
        resp = self.request('PUT', path, 'raising the quota',
                            {'quota_set': short})
        if resp.status != 200:
            raise base.BenchError('Could not raise the quota of project %s '
                                  'to %s: %d %s' % (self.project_id, short,
                                                    resp.status,
                                                    resp.error_message()))
        return since, {resource: before[resource] for resource in short}

    # --- while it runs ------------------------------------------------------

    def list_servers(self, since=None):
        """The servers changed since ``since`` (every server if None),
        following every page; and when the first page was answered."""
        path = '/servers/detail'
        if since is not None:
            path += '?' + urllib.parse.urlencode(
                {'changes-since': since.strftime('%Y-%m-%dT%H:%M:%S.%fZ')})
        resp = self.get(path, 'the server list')
        answered_at = resp.server_time()
        servers = list(resp.body['servers'])
        while True:
            following = api_client.next_page(resp.body)
            if following is None:
                return servers, answered_at
            resp = self.get(following, 'the server list', absolute=True)
            servers.extend(resp.body['servers'])

    def attempts_of(self, server_id):
        """How many hosts the build of ``server_id`` was tried on, from
        the events of its create action (0 if it has none yet)."""
        path = '/servers/%s/os-instance-actions' % server_id
        actions = self.get(path, 'the actions of %s' % server_id,
                           microversion=ACTIONS_MICROVERSION).body
        creates = [a for a in actions['instanceActions']
                   if a['action'] == 'create']
        if not creates:
            # Not in a cell yet: no attempt was made.
            return 0
        action = self.get('%s/%s' % (path, creates[0]['request_id']),
                          'the create action of %s' % server_id,
                          microversion=ACTIONS_MICROVERSION).body
        return sum(1 for e in action['instanceAction'].get('events', [])
                   if e['event'] == BUILD_ATTEMPT_EVENT)

    # --- after ---------------------------------------------------------------

    def delete(self, server_id):
        """Whether ``server_id`` was deleted (or was gone already)."""
        try:
            resp = self.client().request('DELETE', '/servers/%s'
                                         % server_id)
        except (OSError, http.client.HTTPException):
            return False
        return resp.status in (204, 404)

    def restore_quota(self, quota):
        """Put back the limits ``quota`` of the project, forced (the
        servers just deleted may still count); None, or what went
        wrong."""
        body = dict(quota, force=True)
        try:
            resp = self.request(
                'PUT', '/os-quota-sets/%s' % self.project_id,
                'putting back the quota', {'quota_set': body})
        except base.BenchError as exc:
            return str(exc)
        return None if resp.status == 200 else resp.error_message()
