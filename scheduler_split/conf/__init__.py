"""All configuration options of scheduler-split, registered on one CONF."""

from oslo_config import cfg

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

CONF = cfg.CONF

for _module in (api, compute, conductor, database, fake_driver, glance,
                libvirt, metrics, policy, quota, scheduler, service,
                upgrade_levels, wsgi):
    _module.register_opts(CONF)
