"""Entry point for oslo-config-generator (namespace scheduler_split)."""

from scheduler_split.conf import api
from scheduler_split.conf import compute
from scheduler_split.conf import conductor
from scheduler_split.conf import database
from scheduler_split.conf import fake_driver
from scheduler_split.conf import glance
from scheduler_split.conf import metrics
from scheduler_split.conf import policy
from scheduler_split.conf import quota
from scheduler_split.conf import scheduler
from scheduler_split.conf import service
from scheduler_split.conf import upgrade_levels


def list_opts():
    # transport_url is oslo.messaging's option; every process needs it, so
    # the sample documents it with ours.
    from oslo_messaging import opts as messaging_opts
    merged = {'DEFAULT': [opt for group, opts in messaging_opts.list_opts()
                          if group is None for opt in opts
                          if opt.name == 'transport_url']}
    for module in (service, api, compute, conductor, database, fake_driver,
                   glance, metrics, policy, quota, scheduler,
                   upgrade_levels):
        for group, opts in module.list_opts().items():
            merged.setdefault(group, []).extend(opts)
    return list(merged.items())
