"""Entry point for oslo-config-generator (namespace scheduler_split)."""

from scheduler_split.conf import api
from scheduler_split.conf import compute
from scheduler_split.conf import conductor
from scheduler_split.conf import database
from scheduler_split.conf import fake_driver
from scheduler_split.conf import glance
from scheduler_split.conf import libvirt
from scheduler_split.conf import metrics
from scheduler_split.conf import policy
from scheduler_split.conf import quota
from scheduler_split.conf import scheduler
from scheduler_split.conf import service
from scheduler_split.conf import upgrade_levels
from scheduler_split.conf import wsgi


def list_opts():
    # transport_url and every other option of the libraries come from
    # their own namespaces (scheduler-split-config-generator.conf).
    merged = {}
    for module in (service, api, compute, conductor, database, fake_driver,
                   glance, libvirt, metrics, policy, quota, scheduler,
                   upgrade_levels, wsgi):
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return list(merged.items())
