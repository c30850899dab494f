from oslo_config import cfg

glance_group = cfg.OptGroup(
    'glance',
    help='Where the API reads the images it boots and makes the images '
         'of servers: its built-in catalog (which the API then serves '
         'under /image) or an Image service (Glance v2).')

glance_opts = [
    cfg.StrOpt('source', default='builtin',
               choices=[('builtin', 'the built-in catalog: a few '
                                    'read-only images and the images '
                                    'users and snapshots make, in the API '
                                    'database, which every API process '
                                    'serves under /image'),
                        ('glance', 'an Image service: api_servers, else '
                                   'the endpoint of service_type in the '
                                   'service catalog of the user\'s token')],
               help='Which image catalog imageRef is checked against, '
                    'whose min_ram, min_disk and properties a boot takes, '
                    'which the /images proxy shows and where createImage '
                    'and createBackup make their images.'),
    cfg.ListOpt('api_servers', default=[],
                help='Image service endpoints, e.g. '
                     'http://glance.example.org:9292, tried in order until '
                     'one answers. When set they win over the service '
                     'catalog. Read with source = glance; with source = '
                     'builtin, by compute hosts only, which hold no '
                     'database credentials and move image data through an '
                     'API\'s /image (e.g. http://api.example.org:8774/'
                     'image).'),
    cfg.StrOpt('service_type', default='image',
               help='The service type of the Image service in the service '
                    'catalog of the user\'s token (with [api] '
                    'auth_strategy = keystone), when api_servers is empty.'),
    cfg.ListOpt('valid_interfaces', default=['internal', 'public'],
                help='The catalog interfaces to take the endpoint from, in '
                     'order of preference.'),
    cfg.StrOpt('region_name',
               help='The region of the catalog endpoint; any region if '
                    'unset.'),
    cfg.FloatOpt('timeout', default=10.0, min=0.1,
                 help='Seconds the Image service may take for each step of '
                      'a request (connecting, and each read or write of '
                      'it), not for a whole transfer of image data.'),
    cfg.StrOpt('cafile',
               help='CA bundle that verifies the Image service\'s HTTPS '
                    'certificate; the system\'s if unset.'),
    cfg.BoolOpt('insecure', default=False,
                help='Skip verifying the Image service\'s HTTPS '
                     'certificate.'),
    cfg.StrOpt('builtin_store_dir',
               help='Where the built-in catalog keeps the data of the '
                    'images uploaded to it, one file per image id, as '
                    'Glance\'s filesystem store does; the API serves it '
                    'at /image/v2/images/{id}/file. Every API process of '
                    'a deployment needs the same directory (a shared '
                    'file system when they run on several machines). '
                    'Unset, an upload keeps only the size and checksums '
                    'of its data. Only read with source = builtin.'),
]


def register_opts(conf):
    conf.register_group(glance_group)
    conf.register_opts(glance_opts, group=glance_group)


def list_opts():
    return {glance_group: glance_opts}
