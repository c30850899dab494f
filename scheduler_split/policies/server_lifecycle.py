"""Rules of a server's lifecycle after boot: its power, pause, suspend
and lock actions, its metadata and its tags, named as Nova names them.
"""

from oslo_policy import policy

from scheduler_split.policies import base

_ACTION = '/servers/{server_id}/action'


def _rule(name, check_str, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check_str, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


def _action(name, description, action, check_str=None):
    return _rule(name, check_str or base.PROJECT_MEMBER_OR_ADMIN,
                 '%s (%s).' % (description.rstrip('.'), action), 'POST',
                 _ACTION)


_METADATA = 'os_compute_api:server-metadata:%s'
_TAGS = 'os_compute_api:os-server-tags:%s'
_META_PATH = '/servers/{server_id}/metadata'
_TAGS_PATH = '/servers/{server_id}/tags'

rules = [
    _action('os_compute_api:servers:stop', 'Stop a server.', 'os-stop'),
    _action('os_compute_api:servers:start', 'Start a stopped server.',
            'os-start'),
    _action('os_compute_api:servers:reboot', 'Reboot a server.', 'reboot'),
    _action('os_compute_api:os-pause-server:pause', 'Pause a server.',
            'pause'),
    _action('os_compute_api:os-pause-server:unpause',
            'Unpause a paused server.', 'unpause'),
    _action('os_compute_api:os-suspend-server:suspend',
            'Suspend a server.', 'suspend'),
    _action('os_compute_api:os-suspend-server:resume',
            'Resume a suspended server.', 'resume'),
    _action('os_compute_api:os-lock-server:lock', 'Lock a server.', 'lock'),
    _action('os_compute_api:os-lock-server:unlock',
            'Unlock a server locked by its own project.', 'unlock'),
    _action('os_compute_api:os-lock-server:unlock:unlock_override',
            'Unlock a server locked by someone else (an admin).',
            'unlock', check_str=base.ADMIN),
    _action('os_compute_api:os-admin-actions:reset_state',
            'Set a server\'s state to active or error and forget its task '
            '(an admin\'s repair; nothing on its host changes).',
            'os-resetState', check_str=base.ADMIN),
    _action('os_compute_api:servers:create_image',
            'Create an image from a server (refused: the image service '
            'takes no uploads).', 'createImage'),
    _action('os_compute_api:os-create-backup',
            'Back a server up as an image (refused: the image service '
            'takes no uploads).', 'createBackup'),
    _action('os_compute_api:servers:resize',
            'Resize a server to another flavor.', 'resize'),
    _action('os_compute_api:servers:confirm_resize',
            'Confirm a resize or a cold migration.', 'confirmResize'),
    _action('os_compute_api:servers:revert_resize',
            'Revert a resize or a cold migration.', 'revertResize'),
    _action('os_compute_api:os-migrate-server:migrate',
            'Cold migrate a server to a host the scheduler chooses.',
            'migrate', check_str=base.ADMIN),
    _action('os_compute_api:os-migrate-server:migrate:host',
            'Cold migrate a server to a named host (from 2.56).',
            'migrate', check_str=base.ADMIN),
    _action('os_compute_api:os-migrate-server:migrate_live',
            'Live migrate a server.', 'os-migrateLive',
            check_str=base.ADMIN),
    _action('os_compute_api:servers:rebuild',
            'Rebuild a server from an image on its own host.', 'rebuild'),
    _action('os_compute_api:os-deferred-delete:restore',
            'Restore a soft-deleted server.', 'restore'),
    _action('os_compute_api:os-deferred-delete:force',
            'Delete a server at once, soft-deleted or not.', 'forceDelete'),
    _action('os_compute_api:os-shelve:shelve',
            'Shelve a server: powered off, its image saved.', 'shelve'),
    _action('os_compute_api:os-shelve:shelve_offload',
            'Offload a shelved server: its host and claim are given back.',
            'shelveOffload', check_str=base.ADMIN),
    _action('os_compute_api:os-shelve:unshelve',
            'Unshelve a server; an offloaded one is placed again.',
            'unshelve'),
    _action('os_compute_api:os-shelve:unshelve_to_host',
            'Unshelve an offloaded server to a named host (2.91).',
            'unshelve', check_str=base.ADMIN),
    _action('os_compute_api:os-console-output',
            'Show the console output of a server.', 'os-getConsoleOutput'),
    _rule('os_compute_api:os-server-diagnostics', base.ADMIN,
          'Show the diagnostics of a server, from its compute.', 'GET',
          '/servers/{server_id}/diagnostics'),
    _action('os_compute_api:os-evacuate',
            'Rebuild a server whose compute is down on another host.',
            'evacuate', check_str=base.ADMIN),
    _rule(_METADATA % 'index', base.PROJECT_READER_OR_ADMIN,
          'List the metadata of a server.', 'GET', _META_PATH),
    _rule(_METADATA % 'show', base.PROJECT_READER_OR_ADMIN,
          'Show one metadata item of a server.', 'GET',
          _META_PATH + '/{key}'),
    _rule(_METADATA % 'create', base.PROJECT_MEMBER_OR_ADMIN,
          'Add metadata items to a server.', 'POST', _META_PATH),
    _rule(_METADATA % 'update_all', base.PROJECT_MEMBER_OR_ADMIN,
          'Replace the metadata of a server.', 'PUT', _META_PATH),
    _rule(_METADATA % 'update', base.PROJECT_MEMBER_OR_ADMIN,
          'Set one metadata item of a server.', 'PUT',
          _META_PATH + '/{key}'),
    _rule(_METADATA % 'delete', base.PROJECT_MEMBER_OR_ADMIN,
          'Delete one metadata item of a server.', 'DELETE',
          _META_PATH + '/{key}'),
    _rule(_TAGS % 'index', base.PROJECT_READER_OR_ADMIN,
          'List the tags of a server.', 'GET', _TAGS_PATH),
    _rule(_TAGS % 'show', base.PROJECT_READER_OR_ADMIN,
          'Check whether a server has a tag.', 'GET',
          _TAGS_PATH + '/{tag}'),
    _rule(_TAGS % 'update_all', base.PROJECT_MEMBER_OR_ADMIN,
          'Replace the tags of a server.', 'PUT', _TAGS_PATH),
    _rule(_TAGS % 'update', base.PROJECT_MEMBER_OR_ADMIN,
          'Add a tag to a server.', 'PUT', _TAGS_PATH + '/{tag}'),
    _rule(_TAGS % 'delete_all', base.PROJECT_MEMBER_OR_ADMIN,
          'Delete every tag of a server.', 'DELETE', _TAGS_PATH),
    _rule(_TAGS % 'delete', base.PROJECT_MEMBER_OR_ADMIN,
          'Delete a tag of a server.', 'DELETE', _TAGS_PATH + '/{tag}'),
]


def list_rules():
    return rules
