"""Compute API microversions: which one a request asked for."""

import microversion_parse

from scheduler_split.api import errors

LEGACY_HEADER = 'X-OpenStack-Nova-API-Version'

MIN_VERSION = (2, 1)
# The newest microversion whose request and response shapes this API
# follows for the calls it implements.
MAX_VERSION = (2, 96)


def to_str(version):
    return '%d.%d' % version


def parse(req):
    """The microversion of ``req`` (2.1 when it names none): from
    ``OpenStack-API-Version: compute 2.X``, else the legacy
    ``X-OpenStack-Nova-API-Version``. A value that does not read is a
    400; a version outside ``MIN_VERSION``..``MAX_VERSION`` a 406."""
    raw = microversion_parse.get_version(
        req.headers, 'compute', legacy_headers=[LEGACY_HEADER])
    if raw is None:
        return MIN_VERSION
    if raw == 'latest':
        return MAX_VERSION
    try:
        version = microversion_parse.parse_version_string(raw)
    except TypeError:
        raise errors.bad_request('Invalid format for API version: %s' % raw)
    version = (version.major, version.minor)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise errors.HTTPError(
            406, 'Version %s is not supported by the API. Minimum is %s and '
                 'maximum is %s.' % (raw, to_str(MIN_VERSION),
                                     to_str(MAX_VERSION)))
    return version
