"""The default policy rules of the compute API, one module per resource.

Each module lists ``DocumentedRuleDefault``s named as Nova names them, with
the operations they guard, so that ``oslopolicy-sample-generator``
(namespace ``scheduler_split``) writes a sample that documents itself.
"""

import itertools

from scheduler_split.policies import aggregates
from scheduler_split.policies import base
from scheduler_split.policies import extensions
from scheduler_split.policies import flavors
from scheduler_split.policies import hosts
from scheduler_split.policies import instance_actions
from scheduler_split.policies import instance_usage_audit_log
from scheduler_split.policies import metrics
from scheduler_split.policies import migrations
from scheduler_split.policies import placement
from scheduler_split.policies import quotas
from scheduler_split.policies import server_external_events
from scheduler_split.policies import server_groups
from scheduler_split.policies import server_lifecycle
from scheduler_split.policies import server_password
from scheduler_split.policies import servers
from scheduler_split.policies import services
from scheduler_split.policies import usage


def list_rules():
    return list(itertools.chain(
        base.list_rules(),
        servers.list_rules(),
        flavors.list_rules(),
        server_groups.list_rules(),
        instance_actions.list_rules(),
        migrations.list_rules(),
        services.list_rules(),
        hosts.list_rules(),
        aggregates.list_rules(),
        quotas.list_rules(),
        server_lifecycle.list_rules(),
        usage.list_rules(),
        metrics.list_rules(),
        extensions.list_rules(),
        instance_usage_audit_log.list_rules(),
        server_external_events.list_rules(),
        server_password.list_rules(),
        placement.list_rules(),
    ))
