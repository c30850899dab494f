"""The ``*_links`` of a listing page: a next link when more may follow."""

import urllib.parse


def next_links(req, marker, default_limit=None):
    """``[{'rel': 'next', 'href': ...}]``: this request's URL and query
    with ``marker`` in place of the one it had, and ``limit`` set to
    ``default_limit`` when the request gave none and that is not None."""
    query = [(k, v) for k, v in req.GET.items() if k != 'marker']
    if default_limit is not None and 'limit' not in req.GET:
        query.append(('limit', str(default_limit)))
    query.append(('marker', marker))
    return [{'rel': 'next', 'href': '%s?%s' % (
        req.path_url, urllib.parse.urlencode(query))}]
