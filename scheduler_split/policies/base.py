"""The personas every resource's rules are written in.

An admin is whoever passes ``context_is_admin`` (the ``admin`` role by
default); a project member or reader holds that role *in the project that
owns the resource* (``project_id:%(project_id)s`` matches the target's
project). Keystone's default roles imply each other (admin implies member
implies reader), so a rule granted to readers is granted to members and
admins too.
"""

from oslo_policy import policy

ADMIN = 'rule:context_is_admin'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
SERVICE_OR_ADMIN = 'rule:service_or_admin'

rules = [
    policy.RuleDefault(
        'context_is_admin',
        'role:admin',
        'Who is an admin: decides what the API treats as an admin request '
        '(every server of every project visible, flavors that are not '
        'public listed, fault details of a server in ERROR shown).'),
    policy.RuleDefault(
        'admin_api',
        'rule:context_is_admin',
        'Default rule for admin-only APIs.'),
    policy.RuleDefault(
        'project_member_api',
        'role:member and project_id:%(project_id)s',
        'Default rule for APIs that change resources of a project: a '
        'member of the project that owns the resource.'),
    policy.RuleDefault(
        'project_reader_api',
        'role:reader and project_id:%(project_id)s',
        'Default rule for read-only APIs on resources of a project: a '
        'reader of the project that owns the resource.'),
    policy.RuleDefault(
        'project_member_or_admin',
        'rule:project_member_api or rule:context_is_admin',
        'A member of the owning project, or an admin.'),
    policy.RuleDefault(
        'project_reader_or_admin',
        'rule:project_reader_api or rule:context_is_admin',
        'A reader of the owning project, or an admin.'),
    policy.RuleDefault(
        'service_api',
        'role:service',
        'Default rule for APIs other OpenStack services call (Neutron, '
        'Cinder, Ironic and Cyborg tell servers\' events): a token with '
        'the ``service`` role.'),
    policy.RuleDefault(
        'service_or_admin',
        'rule:service_api or rule:context_is_admin',
        'Another OpenStack service, or an admin.'),
]


def list_rules():
    return rules
