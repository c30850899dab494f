"""``GET /placement``: the version document, which answers without a
token (as Placement's root does), so that a client can find the
microversions before it authenticates."""

from scheduler_split.api.placement import handler
from scheduler_split.api.placement import microversion


@handler.serve(public=True)
def home(req, ctx, version):
    return {'versions': [{
        'id': 'v%s' % microversion.to_str(microversion.MIN),
        'max_version': microversion.to_str(microversion.MAX),
        'min_version': microversion.to_str(microversion.MIN),
        'status': 'CURRENT',
        # As Placement: a relative link to this same document.
        'links': [{'rel': 'self', 'href': ''}],
    }]}
