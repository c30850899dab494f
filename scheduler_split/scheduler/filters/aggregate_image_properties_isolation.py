from scheduler_split import conf
from scheduler_split.scheduler import aggregates
from scheduler_split.scheduler import filters

CONF = conf.CONF


class AggregateImagePropertiesIsolation(filters.BaseHostFilter):
    """Rejects a host whose aggregates name an image property in their
    metadata (e.g. ``os_distro=windows,linux``) for an image whose
    property is none of the listed values; an image without that
    property goes anywhere. With ``[filter_scheduler]
    aggregate_image_properties_isolation_namespace`` set, only the keys
    in that namespace isolate (``ns.os_distro`` with the default
    separator), each against the image property of the same name, as in
    Nova; other metadata keys are left to other filters.

    Reads the request's ``image_properties``, the metadata of the host's
    aggregates and the namespace and separator options.
    """

    def host_passes(self, host_state, spec_obj):
        props = spec_obj.image_properties or {}
        namespace = (CONF.filter_scheduler.
                     aggregate_image_properties_isolation_namespace)
        prefix = ''
        if namespace:
            prefix = namespace + (
                CONF.filter_scheduler.
                aggregate_image_properties_isolation_separator)
        for key, values in aggregates.metadata_of(host_state).items():
            if not key.startswith(prefix):
                continue
            wanted = props.get(key)
            if wanted is None or wanted == '':
                continue
            allowed = {p.strip() for value in values
                       for p in value.split(',')}
            if str(wanted) not in allowed:
                return False
        return True
