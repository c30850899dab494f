"""What every JSON body the API takes must be, whichever API (compute,
image, Placement) reads it: nested at most ``MAX_DEPTH`` deep, and
without a string no database can store. Each API answers a
:class:`BadBody` in its own error shape."""

import re

# No request body of the API nests anywhere near this deep; refusing deeper
# ones keeps every recursive walk of a body (validation, rendering) far
# from the interpreter's recursion limit.
MAX_DEPTH = 32

# Control characters and lone surrogates (which JSON can spell but no
# database can store) are refused anywhere in a body.
BAD_CHARACTERS = re.compile('[\x00-\x08\x0b\x0c\x0e-\x1f\x7f'
                            '\ud800-\udfff]')

TOO_DEEP = 'Malformed request body: nested more than %d levels deep' % (
    MAX_DEPTH)


class BadBody(ValueError):
    """A body no API takes; its text says why, for a 400."""


def check(body):
    """:class:`BadBody` for a body nested too deep or holding a string no
    database can store; iterative, so that no body can exhaust the
    stack."""
    pending = [(body, 'body', 1)]
    while pending:
        value, where, depth = pending.pop()
        if isinstance(value, str):
            if BAD_CHARACTERS.search(value):
                raise BadBody(
                    'Invalid input for field/attribute %s: control '
                    'characters and unpaired surrogates are not allowed.'
                    % where)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise BadBody(TOO_DEEP)
        if isinstance(value, dict):
            for key, item in value.items():
                pending.append((key, where, depth))
                pending.append((item, '%s/%s' % (where, key)
                                if where != 'body' else key, depth + 1))
        else:
            pending.extend((item, where, depth + 1) for item in value)
