from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import filters


class AggregateMultiTenancyIsolation(filters.BaseHostFilter):
    """Rejects a host in an aggregate whose ``filter_tenant_id`` metadata
    (or keys starting so, values comma-separated) does not name the
    request's project; hosts in no such aggregate take anyone's.

    Reads the request's ``project_id`` and the metadata of the host's
    aggregates.
    """

    KEY = 'filter_tenant_id'

    def host_passes(self, host_state, spec_obj):
        allowed = set()
        for key, values in aggregates.metadata_of(host_state).items():
            if key.startswith(self.KEY):
                for value in values:
                    allowed.update(p.strip() for p in value.split(','))
        return not allowed or spec_obj.project_id in allowed
