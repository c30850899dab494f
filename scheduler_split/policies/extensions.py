"""Rule of ``/extensions``: the fixed list of Nova's v2 extensions, for
anyone."""

from oslo_policy import policy

RULE_ANY = '@'

rules = [
    policy.DocumentedRuleDefault(
        name='os_compute_api:extensions',
        check_str=RULE_ANY,
        description='List the v2 extensions and show one by its alias.',
        operations=[{'method': 'GET', 'path': '/extensions'},
                    {'method': 'GET', 'path': '/extensions/{alias}'}],
        scope_types=['project']),
]


def list_rules():
    return rules
