"""Placement API microversions: their history and which one a request
asked for (``OpenStack-API-Version: placement 1.X``; 1.0 when it names
none, the newest for ``latest``).

The answers follow Placement's shape at every version up to ``MAX``
for what this read-only API serves; what a version changed of the
writes (which are refused here at every version) is said once.
"""

import microversion_parse

from scheduler_split.api.placement import errors

# Each version and what it changed of what this API answers.
VERSIONS = [
    ('1.0', 'resource providers, their inventories, usages and '
            'allocations; a consumer\'s allocations'),
    ('1.1', 'a provider\'s aggregates'),
    ('1.2', 'resource classes'),
    ('1.3', 'member_of (one list of aggregates) on GET '
            '/resource_providers'),
    ('1.4', 'resources (room for amounts) on GET /resource_providers'),
    ('1.5', 'writes only (DELETE of every inventory)'),
    ('1.6', 'traits: /traits and a provider\'s traits'),
    ('1.7', 'writes only (PUT of a resource class)'),
    ('1.8', 'writes only (project and user of allocations)'),
    ('1.9', 'GET /usages: a project\'s (and user\'s) usage'),
    ('1.10', 'GET /allocation_candidates'),
    ('1.11', 'the allocations link of a provider'),
    ('1.12', 'a consumer\'s project and user; allocation requests of '
             'candidates keyed by provider'),
    ('1.13', 'writes only (POST /allocations)'),
    ('1.14', 'parent and root provider of a provider; in_tree on GET '
             '/resource_providers'),
    ('1.15', 'Last-Modified and Cache-Control: no-cache on reads'),
    ('1.16', 'limit on GET /allocation_candidates'),
    ('1.17', 'required (traits) on GET /allocation_candidates and the '
             'traits of provider summaries'),
    ('1.18', 'required (traits) on GET /resource_providers'),
    ('1.19', 'the provider generation with a provider\'s aggregates'),
    ('1.20', 'writes only (POST /resource_providers answers the '
             'provider)'),
    ('1.21', 'member_of on GET /allocation_candidates'),
    ('1.22', 'forbidden traits (!TRAIT) in required'),
    ('1.23', 'an error code in every error'),
    ('1.24', 'member_of repeated (each one a condition)'),
    ('1.25', 'request groups (resourcesN, requiredN, member_ofN) and '
             'group_policy on GET /allocation_candidates'),
    ('1.26', 'writes only (reserved may equal total)'),
    ('1.27', 'every resource class of a provider in provider summaries'),
    ('1.28', 'consumer generations'),
    ('1.29', 'parent and root provider in provider summaries'),
    ('1.30', 'writes only (POST /reshaper)'),
    ('1.31', 'in_tree and in_treeN on GET /allocation_candidates'),
    ('1.32', 'forbidden aggregates (member_of=!...)'),
    ('1.33', 'request group suffixes of letters, digits, _ and -'),
    ('1.34', 'mappings of request groups to providers in allocation '
             'requests'),
    ('1.35', 'root_required on GET /allocation_candidates'),
    ('1.36', 'same_subtree on GET /allocation_candidates'),
    ('1.37', 'writes only (re-parenting providers)'),
    ('1.38', 'consumer types: of a consumer\'s allocations, and usages '
             'by consumer type'),
    ('1.39', 'required=in:A,B (any of the traits)'),
]

NAMES = [name for name, _ in VERSIONS]
MIN = (1, 0)
MAX = tuple(int(part) for part in NAMES[-1].split('.'))


def to_str(version):
    return '%d.%d' % version


def parse(req):
    """The microversion ``req`` asks for. A header that does not read is
    a 400; a version outside ``MIN``..``MAX`` a 406 that says both."""
    raw = microversion_parse.get_version(req.headers, 'placement')
    if raw is not None and not raw.isascii():
        raise errors.bad_request('invalid version string: %s' % raw)
    try:
        version = microversion_parse.extract_version(
            req.headers, 'placement', NAMES)
    except TypeError:
        raise errors.bad_request('invalid version string: %s' % raw)
    except ValueError:
        raise errors.PlacementError(
            406, 'Unacceptable version header: %s' % raw,
            min_version=to_str(MIN), max_version=to_str(MAX))
    return (version.major, version.minor)
