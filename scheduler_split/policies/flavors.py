"""Rules of ``/flavors``.

Listing and showing flavors needs no rule (as in Nova); only flavors'
extra specs are guarded. Which flavors a listing includes follows
``context_is_admin``: only admins may ask for non-public ones with
``is_public``.
"""

from oslo_policy import policy

from scheduler_split.policies import base

EXTRA_SPECS = 'os_compute_api:os-flavor-extra-specs:%s'

rules = [
    policy.DocumentedRuleDefault(
        name=EXTRA_SPECS % 'index',
        check_str=base.PROJECT_READER_OR_ADMIN,
        description='Include a flavor\'s ``extra_specs`` in its body '
                    '(microversion 2.61 and later).',
        operations=[{'method': 'GET', 'path': '/flavors/detail'},
                    {'method': 'GET', 'path': '/flavors/{flavor_id}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
