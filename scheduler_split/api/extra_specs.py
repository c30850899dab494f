"""Which flavor extra specs this cloud understands, and their values.

A key is ``namespace:name``. The namespaces below are this cloud's (and
Nova's): from microversion 2.86 a key in one of them must be a known key
with a valid value. A key in any other namespace, or with none, is the
operator's own and is stored as given, as Nova does. A value this cloud
knows but cannot honour is refused at every microversion, so that no
server is booted that silently ignores it. ``hw:cpu_policy=dedicated``
asks PCPU of the scheduler, ``mixed`` PCPU and VCPU
(:mod:`scheduler_split.objects.resource_request`).
"""

import re

from oslo_utils import strutils

from scheduler_split.api import errors

# The form of every key and value (all microversions).
KEY_PATTERN = r'^[a-zA-Z0-9-_:. ]{1,255}$'
VALUE = {'type': ['string', 'number', 'boolean'], 'maxLength': 255}


def _enum(*choices):
    def check(value):
        if value not in choices:
            return 'must be one of %s' % ', '.join(choices)
    return check


def _int(minimum=0):
    def check(value):
        try:
            number = int(value)
        except ValueError:
            return 'must be an integer'
        if number < minimum:
            return 'must be at least %d' % minimum
    return check


def _bool(value):
    if value.lower() not in strutils.TRUE_STRINGS + strutils.FALSE_STRINGS:
        return 'must be a boolean (true or false)'


def _any(value):
    return None


def _page_size(value):
    if value in ('small', 'large', 'any'):
        return None
    if re.match(r'^\d+([kKmMgG][bB]?)?$', value):
        return None
    return "must be 'small', 'large', 'any' or a size such as 2MB"


def _trait(value):
    return _enum('required', 'forbidden')(value)


# hw:<name>: what each accepts. A name ending in '.' takes a number after
# it (hw:numa_cpus.0).
_HW = {
    'cpu_policy': _enum('shared', 'dedicated', 'mixed'),
    'cpu_thread_policy': _enum('prefer', 'isolate', 'require'),
    'cpu_dedicated_mask': _any,
    'cpu_realtime': _bool,
    'cpu_realtime_mask': _any,
    'emulator_threads_policy': _enum('share', 'isolate'),
    'numa_nodes': _int(1),
    'numa_cpus.': _any,
    'numa_mem.': _int(1),
    'mem_page_size': _page_size,
    'cpu_sockets': _int(1),
    'cpu_cores': _int(1),
    'cpu_threads': _int(1),
    'cpu_max_sockets': _int(1),
    'cpu_max_cores': _int(1),
    'cpu_max_threads': _int(1),
    'cpu_mode': _any,
    'cpu_model': _any,
    'cpu_model_flags': _any,
    'watchdog_action': _enum('none', 'pause', 'poweroff', 'reset',
                             'disabled'),
    'boot_menu': _bool,
    'pmu': _bool,
    'vif_multiqueue_enabled': _bool,
    'mem_encryption': _bool,
    'hide_hypervisor_id': _bool,
    'locked_memory': _bool,
    'virtio_packed_ring': _bool,
    'serial_port_count': _int(0),
    'pci_numa_affinity_policy': _enum('required', 'preferred', 'legacy',
                                      'socket'),
    'machine_type': _any,
    'tpm_version': _enum('1.2', '2.0'),
    'tpm_model': _enum('tpm-tis', 'tpm-crb'),
    'vpmem': _any,
    'maxphysaddr_mode': _enum('emulate', 'passthrough'),
    'maxphysaddr_bits': _int(1),
    'cpu_realtime_cpus': _any,
    'viommu_model': _enum('intel', 'smmuv3', 'virtio', 'auto'),
    'ephemeral_encryption': _bool,
    'ephemeral_encryption_format': _enum('luks', 'plain'),
}

_NAMESPACES = {
    'hw': _HW,
    'hw_rng': {'allowed': _bool, 'rate_bytes': _int(0),
               'rate_period': _int(0)},
    'hw_video': {'ram_max_mb': _int(0)},
    'os': {'secure_boot': _enum('required', 'disabled'),
           'monitors': _int(0)},
}

# Namespaces whose every key is valid: the operator names the key.
_OPEN = {
    'aggregate_instance_extra_specs': _any,
    'capabilities': _any,
    'quota': _int(0),
    'pci_passthrough': _any,
    'accel': _any,
}

# Values this cloud understands but cannot honour.
_UNSUPPORTED = {}


def _checker(key):
    """The check of ``key``'s value, ``None`` for an operator's own key,
    or ``False`` for an unknown key in one of this cloud's namespaces."""
    namespace, sep, name = key.partition(':')
    if not sep:
        return None
    # resources:VCPU, resources1:CUSTOM_X, trait:HW_CPU_X86_AVX,
    # trait1:...: numbered request groups.
    base = namespace.rstrip('0123456789')
    if base == 'resources':
        return _int(0)
    if base == 'trait':
        return _trait
    if namespace in _OPEN:
        return _OPEN[namespace]
    known = _NAMESPACES.get(namespace)
    if known is None:
        return None
    if name in known:
        return known[name]
    prefix, dot, index = name.partition('.')
    if dot and index.isdigit() and prefix + '.' in known:
        return known[prefix + '.']
    return False


def validate(specs, version):
    """Stringify ``specs`` (values may be numbers or booleans) and check
    them; a 400 names the first that is wrong."""
    result = {}
    for key, value in specs.items():
        value = str(value)
        if len(value) > 255:
            raise errors.bad_request(
                "The value of extra spec '%s' is longer than 255 "
                "characters." % key)
        reason = _UNSUPPORTED.get(key, {}).get(value)
        if reason:
            raise errors.bad_request(
                "Extra spec '%s' with value '%s' is not supported: %s."
                % (key, value, reason))
        if version >= (2, 86):
            check = _checker(key)
            if check is False:
                raise errors.bad_request(
                    "Validation failed; extra spec '%s' does not appear to "
                    "be a valid extra spec." % key)
            problem = check(value) if check else None
            if problem:
                raise errors.bad_request(
                    "Validation failed; the value '%s' of extra spec '%s' "
                    "%s." % (value, key, problem))
        result[key] = value
    return result
