"""Names of the Placement model: traits and resource classes.

A trait or a resource class is either a standard one, of the os-traits
and os-resource-classes libraries (as Placement knows them), or an
operator's own: ``CUSTOM_`` then upper-case letters, digits and ``_``.
Shared by the computes that report them, the scheduler that matches
requests against them and the API that takes them from operators.
"""

import fnmatch
import re

import os_resource_classes
import os_traits

CUSTOM_NAME = re.compile(r'^CUSTOM_[A-Z0-9_]+$')
STANDARD_TRAITS = frozenset(os_traits.get_traits())
STANDARD_RESOURCE_CLASSES = tuple(os_resource_classes.STANDARDS)
# An inventory's fields, and what each is when a report leaves it out
# (max_unit: the total).
INVENTORY_DEFAULTS = {'reserved': 0, 'min_unit': 1, 'max_unit': None,
                      'step_size': 1, 'allocation_ratio': 1.0}


class BadName(ValueError):
    pass


def is_custom(name):
    return bool(CUSTOM_NAME.match(name))


def check_trait(name):
    """``name`` if it is a standard trait or a custom one; BadName
    otherwise."""
    if name in STANDARD_TRAITS or is_custom(name):
        return name
    raise BadName('%r is neither a standard trait (os-traits) nor a '
                  'custom one (CUSTOM_ and A-Z, 0-9, _)' % name)


def check_resource_class(name):
    if name in STANDARD_RESOURCE_CLASSES or is_custom(name):
        return name
    raise BadName('%r is neither a standard resource class '
                  '(os-resource-classes) nor a custom one (CUSTOM_ and '
                  'A-Z, 0-9, _)' % name)


def parse_traits(text):
    """``{TRAIT, ...}`` of ``TRAIT[,TRAIT...]``."""
    return {check_trait(name.strip()) for name in text.split(',')
            if name.strip()}


def parse_inventory(text):
    """``{CLASS: total}`` of ``CLASS:TOTAL[,CLASS:TOTAL...]``."""
    inventory = {}
    for item in text.split(','):
        if not item.strip():
            continue
        name, sep, total = item.partition(':')
        name = check_resource_class(name.strip())
        try:
            inventory[name] = int(total)
        except ValueError:
            raise BadName('%r: the total of %s is not an integer'
                          % (item.strip(), name))
        if inventory[name] < 0:
            raise BadName('%r: the total of %s is negative'
                          % (item.strip(), name))
    return inventory


_CHILD_NAME = re.compile(r'^[A-Za-z0-9_.-]+$')


def parse_children(text):
    """``[{name, parent, resources, traits}]`` of the providers below a
    compute node, ``;``-separated, each
    ``NAME[@PARENT]|CLASS:TOTAL[,...][|TRAIT[,...]]``: PARENT is another
    of them (the compute node if left out)."""
    children = []
    names = set()
    for item in text.split(';'):
        item = item.strip()
        if not item:
            continue
        parts = [part.strip() for part in item.split('|')]
        if len(parts) > 3:
            raise BadName('%r: expected NAME[@PARENT]|CLASS:TOTAL[,...]'
                          '[|TRAIT[,...]]' % item)
        name, _, parent = parts[0].partition('@')
        if not _CHILD_NAME.match(name) or (
                parent and not _CHILD_NAME.match(parent)):
            raise BadName('%r: a provider name is letters, digits and '
                          '_ . -' % item)
        if name in names:
            raise BadName('%r: %s is named twice' % (item, name))
        if parent and parent not in names:
            raise BadName('%r: its parent %s is not named before it'
                          % (item, parent))
        names.add(name)
        children.append({
            'name': name, 'parent': parent or None,
            'resources': parse_inventory(parts[1] if len(parts) > 1
                                         else ''),
            'traits': sorted(parse_traits(parts[2] if len(parts) > 2
                                          else ''))})
    return children


def for_host(lines, host, parse, option):
    """What the lines ``HOSTS=VALUE`` of ``option`` give ``host``: the
    union of the values of every line whose HOSTS (a name or a shell
    pattern) matches it, parsed by ``parse`` (a set or a dict)."""
    result = None
    for line in lines:
        pattern, sep, value = line.partition('=')
        if not sep:
            raise BadName('[fake_driver] %s = %r: expected HOSTS=VALUE'
                          % (option, line))
        if not fnmatch.fnmatchcase(host, pattern.strip()):
            continue
        try:
            parsed = parse(value)
        except BadName as exc:
            raise BadName('[fake_driver] %s: %s' % (option, exc))
        if result is None:
            result = parsed
        elif isinstance(result, list):
            result.extend(parsed)
        else:
            result.update(parsed)
    if result is None:
        result = parse('')
    return result
