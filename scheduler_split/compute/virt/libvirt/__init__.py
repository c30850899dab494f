"""The libvirt driver (``[DEFAULT] compute_driver =
libvirt.LibvirtDriver``); see :mod:`.driver`."""

from scheduler_split.compute.virt.libvirt.driver import LibvirtDriver

__all__ = ['LibvirtDriver']
