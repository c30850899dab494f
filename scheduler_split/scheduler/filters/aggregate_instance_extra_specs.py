import operator

from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import filters


def _number(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _compare(compare, numeric):
    def test(value, wanted):
        if numeric:
            value, wanted = _number(value), _number(wanted)
            if value is None or wanted is None:
                return False
        return compare(value, wanted)
    return test


# The operators of a requirement in a flavor's extra specs, as Nova spells
# them: "<op> <operand>". Without one the value must be equal.
_OPERATORS = {
    '=': _compare(operator.ge, True),  # at least
    '==': _compare(operator.eq, True),
    '!=': _compare(operator.ne, True),
    '>=': _compare(operator.ge, True),
    '<=': _compare(operator.le, True),
    's==': _compare(operator.eq, False),
    's!=': _compare(operator.ne, False),
    's<': _compare(operator.lt, False),
    's<=': _compare(operator.le, False),
    's>': _compare(operator.gt, False),
    's>=': _compare(operator.ge, False),
    '<in>': lambda value, wanted: wanted in value,
    '<all-in>': lambda value, wanted: all(
        w in value.split() for w in wanted),
    '<or>': lambda value, wanted: value in wanted,
}


def extra_spec_matches(value, requirement):
    """Whether ``value`` (an aggregate's) satisfies ``requirement`` (a
    flavor's extra spec), e.g. ``">= 4"``, ``"<or> a <or> b"``,
    ``"s== ssd"`` or a plain value."""
    if value is None:
        return False
    words = str(requirement).split()
    if not words:
        return value == requirement
    op = words[0]
    if op not in _OPERATORS:
        return value == requirement
    if op == '<or>':
        return value in words[1::2]
    if op == '<all-in>':
        return _OPERATORS[op](value, words[1:])
    if len(words) != 2:
        return False
    return _OPERATORS[op](value, words[1])


class AggregateInstanceExtraSpecsFilter(filters.BaseHostFilter):
    """Rejects a host unless the metadata of its aggregates matches each
    of the flavor's ``aggregate_instance_extra_specs:KEY`` extra specs
    (and its unscoped ones), with Nova's operators
    (:func:`extra_spec_matches`).

    Reads the flavor's ``extra_specs`` and the metadata of the host's
    aggregates.
    """

    SCOPE = 'aggregate_instance_extra_specs'

    def host_passes(self, host_state, spec_obj):
        specs = spec_obj.flavor.get('extra_specs') or {}
        if not specs:
            return True
        metadata = None
        for key, requirement in specs.items():
            scope, sep, name = key.partition(':')
            if sep:
                if scope != self.SCOPE:
                    continue
                key = name
            if metadata is None:
                metadata = aggregates.metadata_of(host_state)
            values = metadata.get(key)
            if not values or not any(extra_spec_matches(v, requirement)
                                     for v in values):
                return False
        return True
