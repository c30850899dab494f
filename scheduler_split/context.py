"""Request context: who is asking, and which cell database to talk to."""

import copy

from oslo_context import context as o_context


class RequestContext(o_context.RequestContext):
    """The security context of one request, carried over every RPC hop.

    ``cell_db`` is the SQLAlchemy URL of the cell database that objects
    loaded through this context read and write. It never crosses the bus:
    every cell-level service targets its own cell when a message arrives.
    """

    def __init__(self, *args, **kwargs):
        # Every context made for a request or a received message becomes
        # the thread's current one, so that log lines carry its request id.
        super().__init__(*args, **kwargs)
        if self.is_admin and 'admin' not in self.roles:
            self.roles = list(self.roles) + ['admin']
        self.cell_db = None
        # The service catalog of the user's token (keystone auth only),
        # where the API finds the Image service. It never crosses the bus.
        self.service_catalog = []

    @classmethod
    def from_dict(cls, values):
        # The user's token goes with the request, as Nova's does: a
        # compute host moves the user's image data with it.
        return cls(auth_token=values.get('auth_token'),
                   user_id=values.get('user_id') or values.get('user'),
                   project_id=(values.get('project_id') or
                               values.get('project_id')),
                   is_admin=values.get('is_admin', False),
                   roles=values.get('roles'),
                   request_id=values.get('request_id'),
                   global_request_id=values.get('global_request_id'))

    def elevated(self):
        ctx = copy.copy(self)
        ctx.is_admin = True
        if 'admin' not in ctx.roles:
            ctx.roles = list(ctx.roles) + ['admin']
        return ctx


def get_admin_context():
    """A context for the service's own work; it leaves the thread's
    current request context alone."""
    return RequestContext(is_admin=True, overwrite=False)


def targeted(ctx, cell_db):
    """A copy of ``ctx`` whose cell objects live in the database ``cell_db``.
    """
    ctx = copy.copy(ctx)
    ctx.cell_db = cell_db
    return ctx


def target_cell(ctx, cell_mapping):
    """A copy of ``ctx`` that talks to the cell of ``cell_mapping``."""
    return targeted(ctx, cell_mapping.database_connection)
