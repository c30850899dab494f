"""A small Image service for the tests, on a free port of 127.0.0.1,
recording the requests it answers: Glance v2's show, list (equality
filters on any key, ``limit``, ``marker``, ``sort_key``/``sort_dir``),
create, upload, JSON-patch and delete of the images it is given or
creates."""

import contextlib
import itertools
import json
import threading
import uuid
import wsgiref.simple_server

import webob
import webob.dec

_PAGING = ('limit', 'marker', 'sort_key', 'sort_dir')


class _QuietHandler(wsgiref.simple_server.WSGIRequestHandler):
    def log_message(self, *args):
        pass


def image(image_id, name, min_ram=0, min_disk=0, **properties):
    """An image as Glance v2 shows it, ``properties`` as top-level keys."""
    body = {'id': image_id, 'name': name, 'status': 'active',
            'visibility': 'public', 'protected': False, 'os_hidden': False,
            'min_ram': min_ram, 'min_disk': min_disk, 'size': 1024,
            'virtual_size': None, 'disk_format': 'qcow2',
            'container_format': 'bare', 'checksum': None, 'owner': None,
            'tags': [], 'created_at': '2026-01-01T00:00:00Z',
            'updated_at': '2026-01-01T00:00:00Z',
            'self': '/v2/images/%s' % image_id,
            'file': '/v2/images/%s/file' % image_id,
            'schema': '/v2/schemas/image'}
    body.update(properties)
    return body


def _json(body, status=200):
    response = webob.Response(status=status, content_type='application/json',
                              charset='UTF-8')
    response.text = json.dumps(body)
    return response


class FakeGlance:
    def __init__(self, *images):
        self.images = {i['id']: i for i in images}
        self.requests = []
        self.url = None
        # Creation times that sort in the order of creation.
        self._clock = ('2026-02-01T00:00:%02dZ' % i
                       for i in itertools.count())

    @webob.dec.wsgify
    def __call__(self, req):
        self.requests.append(req.copy())
        parts = req.path.strip('/').split('/')
        if parts[:2] != ['v2', 'images']:
            return webob.Response(status=404, text='404 Not Found')
        if len(parts) == 2:
            return self._list(req) if req.method == 'GET' else self._create(
                req)
        found = self.images.get(parts[2])
        if found is None:
            return webob.Response(status=404, text='404 Not Found')
        if parts[3:] == ['file'] and req.method == 'PUT':
            found.update(status='active', size=len(req.body))
            return webob.Response(status=204)
        if req.method == 'DELETE':
            if found['protected']:
                return webob.Response(status=403, text='403 Forbidden')
            del self.images[found['id']]
            return webob.Response(status=204)
        if req.method == 'PATCH':
            for change in json.loads(req.body):
                key = change['path'].lstrip('/')
                if change['op'] == 'remove':
                    found.pop(key)
                else:
                    found[key] = change['value']
        return _json(found)

    def _create(self, req):
        body = json.loads(req.body)
        created = image(body.pop('id', str(uuid.uuid4())), body.pop('name'),
                        status='queued', size=None, **body)
        created['created_at'] = created['updated_at'] = next(self._clock)
        self.images[created['id']] = created
        return _json(created, status=201)

    def _list(self, req):
        found = [i for i in self.images.values()
                 if all(str(i.get(k)) == v for k, v in req.GET.items()
                        if k not in _PAGING)]
        found.sort(key=lambda i: (i.get(req.GET.get('sort_key',
                                                    'created_at')), i['id']),
                   reverse=req.GET.get('sort_dir', 'desc') == 'desc')
        if 'marker' in req.GET:
            ids = [i['id'] for i in found]
            found = found[ids.index(req.GET['marker']) + 1:]
        limit = int(req.GET.get('limit', 25))
        body = {'images': found[:limit], 'first': '/v2/images',
                'schema': '/v2/schemas/images'}
        if len(found) > limit:
            body['next'] = '/v2/images?marker=%s' % found[limit - 1]['id']
        return _json(body)


@contextlib.contextmanager
def serving(*images):
    """A :class:`FakeGlance` serving ``images``; its ``url`` is set."""
    app = FakeGlance(*images)
    server = wsgiref.simple_server.make_server(
        '127.0.0.1', 0, app, handler_class=_QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    app.url = 'http://127.0.0.1:%d' % server.server_port
    try:
        yield app
    finally:
        server.shutdown()
        server.server_close()
