"""The images a boot reads: the built-in catalog or an Image service.

``[glance] source`` says which. With ``glance``, an image is read with
Glance v2 ``GET /v2/images/{id}`` at the first of ``[glance] api_servers``
that answers, else at the endpoint of ``[glance] service_type`` in the
service catalog of the user's token, sending the user's token. Either way
:func:`get` answers the same dict: ``id``, ``name``, ``status``,
``min_ram``, ``min_disk`` and ``properties`` (the image's other keys, as
strings, which the scheduler's ImagePropertiesFilter reads).
"""

import json
import logging
import ssl
import urllib.error
import urllib.parse
import urllib.request

from scheduler_split.api import images
from scheduler_split import conf
from scheduler_split import exception

CONF = conf.CONF
LOG = logging.getLogger(__name__)

# Keys of a Glance v2 image that are its own fields, not properties.
CORE_KEYS = frozenset((
    'id', 'name', 'status', 'visibility', 'protected', 'os_hidden',
    'checksum', 'os_hash_algo', 'os_hash_value', 'owner', 'size',
    'virtual_size', 'min_ram', 'min_disk', 'disk_format',
    'container_format', 'created_at', 'updated_at', 'tags', 'self', 'file',
    'schema', 'direct_url', 'locations', 'stores'))


def get(ctx, image_ref):
    """The image ``image_ref`` names (an id; in the built-in catalog also
    a name) as a dict; raises ``ImageNotFound`` for an image the catalog
    does not hold or the user may not see, ``ImageServiceUnavailable``
    when no Image service answers."""
    if CONF.glance.source == 'glance':
        return _from_glance(ctx, image_ref)
    entry = images.find(image_ref)
    if entry is None:
        raise exception.ImageNotFound(image_id=image_ref)
    return images.describe(entry)


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


def _image_url(endpoint, image_id):
    base = endpoint.rstrip('/')
    if not base.endswith('/v2'):
        base += '/v2'
    return '%s/images/%s' % (base, urllib.parse.quote(image_id, safe=''))


def _from_glance(ctx, image_id):
    headers = {'Accept': 'application/json'}
    token = getattr(ctx, 'auth_token', None)
    if token:
        headers['X-Auth-Token'] = token
    request_id = getattr(ctx, 'global_request_id', None) or getattr(
        ctx, 'request_id', None)
    if request_id:
        headers['X-OpenStack-Request-ID'] = request_id
    failures = []
    for endpoint in _endpoints(ctx):
        url = _image_url(endpoint, image_id)
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(
                    request, timeout=CONF.glance.timeout,
                    context=(_ssl_context() if url.startswith('https:')
                             else None)) as response:
                body = json.loads(response.read().decode('utf-8'))
        except urllib.error.HTTPError as exc:
            # Glance answers 404 for an image the user may not see, too.
            if exc.code in (403, 404):
                raise exception.ImageNotFound(image_id=image_id)
            if exc.code < 500:
                LOG.warning('The image service at %s refused to show image '
                            '%s: %s', endpoint, image_id, exc)
                raise exception.ImageNotFound(image_id=image_id)
            failures.append('%s: %s' % (endpoint, exc))
        except (OSError, ValueError) as exc:
            failures.append('%s: %s' % (endpoint, exc))
        else:
            return _describe(body)
        LOG.warning('The image service at %s did not answer for image %s: '
                    '%s', endpoint, image_id, failures[-1])
    raise exception.ImageServiceUnavailable(reason='; '.join(failures))


def _describe(body):
    """A Glance v2 image as :func:`get` answers it."""
    properties = {}
    for key, value in body.items():
        if key in CORE_KEYS or value is None:
            continue
        properties[key] = value if isinstance(value, str) else json.dumps(
            value)
    return {'id': body['id'], 'name': body.get('name'),
            'status': body.get('status'),
            'min_ram': int(body.get('min_ram') or 0),
            'min_disk': int(body.get('min_disk') or 0),
            'properties': properties}
