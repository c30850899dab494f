from oslo_config import cfg

quota_group = cfg.OptGroup(
    'quota',
    help='Limits on what one project, user, request or server may hold: '
         'the defaults, which the quota class "default" and per-project '
         'quotas (os-quota-sets) override.')

quota_opts = [
    cfg.IntOpt('instances', default=10, min=-1,
               help='Servers one project may have (building, active, '
                    'stopped or in error: until they are deleted). -1 '
                    'means no limit.'),
    cfg.IntOpt('cores', default=20, min=-1,
               help='vCPUs the servers of one project may have in all. -1 '
                    'means no limit.'),
    cfg.IntOpt('ram', default=50 * 1024, min=-1,
               help='Megabytes of RAM the servers of one project may have '
                    'in all. -1 means no limit.'),
    cfg.IntOpt('key_pairs', default=100, min=-1,
               help='Key pairs one user may have. -1 means no limit.'),
    cfg.IntOpt('server_groups', default=10, min=-1,
               help='Server groups one project may have. -1 means no '
                    'limit.'),
    cfg.IntOpt('server_group_members', default=10, min=-1,
               help='Servers one server group may hold. -1 means no '
                    'limit.'),
    cfg.IntOpt('injected_files', default=5, min=-1,
               help='Files one server may be given at boot (shown before '
                    'microversion 2.57; nothing injects files here).'),
    cfg.IntOpt('injected_file_content_bytes', default=10 * 1024, min=-1,
               help='Bytes of one injected file (shown before 2.57).'),
    cfg.IntOpt('injected_file_path_bytes', default=255, min=-1,
               help='Length of an injected file\'s path (shown before '
                    '2.57).'),
    cfg.IntOpt('metadata_items', default=128, min=-1,
               help='Most metadata items (key/value pairs) one server may '
                    'have; more is refused with 403, as Nova does. -1 '
                    'means no limit.'),
]


def register_opts(conf):
    conf.register_group(quota_group)
    conf.register_opts(quota_opts, group=quota_group)


def list_opts():
    return {quota_group: quota_opts}
