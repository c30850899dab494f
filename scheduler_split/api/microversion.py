"""Compute API microversions: which one a request asked for."""

from scheduler_split.api import errors

MIN_VERSION = (2, 1)
# The newest microversion whose request and response shapes this API
# follows for the calls it implements.
MAX_VERSION = (2, 96)


def to_str(version):
    return '%d.%d' % version


def parse(req):
    """The microversion of ``req`` (2.1 when it names none)."""
    raw = None
    header = req.headers.get('OpenStack-API-Version')
    if header:
        for item in header.split(','):
            service, _, value = item.strip().partition(' ')
            if service.lower() == 'compute':
                raw = value.strip()
    if raw is None:
        raw = req.headers.get('X-OpenStack-Nova-API-Version')
    if raw is None:
        return MIN_VERSION
    if raw == 'latest':
        return MAX_VERSION
    try:
        major, minor = (int(p) for p in raw.split('.'))
    except ValueError:
        raise errors.bad_request('Invalid format for API version: %s' % raw)
    version = (major, minor)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.HTTPError(
            406, 'Version %s is not supported by the API. Minimum is %s and '
                 'maximum is %s.' % (raw, to_str(MIN_VERSION),
                                     to_str(MAX_VERSION)))
    return version
