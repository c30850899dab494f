"""The images the API boots, lists and snapshots: the built-in catalog or
an Image service.

``[glance] source`` says which. With ``builtin`` the catalog is
:mod:`scheduler_split.image.catalog` (the three built-in images and the
images users made, in the API database). With ``glance`` each call is a
Glance v2 request at the first of ``[glance] api_servers`` that answers,
else at the endpoint of ``[glance] service_type`` in the service catalog
of the user's token, sending the user's token.

Either way an image is the same dict: ``id``, ``name``, ``status``,
``min_ram``, ``min_disk``, ``size``, ``owner``, ``visibility``,
``protected``, ``disk_format``, ``container_format``, ``created_at`` and
``updated_at`` (ISO 8601 strings), and ``properties`` (the image's other
keys, as strings, which the scheduler's ImagePropertiesFilter reads).

Image data (:func:`download`, :func:`upload`) always moves over the
Image API, whatever the source: compute hosts hold no database
credentials, and with ``builtin`` the API serves the catalog's data
under ``/image`` (``[glance] api_servers`` names it to them).
"""

import hashlib
import http.client
import io
import json
import logging
import os
import ssl
import tempfile
import urllib.error
import urllib.parse
import urllib.request

from webob import multidict

from scheduler_split import conf
from scheduler_split import exception
from scheduler_split.image import catalog

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Keys of a Glance v2 image that are its own fields, not properties.
CORE_KEYS = frozenset((
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'created_at', 'updated_at', 'tags', 'self', 'file',
    'schema', 'direct_url', 'locations', 'stores'))
# The core fields an image dict carries besides its properties.
_FIELDS = ('size', 'owner', 'visibility', 'protected', 'disk_format',
           'container_format', 'created_at', 'updated_at')
# Glance's page size, when the caller asks for no limit.
_PAGE = 100
# Bytes of image data read and sent at a time.
_CHUNK = 1024 * 1024


def _builtin():
    return CONF.glance.source != 'glance'


def get(ctx, image_ref):
    """The image ``image_ref`` names (an id; for a built-in image also
    its name) as a dict; raises ``ImageNotFound`` for an image the
    catalog does not hold or the user may not see,
    ``ImageServiceUnavailable`` when no Image service answers."""
    if _builtin():
        entry = catalog.find(image_ref)
        return _describe(catalog.render(catalog.get_image(
            ctx, entry[0] if entry else image_ref)))
    try:
        return _describe(_request(ctx, 'GET', _image_path(image_ref),
                                  image_id=image_ref))
    except exception.ImageNotAuthorized:
        # Glance answers 404 for an image the user may not see, too.
        raise exception.ImageNotFound(image_id=image_ref)
    except (exception.Invalid, exception.ImageStatusConflict) as exc:
        LOG.warning('The image service refused to show image %s: %s',
                    image_ref, exc)
        raise exception.ImageNotFound(image_id=image_ref)


def get_all(ctx, filters=None, limit=None, marker=None, sort_key=None,
            sort_dir=None):
    """The images the user sees, as a Glance v2 listing filters them
    (``filters``: its query parameters, e.g. ``{'name': 'cirros',
    'instance_uuid': uuid}``), after the image ``marker``, sorted by
    ``sort_key`` (``created_at`` by default) and ``sort_dir``
    (``desc``): at most ``limit``, and without one every page, as
    Nova's client reads them. ``Invalid`` for a filter or a marker the
    catalog refuses."""
    query = dict(filters or {})
    if sort_key is not None:
        query['sort_key'] = sort_key
    if sort_dir is not None:
        query['sort_dir'] = sort_dir
    found = []
    while limit is None or len(found) < limit:
        query['limit'] = str(_PAGE if limit is None
                             else min(_PAGE, limit - len(found)))
        if marker is not None:
            query['marker'] = marker
        page, marker = _page(ctx, query)
        found.extend(page)
        if marker is None:
            break
    return found


def _page(ctx, query):
    """One page of a listing and the marker of the next (None after the
    last)."""
    if _builtin():
        page, marker = catalog.query_images(ctx, multidict.MultiDict(query))
        return [_describe(catalog.render(i)) for i in page], marker
    body = _request(ctx, 'GET', '/images', query=query)
    page = [_describe(i) for i in body.get('images', [])]
    return page, (page[-1]['id'] if page and body.get('next') else None)


def create_image(ctx, name, properties=None, min_disk=0, min_ram=0,
                 disk_format='qcow2', container_format='bare',
                 visibility='private', queued=False, image_id=None,
                 over_api=False):
    """A new image of the user's project: ``queued`` for the compute
    host that uploads its data (a snapshot, a shelve), else ``active``
    at once with empty data (computes that upload none: before compute
    RPC 1.8). ``properties`` values become strings. ``image_id``: the id
    it gets. ``over_api``: through the Image API in either ``[glance]
    source``, as a compute host (no database) makes one. Returns it as
    :func:`get` does."""
    fields = {'name': name, 'min_disk': int(min_disk),
              'min_ram': int(min_ram), 'disk_format': disk_format,
              'container_format': container_format,
              'visibility': visibility}
    properties = {key: value if isinstance(value, str) else str(value)
                  for key, value in (properties or {}).items()}
    if image_id:
        fields['id'] = image_id
    if _builtin() and not over_api:
        image = catalog.create_image(ctx, dict(fields,
                                               properties=properties))
        if queued:
            return _describe(catalog.render(image))
        return _describe(catalog.render(catalog.upload_image(
            ctx, image['id'], io.BytesIO())))
    created = _request(ctx, 'POST', '/images',
                       body=dict(properties, **fields))
    if queued:
        return _describe(created)
    _request(ctx, 'PUT', _image_path(created['id'], 'file'), data=b'',
             content_type='application/octet-stream',
             image_id=created['id'])
    return get(ctx, created['id'])


def delete_image(ctx, image_id, over_api=False):
    """Delete the image; ``ImageNotFound`` if it is gone (deleted
    already: a caller that only wants it gone ignores that),
    ``ImageNotAuthorized`` if the user may not delete it (a protected
    image, another project's, a built-in one). ``over_api``: through the
    Image API in either ``[glance] source``, as a compute host deletes
    one."""
    if _builtin() and not over_api:
        catalog.delete_image(ctx, image_id)
        return
    _request(ctx, 'DELETE', _image_path(image_id), image_id=image_id)


def update_properties(ctx, image_id, change):
    """The image's custom properties become ``change(properties)`` (a
    dict -> a dict); returns the image. With the built-in catalog in one
    transaction holding the image; with Glance, as Nova does it, a read
    and a JSON patch of what differs."""
    if _builtin():
        return _describe(catalog.render(catalog.update_image(
            ctx, image_id,
            lambda image: {'properties': change(dict(image['properties']))})))
    current = get(ctx, image_id)['properties']
    wanted = change(dict(current))
    patch = [{'op': 'remove', 'path': '/' + _escape(key)}
             for key in current if key not in wanted]
    patch += [{'op': 'add', 'path': '/' + _escape(key), 'value': value}
              for key, value in wanted.items()
              if current.get(key) != value]
    if not patch:
        return get(ctx, image_id)
    return _describe(_request(
        ctx, 'PATCH', _image_path(image_id), body=patch,
        content_type='application/openstack-images-v2.1-json-patch',
        image_id=image_id))


def image_url(ctx, image_id, application_url):
    """Where the Image service shows an image, as Nova links it (its
    endpoint, ``/images/`` and the id): the built-in catalog's is under
    the API's ``/image``."""
    if _builtin():
        endpoint = application_url + '/image'
    else:
        endpoint = _endpoints(ctx)[0]
    return '%s/images/%s' % (endpoint.rstrip('/'), image_id)


def _escape(key):
    return key.replace('~', '~0').replace('/', '~1')


def _catalog_endpoint(ctx):
    """The Image service endpoint in the catalog of the user's token."""
    group = CONF.glance
    catalog = getattr(ctx, 'service_catalog', None) or []
    for interface in group.valid_interfaces:
        for service in catalog:
            if service.get('type') != group.service_type:
                continue
            for endpoint in service.get('endpoints', []):
                if endpoint.get('interface') != interface:
                    continue
                region = endpoint.get('region_id') or endpoint.get('region')
                if group.region_name and region != group.region_name:
                    continue
                if endpoint.get('url'):
                    return endpoint['url']
    return None


def _endpoints(ctx):
    if CONF.glance.api_servers:
        return list(CONF.glance.api_servers)
    endpoint = _catalog_endpoint(ctx)
    if endpoint is None:
        raise exception.ImageServiceUnavailable(
            reason='[glance] api_servers is empty and the service catalog '
                   'has no %s endpoint' % CONF.glance.service_type)
    return [endpoint]


def _ssl_context():
    if CONF.glance.insecure:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return ssl.create_default_context(cafile=CONF.glance.cafile)


def _image_path(image_id, *rest):
    return '/'.join(['/images', urllib.parse.quote(image_id, safe='')] +
                    list(rest))


def _url(endpoint, path, query=None):
    base = endpoint.rstrip('/')
    if not base.endswith('/v2'):
        base += '/v2'
    url = base + path
    if query:
        url += '?' + urllib.parse.urlencode(sorted(query.items()))
    return url


def _refused(exc, image_id):
    """What a 4xx of the Image service means here."""
    try:
        message = exc.read().decode('utf-8', 'replace').strip()
    except OSError:
        message = str(exc)
    if exc.code == 404:
        return exception.ImageNotFound(image_id=image_id)
    if exc.code in (401, 403):
        return exception.ImageNotAuthorized(image_id=image_id)
    if exc.code == 409:
        return exception.ImageStatusConflict(
            'The image service refused: %s' % message)
    return exception.Invalid(reason=message or str(exc))


def _headers(ctx, accept='application/json', content_type=None):
    """The headers of a request to the Image service: the user's token
    and the request id, which the Image service logs with its own."""
    headers = {'Accept': accept}
    token = getattr(ctx, 'auth_token', None)
    if token:
        headers['X-Auth-Token'] = token
    request_id = getattr(ctx, 'global_request_id', None) or getattr(
        ctx, 'request_id', None)
    if request_id:
        headers['X-OpenStack-Request-ID'] = request_id
    if content_type:
        headers['Content-Type'] = content_type
    return headers


def _open(request):
    """The response to ``request``; each socket operation of it may take
    ``[glance] timeout``."""
    return urllib.request.urlopen(
        request, timeout=CONF.glance.timeout,
        context=(_ssl_context() if request.full_url.startswith('https:')
                 else None))


def _at_each_endpoint(ctx, method, path, exchange, query=None,
                      image_id=None):
    """``exchange(url)`` at the URL of ``path`` at each endpoint in
    turn, until one answers: what it returns. A 4xx is the answer (see
    ``_refused``); no endpoint answering is ``ImageServiceUnavailable``.
    """
    failures = []
    for endpoint in _endpoints(ctx):
        try:
            return exchange(_url(endpoint, path, query))
        except urllib.error.HTTPError as exc:
            if exc.code < 500:
                raise _refused(exc, image_id or path)
            failures.append('%s: %s' % (endpoint, exc))
        except (OSError, ValueError, http.client.HTTPException) as exc:
            failures.append('%s: %s' % (endpoint, exc))
        LOG.warning('The image service at %s did not answer %s %s: %s',
                    endpoint, method, path, failures[-1])
    raise exception.ImageServiceUnavailable(reason='; '.join(failures))


def _request(ctx, method, path, query=None, body=None, data=None,
             content_type=None, image_id=None):
    """A request to the Image service, tried at each endpoint until one
    answers; its JSON body (None if empty). A 4xx is the answer (see
    ``_refused``); no endpoint answering is ``ImageServiceUnavailable``.
    """
    if body is not None:
        data = json.dumps(body).encode('utf-8')
        content_type = content_type or 'application/json'
    headers = _headers(ctx, content_type=content_type)

    def exchange(url):
        request = urllib.request.Request(url, data=data, headers=headers,
                                         method=method)
        with _open(request) as response:
            raw = response.read()
            return json.loads(raw.decode('utf-8')) if raw else None
    return _at_each_endpoint(ctx, method, path, exchange, query=query,
                             image_id=image_id)


def download(ctx, image_id, path):
    """Write the data of image ``image_id`` to the file ``path``; returns
    the image as :func:`get` does. Called by compute hosts, in either
    ``[glance] source``: over the Image API (see the module's doc).

    The data goes to a temporary file beside ``path``, renamed to it once
    its size and md5 match those of the image's record (each one the
    record gives), so that ``path`` never holds part of an image.
    ``ImageUnacceptable`` for data that does not match, or an image
    without data; ``ImageNotFound`` for an image the user may not see;
    ``ImageServiceUnavailable`` when no endpoint answers, or the one that
    did breaks off (the caller may try again: the next endpoint would
    start over as well).
    """
    record = _request(ctx, 'GET', _image_path(image_id), image_id=image_id)
    file_path = _image_path(image_id, 'file')
    headers = _headers(ctx, accept='application/octet-stream')

    def exchange(url):
        return url, _open(urllib.request.Request(url, headers=headers))
    directory, name = os.path.split(os.path.abspath(path))
    fd, partial = tempfile.mkstemp(dir=directory, prefix='.%s.' % name,
                                   suffix='.part')
    try:
        with os.fdopen(fd, 'wb') as target:
            url, response = _at_each_endpoint(ctx, 'GET', file_path,
                                              exchange, image_id=image_id)
            with response:
                if response.status == 204:
                    raise exception.ImageUnacceptable(
                        image_id=image_id, reason='it has no data')
                size, md5 = _receive(response, target, url)
            target.flush()
            os.fsync(target.fileno())
        _check_data(record, size, md5)
        os.replace(partial, path)
    except BaseException:
        os.unlink(partial)
        raise
    return _describe(record)


def _receive(response, target, url):
    """Copy the body of ``response`` to ``target``: ``(size, md5)``. A
    body that breaks off (short of its Content-Length, too) is
    ``ImageServiceUnavailable``; a write that fails raises as it is (a
    full disk is not the Image service's)."""
    md5 = hashlib.md5(usedforsecurity=False)
    size = 0
    while True:
        try:
            chunk = response.read(_CHUNK)
        except (OSError, http.client.HTTPException) as exc:
            raise exception.ImageServiceUnavailable(
                reason='%s broke off after %d bytes: %s' % (url, size, exc))
        if not chunk:
            break
        target.write(chunk)
        md5.update(chunk)
        size += len(chunk)
    length = response.headers.get('Content-Length')
    if length is not None and length.isdigit() and int(length) != size:
        raise exception.ImageServiceUnavailable(
            reason='%s broke off after %d of %s bytes' % (url, size, length))
    return size, md5.hexdigest()


def _check_data(record, size, md5):
    """``ImageUnacceptable`` unless data of ``size`` bytes and ``md5``
    are what the image's ``record`` (a Glance v2 image) says."""
    if record.get('size') is not None and size != record['size']:
        raise exception.ImageUnacceptable(
            image_id=record['id'], reason='its data is %d bytes, its record '
                                          'says %d' % (size, record['size']))
    if record.get('checksum') and md5 != record['checksum']:
        raise exception.ImageUnacceptable(
            image_id=record['id'], reason='the md5 of its data is %s, its '
                                          'record says %s'
                                          % (md5, record['checksum']))


def upload(ctx, image_id, path):
    """Upload the file ``path`` as the data of the queued image
    ``image_id``, which then is active; returns the image as :func:`get`
    does. Called by compute hosts (the data of a snapshot), in either
    ``[glance] source``: over the Image API (see the module's doc).
    ``ImageStatusConflict`` for an image that is not queued,
    ``ImageNotFound`` for one the user may not see,
    ``ImageServiceUnavailable`` when no endpoint takes the data."""
    size = os.path.getsize(path)
    headers = _headers(ctx, content_type='application/octet-stream')
    headers['Content-Length'] = str(size)

    def exchange(url):
        with open(path, 'rb') as source:
            request = urllib.request.Request(
                url, data=_chunks(source, size, image_id), headers=headers,
                method='PUT')
            with _open(request) as response:
                response.read()
    _at_each_endpoint(ctx, 'PUT', _image_path(image_id, 'file'), exchange,
                      image_id=image_id)
    return _describe(_request(ctx, 'GET', _image_path(image_id),
                              image_id=image_id))


def upload_if_queued(ctx, image_id, path):
    """As :func:`upload`, but an image made active already (by an API
    before compute RPC 1.8, with no data) is left as it is."""
    try:
        return upload(ctx, image_id, path)
    except exception.ImageStatusConflict:
        LOG.info('Image %s is not queued: its data was settled already',
                 image_id)
        return None


def _chunks(source, size, image_id):
    """The first ``size`` bytes of the file ``source``, a chunk at a
    time: never more than the Content-Length sent before them."""
    left = size
    while left:
        chunk = source.read(min(_CHUNK, left))
        if not chunk:
            raise exception.ImageUnacceptable(
                image_id=image_id, reason='its file shrank by %d bytes '
                                          'while it was uploaded' % left)
        left -= len(chunk)
        yield chunk


def _describe(body):
    """A Glance v2 image as this module answers it."""
    properties = {}
    for key, value in body.items():
        if key in CORE_KEYS or value is None:
            continue
        properties[key] = value if isinstance(value, str) else json.dumps(
            value)
    image = {'id': body['id'], 'name': body.get('name'),
             'status': body.get('status'),
             'min_ram': int(body.get('min_ram') or 0),
             'min_disk': int(body.get('min_disk') or 0),
             'properties': properties}
    image.update({name: body.get(name) for name in _FIELDS})
    return image
