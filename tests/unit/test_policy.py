"""Who may do what under the default rules, and how policy.yaml changes it.
"""

import pathlib
import re

import pytest

from oslo_policy import policy as oslo_policy

from scheduler_split.api import wsgi
from scheduler_split import conf
from scheduler_split import context as ss_context
from scheduler_split import exception
from scheduler_split import policies
from scheduler_split import policy

CONF = conf.CONF


@pytest.fixture
def configured(tmp_path):
    """Parse the configuration as a service does: ``configured(*argv)``.
    Without arguments no config file is read."""

    def parse(*argv):
        CONF(list(argv), default_config_files=[])
        policy.reset()

    parse()
    yield parse
    policy.reset()
    CONF.reset()


def _user(project, *roles):
    return ss_context.RequestContext(user_id='user-' + project,
                                     project_id=project, roles=list(roles),
                                     overwrite=False)


# Keystone's default roles imply each other: an admin also holds member
# and reader, a member also holds reader.
PERSONAS = {
    'admin': _user('p0', 'admin', 'member', 'reader'),
    'member': _user('p1', 'member', 'reader'),
    'reader': _user('p1', 'reader'),
    'other member': _user('p2', 'member', 'reader'),
}
OWNED_BY_P1 = {'project_id': 'p1'}

EVERYONE_OF_THE_PROJECT = {'admin', 'member', 'reader'}
MEMBERS = {'admin', 'member'}
ADMINS = {'admin'}

# Who passes each rule on a resource of project p1.
EXPECTED = {
    'os_compute_api:servers:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:servers:detail': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:servers:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:ips:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:ips:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:servers:show:flavor-extra-specs':
        EVERYONE_OF_THE_PROJECT,
    'os_compute_api:servers:create': MEMBERS,
    'os_compute_api:servers:update': MEMBERS,
    'os_compute_api:servers:delete': MEMBERS,
    'os_compute_api:servers:index:get_all_tenants': ADMINS,
    'os_compute_api:servers:detail:get_all_tenants': ADMINS,
    'os_compute_api:servers:create:forced_host': ADMINS,
    'os_compute_api:os-extended-server-attributes': ADMINS,
    'os_compute_api:os-flavor-extra-specs:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-flavor-extra-specs:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-flavor-extra-specs:create': ADMINS,
    'os_compute_api:os-flavor-extra-specs:update': ADMINS,
    'os_compute_api:os-flavor-extra-specs:delete': ADMINS,
    'os_compute_api:os-admin-actions:reset_state': ADMINS,
    'os_compute_api:os-hosts:list': ADMINS,
    'os_compute_api:os-simple-tenant-usage:list': ADMINS,
    'os_compute_api:os-simple-tenant-usage:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-hosts:show': ADMINS,
    'os_compute_api:os-hosts:update': ADMINS,
    'os_compute_api:os-hosts:reboot': ADMINS,
    'os_compute_api:os-hosts:shutdown': ADMINS,
    'os_compute_api:os-hosts:start': ADMINS,
    'os_compute_api:os-flavor-manage:create': ADMINS,
    'os_compute_api:os-flavor-manage:update': ADMINS,
    'os_compute_api:os-flavor-manage:delete': ADMINS,
    'os_compute_api:os-flavor-access': ADMINS,
    'os_compute_api:os-flavor-access:add_tenant_access': ADMINS,
    'os_compute_api:os-flavor-access:remove_tenant_access': ADMINS,
    'os_compute_api:os-server-groups:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-server-groups:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-server-groups:create': MEMBERS,
    'os_compute_api:os-server-groups:delete': MEMBERS,
    'os_compute_api:os-server-groups:index:all_projects': ADMINS,
    'os_compute_api:os-instance-actions:list': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-instance-actions:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-instance-actions:events': ADMINS,
    'os_compute_api:os-instance-actions:events:details':
        EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-aggregates:index': ADMINS,
    'os_compute_api:os-aggregates:create': ADMINS,
    'os_compute_api:os-aggregates:show': ADMINS,
    'os_compute_api:os-aggregates:update': ADMINS,
    'os_compute_api:os-aggregates:delete': ADMINS,
    'os_compute_api:os-aggregates:add_host': ADMINS,
    'os_compute_api:os-aggregates:remove_host': ADMINS,
    'os_compute_api:os-aggregates:set_metadata': ADMINS,
    'os_compute_api:os-aggregates:images': ADMINS,
    'os_compute_api:os-availability-zone:list': set(PERSONAS),
    'os_compute_api:os-availability-zone:detail': ADMINS,
    'os_compute_api:limits': set(PERSONAS),
    'os_compute_api:limits:other_project': ADMINS,
    'os_compute_api:os-quota-sets:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-quota-sets:detail': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-quota-sets:defaults': set(PERSONAS),
    'os_compute_api:os-quota-sets:update': ADMINS,
    'os_compute_api:os-quota-sets:delete': ADMINS,
    'os_compute_api:os-quota-class-sets:show': ADMINS,
    'os_compute_api:os-quota-class-sets:update': ADMINS,
    'os_compute_api:os-keypairs:index': ADMINS,  # or the key's user
    'os_compute_api:os-keypairs:create': ADMINS,  # or the key's user
    'os_compute_api:os-keypairs:show': ADMINS,  # or the key's user
    'os_compute_api:os-keypairs:delete': ADMINS,  # or the key's user
    'os_compute_api:os-services:list': ADMINS,
    'os_compute_api:os-services:update': ADMINS,
    'os_compute_api:os-services:delete': ADMINS,
    'os_compute_api:os-hypervisors:list': ADMINS,
    'os_compute_api:os-hypervisors:list-detail': ADMINS,
    'os_compute_api:os-hypervisors:show': ADMINS,
    'os_compute_api:os-hypervisors:statistics': ADMINS,
    'os_compute_api:os-hypervisors:search': ADMINS,
    'os_compute_api:os-hypervisors:servers': ADMINS,
    'os_compute_api:os-hypervisors:uptime': ADMINS,
    # Server lifecycle after boot.
    'os_compute_api:servers:stop': MEMBERS,
    'os_compute_api:servers:start': MEMBERS,
    'os_compute_api:servers:reboot': MEMBERS,
    'os_compute_api:servers:resize': MEMBERS,
    'os_compute_api:servers:confirm_resize': MEMBERS,
    'os_compute_api:servers:revert_resize': MEMBERS,
    'os_compute_api:os-migrate-server:migrate': ADMINS,
    'os_compute_api:os-migrate-server:migrate:host': ADMINS,
    'os_compute_api:os-migrations:index': ADMINS,
    'os_compute_api:os-migrate-server:migrate_live': ADMINS,
    'os_compute_api:os-evacuate': ADMINS,
    'os_compute_api:servers:rebuild': MEMBERS,
    'os_compute_api:os-console-output': MEMBERS,
    'os_compute_api:os-server-diagnostics': ADMINS,
    'os_compute_api:servers:show:host_status': ADMINS,
    'os_compute_api:os-deferred-delete:restore': MEMBERS,
    'os_compute_api:os-deferred-delete:force': MEMBERS,
    'os_compute_api:os-shelve:shelve': MEMBERS,
    'os_compute_api:os-shelve:shelve_offload': ADMINS,
    'os_compute_api:os-shelve:unshelve': MEMBERS,
    'os_compute_api:os-shelve:unshelve_to_host': ADMINS,
    'os_compute_api:servers:migrations:index': ADMINS,
    'os_compute_api:servers:migrations:show': ADMINS,
    'os_compute_api:os-pause-server:pause': MEMBERS,
    'os_compute_api:os-pause-server:unpause': MEMBERS,
    'os_compute_api:os-suspend-server:suspend': MEMBERS,
    'os_compute_api:os-suspend-server:resume': MEMBERS,
    'os_compute_api:os-lock-server:lock': MEMBERS,
    'os_compute_api:os-lock-server:unlock': MEMBERS,
    'os_compute_api:os-lock-server:unlock:unlock_override': ADMINS,
    'os_compute_api:servers:create_image': MEMBERS,
    'os_compute_api:os-create-backup': MEMBERS,
    'os_compute_api:server-metadata:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:server-metadata:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:server-metadata:create': MEMBERS,
    'os_compute_api:server-metadata:update_all': MEMBERS,
    'os_compute_api:server-metadata:update': MEMBERS,
    'os_compute_api:server-metadata:delete': MEMBERS,
    'os_compute_api:os-server-tags:index': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-server-tags:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-server-tags:update_all': MEMBERS,
    'os_compute_api:os-server-tags:update': MEMBERS,
    'os_compute_api:os-server-tags:delete_all': MEMBERS,
    'os_compute_api:os-server-tags:delete': MEMBERS,
    'os_compute_api:extensions': set(PERSONAS),
    'os_compute_api:os-instance-usage-audit-log:list': ADMINS,
    'os_compute_api:os-instance-usage-audit-log:show': ADMINS,
    'os_compute_api:os-server-external-events:create': ADMINS,
    'os_compute_api:os-server-password:show': EVERYONE_OF_THE_PROJECT,
    'os_compute_api:os-server-password:clear': MEMBERS,
    'scheduler_split:metrics': ADMINS,
    # Placement's rules, by Placement's names: for admins and services;
    # the reshaper for services alone, a project's usages for its
    # readers too.
    **{'placement:' + name: ADMINS for name in (
        'resource_providers:list', 'resource_providers:create',
        'resource_providers:show', 'resource_providers:update',
        'resource_providers:delete', 'resource_providers:inventories:list',
        'resource_providers:inventories:create',
        'resource_providers:inventories:show',
        'resource_providers:inventories:update',
        'resource_providers:inventories:delete',
        'resource_providers:aggregates:list',
        'resource_providers:aggregates:update',
        'resource_providers:usages', 'resource_providers:allocations:list',
        'resource_providers:traits:list',
        'resource_providers:traits:update',
        'resource_providers:traits:delete', 'allocations:list',
        'allocations:manage', 'allocations:update', 'allocations:delete',
        'allocation_candidates:list', 'resource_classes:list',
        'resource_classes:create', 'resource_classes:show',
        'resource_classes:update', 'resource_classes:delete',
        'traits:list', 'traits:show', 'traits:update', 'traits:delete')},
    'placement:reshaper:reshape': set(),
    'placement:usages': EVERYONE_OF_THE_PROJECT,
    'placement_project_usages': EVERYONE_OF_THE_PROJECT,
    'context_is_admin': ADMINS,
    'admin_api': ADMINS,
    'project_member_api': {'member'},
    'project_reader_api': {'member', 'reader'},
    'project_member_or_admin': MEMBERS,
    'project_reader_or_admin': EVERYONE_OF_THE_PROJECT,
    # Only another service's token holds the service role.
    'service_api': set(),
    'service_or_admin': ADMINS,
}


def test_every_rule_has_its_expected_personas():
    assert sorted(r.name for r in policies.list_rules()) == sorted(EXPECTED)


@pytest.mark.parametrize('rule', sorted(EXPECTED))
def test_default_rule_allows_exactly_its_personas(configured, rule):
    allowed = {name for name, ctx in PERSONAS.items()
               if policy.authorize(ctx, rule, OWNED_BY_P1, fatal=False)}
    assert allowed == EXPECTED[rule]


def test_a_member_of_another_project_passes_for_its_own_project(
        configured):
    other = PERSONAS['other member']
    policy.authorize(other, 'os_compute_api:servers:create')
    policy.authorize(other, 'os_compute_api:servers:delete',
                     {'project_id': 'p2'})


def test_a_key_pair_is_its_users(configured):
    member = PERSONAS['member']
    for action in ('index', 'create', 'show', 'delete'):
        rule = 'os_compute_api:os-keypairs:' + action
        assert policy.authorize(member, rule, {'user_id': member.user_id},
                                fatal=False)
        assert not policy.authorize(member, rule, {'user_id': 'someone'},
                                    fatal=False)
        assert policy.authorize(PERSONAS['admin'], rule,
                                {'user_id': 'someone'}, fatal=False)


def test_another_services_token_may_send_server_events(configured):
    rule = 'os_compute_api:os-server-external-events:create'
    neutron = _user('service', 'service')
    assert policy.authorize(neutron, rule, {}, fatal=False)
    assert not policy.authorize(PERSONAS['member'], rule, {}, fatal=False)


def test_services_write_placement_and_reshape(configured):
    """As in Placement: a service's token (Nova's computes, Neutron,
    Cyborg) writes providers and allocations, and it alone reshapes."""
    cyborg = _user('service', 'service')
    for rule in ('placement:resource_providers:create',
                 'placement:allocations:update',
                 'placement:reshaper:reshape'):
        assert policy.authorize(cyborg, rule, {}, fatal=False)
    assert not policy.authorize(PERSONAS['admin'],
                                'placement:reshaper:reshape', {},
                                fatal=False)
    # A project's readers see its usages, not another project's.
    reader = PERSONAS['reader']
    assert policy.authorize(reader, 'placement:usages',
                            {'project_id': 'p1'}, fatal=False)
    assert not policy.authorize(reader, 'placement:usages',
                                {'project_id': 'p2'}, fatal=False)


def test_refusal_is_a_403_in_novas_words(configured):
    with pytest.raises(exception.PolicyNotAuthorized) as caught:
        policy.authorize(PERSONAS['reader'], 'os_compute_api:servers:create',
                         OWNED_BY_P1)
    assert caught.value.code == 403
    assert caught.value.format_message() == (
        "Policy doesn't allow os_compute_api:servers:create to be "
        "performed.")


def test_an_unregistered_rule_is_a_programming_error(configured):
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        policy.authorize(PERSONAS['admin'], 'os_compute_api:servers:nope')


def test_check_is_admin_follows_context_is_admin(configured):
    assert policy.check_is_admin(PERSONAS['admin'])
    assert not policy.check_is_admin(PERSONAS['member'])


def test_a_system_scoped_token_is_refused_project_apis(configured):
    system_admin = ss_context.RequestContext(
        user_id='root', system_scope='all', roles=['admin'],
        overwrite=False)
    assert not policy.authorize(system_admin,
                                'os_compute_api:servers:index',
                                fatal=False)


def test_policy_yaml_beside_the_config_file_overrides_defaults(
        configured, tmp_path):
    config_file = tmp_path / 'scheduler-split.conf'
    config_file.write_text('[DEFAULT]\n')
    (tmp_path / 'policy.yaml').write_text(
        '"os_compute_api:servers:create": "rule:context_is_admin"\n'
        '"context_is_admin": "role:cloud_admin"\n')
    configured('--config-file', str(config_file))
    admin, member = PERSONAS['admin'], PERSONAS['member']
    assert not policy.authorize(member, 'os_compute_api:servers:create',
                                fatal=False)
    assert not policy.check_is_admin(admin)
    cloud_admin = _user('p0', 'cloud_admin')
    assert policy.check_is_admin(cloud_admin)
    assert policy.authorize(cloud_admin, 'os_compute_api:servers:create',
                            fatal=False)
    # Rules the file does not name keep their defaults.
    assert policy.authorize(member, 'os_compute_api:servers:delete',
                            OWNED_BY_P1, fatal=False)


def test_policy_yaml_changes_are_read_without_a_restart(configured,
                                                        tmp_path):
    policy_file = tmp_path / 'policy.yaml'
    policy_file.write_text('{}\n')
    configured('--config-dir', str(tmp_path))
    member = PERSONAS['member']
    rule = 'os_compute_api:servers:index'
    assert policy.authorize(member, rule, OWNED_BY_P1, fatal=False)
    policy_file.write_text('"%s": "!"\n' % rule)
    assert not policy.authorize(member, rule, OWNED_BY_P1, fatal=False)


def _routes():
    for path, methods in wsgi.ROUTES.items():
        for method in methods:
            yield method, path


DOCUMENTED = [r for r in policies.list_rules()
              if isinstance(r, oslo_policy.DocumentedRuleDefault)]

# Rules of paths outside the compute API's /v2.1, documented as served.
OUTSIDE_THE_COMPUTE_API = {'scheduler_split:metrics'} | {
    name for name in EXPECTED if name.startswith('placement:')}


@pytest.mark.parametrize('rule', DOCUMENTED, ids=lambda r: r.name)
def test_every_operation_a_rule_documents_is_a_route(rule):
    served = set(_routes())
    prefix = '' if rule.name in OUTSIDE_THE_COMPUTE_API else '/v2.1'
    for operation in rule.operations:
        assert (operation['method'], prefix + operation['path']) in served


def test_every_rule_the_api_asks_for_is_registered():
    """A rule name misspelt in a handler would fail every such request."""
    api = pathlib.Path(wsgi.__file__).parent
    asked = set()
    for module in api.glob('*.py'):
        asked |= set(re.findall(r"'(os_compute_api:[^']+)'",
                                module.read_text()))
    for module in (api / 'placement').glob('*.py'):
        asked |= set(re.findall(r"rule='(placement:[^']+)'",
                                module.read_text()))
    registered = {r.name for r in policies.list_rules()}
    assert asked and asked <= registered, asked - registered
