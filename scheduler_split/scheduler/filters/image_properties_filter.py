import operator
import re

from oslo_utils import versionutils

from scheduler_split.scheduler import filters


class ImagePropertiesFilter(filters.BaseHostFilter):
    """Rejects a host that cannot run the image: its architecture,
    hypervisor type or hypervisor version does not match the image's
    ``architecture`` / ``hw_architecture``, ``img_hv_type`` /
    ``hypervisor_type`` or ``img_hv_requested_version`` (e.g.
    ``>=6000``) property. A request without those properties, or a host
    that reports nothing about them, passes.

    Reads the request's ``image_properties`` (RequestSpec 1.2, from the
    image service at boot) and the host's reported ``cpu_arch``,
    ``hypervisor_type`` and ``hypervisor_version``.
    """

    _OPS = {'>=': operator.ge, '<=': operator.le, '==': operator.eq,
            '!=': operator.ne, '>': operator.gt, '<': operator.lt,
            '=': operator.eq}

    @staticmethod
    def _version(value):
        value = str(value).strip()
        if value.isdigit():
            return int(value)
        return versionutils.convert_version_to_int(value)

    def _version_ok(self, wanted, have):
        match = re.match(r'\s*(>=|<=|==|!=|>|<|=)?\s*(\S+)\s*$',
                         str(wanted))
        if not match:
            return False
        op = self._OPS[match.group(1) or '==']
        try:
            return op(self._version(have), self._version(match.group(2)))
        except (ValueError, TypeError):
            return False

    @staticmethod
    def _wanted(spec_obj):
        # A RequestSpec from before 1.2 reads as an image without
        # properties.
        props = spec_obj.image_properties or {}
        return (props.get('hw_architecture') or props.get('architecture'),
                props.get('img_hv_type') or props.get('hypervisor_type'),
                props.get('img_hv_requested_version'))

    def filter_all(self, host_states, spec_obj):
        if not any(self._wanted(spec_obj)):
            return list(host_states)
        return super().filter_all(host_states, spec_obj)

    def host_passes(self, host_state, spec_obj):
        arch, hv_type, hv_version = self._wanted(spec_obj)
        host_arch = getattr(host_state, 'cpu_arch', None)
        host_type = getattr(host_state, 'hypervisor_type', None)
        host_version = getattr(host_state, 'hypervisor_version', None)
        if arch and host_arch and arch.lower() != str(host_arch).lower():
            return False
        if hv_type and host_type and \
                hv_type.lower() != str(host_type).lower():
            return False
        if hv_version and host_version is not None and \
                not self._version_ok(hv_version, host_version):
            return False
        return True
