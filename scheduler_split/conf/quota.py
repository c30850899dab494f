from oslo_config import cfg

quota_group = cfg.OptGroup(
    'quota', help='Limits on what one request or one server may hold.')

quota_opts = [
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
