"""A small Image service for the tests: Glance v2 ``GET /v2/images/{id}``
for the images it is given, on a free port of 127.0.0.1, recording the
requests it answers."""

import contextlib
import json
import threading
import wsgiref.simple_server

import webob
import webob.dec


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


class FakeGlance:
    def __init__(self, *images):
        self.images = {i['id']: i for i in images}
        self.requests = []
        self.url = None

    @webob.dec.wsgify
    def __call__(self, req):
        self.requests.append(req.copy())
        prefix = '/v2/images/'
        found = (self.images.get(req.path[len(prefix):])
                 if req.path.startswith(prefix) else None)
        if found is None:
            return webob.Response(status=404, text='404 Not Found')
        response = webob.Response(content_type='application/json',
                                  charset='UTF-8')
        response.text = json.dumps(found)
        return response


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
