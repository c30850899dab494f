"""The query parameters of the Placement API's lists, read as Placement
reads them, with its 400s for what does not read.

A trait named in ``required`` (or ``root_required``) must be in the
trait catalog, a resource class in ``resources`` among the resource
classes, as Placement checks them.
"""

import re

from oslo_utils import uuidutils

from scheduler_split.api.placement import errors


def check_names(req, allowed, patterns=()):
    """400 for a parameter neither ``allowed`` nor matching one of the
    regular expressions ``patterns``."""
    for name in req.GET:
        if name in allowed or any(re.fullmatch(p, name) for p in patterns):
            continue
        if patterns:
            # In the words of Placement's JSON schema of such a query.
            raise errors.bad_request(
                "Invalid query string parameters: '%s' does not match any "
                "of the regexes: %s" % (name, ', '.join(
                    "'^%s$'" % p for p in patterns)))
        raise errors.bad_request(
            "Invalid query string parameters: Additional properties are "
            "not allowed ('%s' was unexpected)" % name)


def resources(value, known):
    """``{resource class: amount}`` of ``VCPU:2,MEMORY_MB:1024``; 400 for
    a malformed one, an amount below 1 or a class not in ``known``."""
    if not value.strip():
        raise errors.bad_request(
            'Badly formed resources parameter. Expected resources query '
            'string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. '
            'Got: empty string.')
    found = {}
    for item in value.split(','):
        rc, colon, amount = item.partition(':')
        if not colon or ':' in amount:
            raise errors.bad_request(
                'Badly formed resources parameter. Expected resources '
                'query string parameter in form: '
                '?resources=VCPU:2,MEMORY_MB:1024. Got: %s.' % item)
        try:
            amount = int(amount)
        except ValueError:
            raise errors.bad_request(
                'Requested resource %s expected positive integer amount. '
                'Got: %s.' % (rc, amount))
        if amount < 1:
            raise errors.bad_request(
                'Requested resource %s requires amount >= 1. Got: %d.'
                % (rc, amount))
        if rc not in known:
            raise errors.bad_request(
                'Invalid resource class in resources parameter: No such '
                'resource class %s.' % rc)
        found[rc] = amount
    return found


def member_of(req, name, version):
    """``(required, forbidden)`` of the ``member_of`` parameters ``name``:
    a list of lists of aggregate uuids (in one of each list) and a set
    of uuids (in none). Repeated from 1.24, ``!`` from 1.32."""
    values = req.GET.getall(name)
    if version < (1, 24) and len(values) > 1:
        raise errors.bad_request(
            'Multiple %s parameters are not supported' % name)
    required, forbidden = [], set()
    for value in values:
        negated = value.startswith('!')
        if negated:
            if version < (1, 32):
                raise errors.bad_request(
                    'Forbidden %s parameters are not supported in the '
                    'specified microversion' % name)
            value = value[1:]
        if value.startswith('in:'):
            uuids = value[3:].split(',')
        elif ',' in value:
            raise errors.bad_request(
                "Multiple values for 'member_of' must be prefixed with the "
                "'in:' or '!in:' keyword using the valid microversion. "
                "Got: %s" % value)
        else:
            uuids = [value]
        if not all(uuidutils.is_uuid_like(u) for u in uuids):
            raise errors.bad_request(
                "Invalid query string parameters: Expected '%s' parameter "
                "to contain valid UUID(s). Got: %s" % (name, value))
        if negated:
            forbidden |= set(uuids)
        else:
            required.append(sorted(set(uuids)))
    return required, forbidden


def traits(req, ctx, name, version, catalog):
    """``(required, forbidden, any_of)`` of the ``required``-like
    parameter ``name``: the traits a provider must have, those it must
    not, and lists of which it must have one (``in:`` from 1.39); a 400
    for a malformed value or a trait the catalog (``catalog(ctx,
    names)``, the known ones of those names) does not know."""
    values = req.GET.getall(name)
    if version < (1, 39):
        values = values[-1:]
    required, forbidden, any_of = set(), set(), []
    for value in values:
        if value.startswith('in:'):
            if version < (1, 39):
                raise errors.bad_request(
                    "Invalid query string parameters: The format "
                    "'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported "
                    "since microversion 1.39. Got: %s" % value)
            names = [t.strip() for t in value[3:].split(',')]
            if not all(names) or any(t.startswith('!') for t in names):
                raise errors.bad_request(
                    "Invalid query string parameters: Expected '%s' "
                    "parameter value of the form: in:HW_CPU_X86_VMX,"
                    "CUSTOM_MAGIC. Got: %s" % (name, value))
            any_of.append(set(names))
            continue
        names = [t.strip() for t in value.split(',')]
        if version < (1, 22) and (any(t.startswith('!') for t in names)
                                  or not all(names)):
            raise errors.bad_request(
                "Invalid query string parameters: Expected '%s' "
                "parameter value of the form: "
                "HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: %s" % (name, value))
        if not all(t.lstrip('!') for t in names):
            raise errors.bad_request(
                "Invalid query string parameters: Expected '%s' parameter "
                "value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an "
                "empty trait in: %s" % (name, value))
        for trait in names:
            if trait.startswith('!'):
                forbidden.add(trait[1:])
            else:
                required.add(trait)
    named = required | forbidden | set().union(*any_of)
    unknown = named - set(catalog(ctx, sorted(named))) if named else set()
    if unknown:
        raise errors.bad_request(
            'Invalid trait(s) in "%s" parameter: No such trait(s): %s.'
            % (name, ', '.join(sorted(unknown))))
    conflict = required & forbidden
    if conflict and name == 'root_required':
        raise errors.bad_request(
            'Conflicting required and forbidden traits found in '
            'root_required: %s' % ', '.join(sorted(conflict)))
    if conflict:
        raise errors.bad_request(
            'Conflicting required and forbidden traits found in the '
            'following traits keys: %s: (%s)'
            % (name, ', '.join(sorted(conflict))))
    return required, forbidden, any_of


def add_traits(filters, found):
    """Fold ``(required, forbidden, any_of)`` into a provider query's
    ``filters``."""
    required, forbidden, any_of = found
    filters['required'] = sorted(set(filters.get('required', ())) |
                                 required)
    filters['forbidden'] = sorted(set(filters.get('forbidden', ())) |
                                  forbidden)
    filters['any_of'] = list(filters.get('any_of', ())) + [
        sorted(names) for names in any_of]


def provider_uuid(value, name):
    if not uuidutils.is_uuid_like(value):
        raise errors.bad_request(
            "Invalid query string parameters: Expected '%s' parameter to "
            "be a format of uuid. Got: %s" % (name, value))
    return value


def limit(value):
    # Placement's pattern, bounded in length: no page is ever that long.
    if not re.fullmatch('[1-9][0-9]{0,17}', value):
        raise errors.bad_request(
            "Invalid query string parameters: '%s' does not match "
            "'^[1-9][0-9]*$' Failed validating 'pattern' in "
            "schema['properties']['limit']" % value)
    return int(value)
