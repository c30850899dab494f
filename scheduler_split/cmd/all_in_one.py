"""scheduler-split-all-in-one: every service in one process.

The API, the super-conductor, one cell conductor per cell, the scheduler
and the computes run as threads of this process, each on the bus it
would use in a deployment: the API bus and one bus per cell, all in
memory (``memory:///<vhost>``, see :mod:`scheduler_split.memory_bus`),
with the same RPC APIs, serialization and dispatch: as in a deployment,
a compute reads and writes its records only through its cell conductor,
over its cell's bus, and opens no database. Databases are
SQLite files in ``--state-dir``; restarting on the same directory keeps
the servers. The computes are fake hosts, or with ``--compute-driver
libvirt`` hosts of real guests sharing this machine's libvirtd.
"""

import argparse
import logging
import os
import signal
import sys
import threading

from oslo_config import cfg
from oslo_log import log as oslo_logging
import yaml

from scheduler_split.api import http_server
from scheduler_split.cmd import common
from scheduler_split import conf
from scheduler_split.db import outage
from scheduler_split import deployment
from scheduler_split.image import catalog as images
from scheduler_split.image import guest_images
from scheduler_split import rpc

CONF = conf.CONF
LOG = logging.getLogger(__name__)

common.register_logging_options(CONF)

# --compute-driver -> [DEFAULT] compute_driver.
COMPUTE_DRIVERS = {'fake': 'fake.FakeDriver',
                   'libvirt': 'libvirt.LibvirtDriver'}


def default_state_dir():
    base = os.environ.get('XDG_STATE_HOME') or os.path.join(
        os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'scheduler-split')


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog='scheduler-split-all-in-one',
        description='Run every scheduler-split service in one process on '
                    'an in-memory bus and SQLite: the compute API, the '
                    'conductors, the scheduler and fake compute hosts.')
    common.add_version_argument(parser)
    parser.add_argument('--state-dir', default=default_state_dir(),
                        help='Directory for the SQLite databases, the log, '
                             'clouds.yaml and scheduler-split.conf (for '
                             'scheduler-split-manage --config-file) '
                             '(default: %(default)s).')
    parser.add_argument('--compute-driver', default='fake',
                        choices=sorted(COMPUTE_DRIVERS),
                        help='The compute hosts\' hypervisor: fake hosts '
                             'that run nothing, or real QEMU/KVM guests '
                             'through this machine\'s libvirtd, which its '
                             'hosts share (default: %(default)s).')
    parser.add_argument('--virt-type', default='auto',
                        choices=['auto', 'kvm', 'qemu'],
                        help='With --compute-driver libvirt: kvm, qemu '
                             '(the CPU emulated: slower, but it boots '
                             'anywhere), or auto: kvm where this machine '
                             'can run KVM guests, else qemu '
                             '(default: %(default)s).')
    parser.add_argument('--cells', type=int, default=None,
                        help='Number of cells (default: 2; 1 with '
                             '--compute-driver libvirt).')
    parser.add_argument('--hosts-per-cell', type=int, default=None,
                        help='Compute hosts per cell (default: 4; 2 with '
                             '--compute-driver libvirt).')
    parser.add_argument('--host', default='127.0.0.1',
                        help='Address the REST API listens on '
                             '(default: %(default)s).')
    parser.add_argument('--port', type=int, default=8774,
                        help='Port of the REST API (default: %(default)s; '
                             '0 picks a free one).')
    parser.add_argument('--config-file', action='append', default=[],
                        help='Extra oslo.config file, e.g. to set '
                             '[fake_driver] or [wsgi] options. May '
                             'repeat.')
    parser.add_argument('--debug', action='store_true',
                        help='Log at DEBUG level.')
    parser.add_argument('--verbose', action='store_true',
                        help='Also log to standard error.')
    args = parser.parse_args(argv)
    real = args.compute_driver == 'libvirt'
    if args.cells is None:
        args.cells = 1 if real else 2
    if args.hosts_per_cell is None:
        args.hosts_per_cell = 2 if real else 4
    if args.cells < 1:
        parser.error('--cells must be at least 1')
    if args.hosts_per_cell < 1:
        parser.error('--hosts-per-cell must be at least 1')
    if not 0 <= args.port <= 65535:
        parser.error('--port must be between 0 and 65535')
    return args


def _choose_virt_type(wanted):
    """``[libvirt] virt_type`` as --virt-type says; ``auto`` is kvm
    only where a KVM guest boots, and says why not."""
    from scheduler_split.compute.virt.libvirt import host as libvirt_host
    if wanted == 'auto':
        usable, why = libvirt_host.kvm_usable()
        wanted = 'kvm' if usable else 'qemu'
        if not usable:
            LOG.warning('Guests run under qemu (TCG), the CPU emulated: %s',
                        why)
            print('Guests run under qemu, the CPU emulated: %s' % why,
                  flush=True)
    CONF.set_default('virt_type', wanted, group='libvirt')


def write_clouds_yaml(state_dir, base_url, keystone_url=None):
    """A clouds.yaml for the openstack CLI and openstacksdk.

    With noauth2 it logs in to the API's own identity endpoint with the
    token ``admin:admin`` and finds the services in the catalog that
    answers; behind Keystone it names the Keystone to log in to, and the
    user adds their own credentials (``OS_USERNAME``, ``OS_PASSWORD``,
    ``OS_PROJECT_NAME``).
    """
    path = os.path.join(state_dir, 'clouds.yaml')
    if keystone_url:
        cloud = {
            'compute_endpoint_override': base_url + '/v2.1',
            'placement_endpoint_override': base_url + '/placement',
            'auth_type': 'password',
            'auth': {'auth_url': keystone_url,
                     'user_domain_name': 'Default',
                     'project_domain_name': 'Default'}}
        if images.served():
            cloud['image_endpoint_override'] = base_url + '/image'
    else:
        cloud = {'auth_type': 'v3token',
                 'auth': {'auth_url': base_url + '/identity/v3',
                          'token': 'admin:admin', 'project_id': 'admin'}}
    with open(path, 'w') as f:
        yaml.safe_dump({'clouds': {'scheduler-split': cloud}}, f,
                       default_flow_style=False)
    return path


def _keystone_url():
    """The Keystone that validates tokens, or None with noauth2."""
    if CONF.api.auth_strategy != 'keystone':
        return None
    group = CONF.keystone_authtoken
    try:
        return group.www_authenticate_uri or group.auth_url
    except cfg.NoSuchOptError:
        return group.www_authenticate_uri


def setup_logging(args):
    """oslo.log to ``<state-dir>/scheduler-split.log`` (and stderr with
    --verbose): every line carries its request id and instance uuid."""
    oslo_logging.set_defaults(default_log_levels=[
        'amqp=WARN', 'oslo.messaging=WARN', 'oslo_messaging=WARN',
        'oslo_service=WARN', 'alembic=WARN', 'stevedore=WARN',
        'urllib3=WARN'])
    CONF.set_override('log_file', log_path(args.state_dir))
    CONF.set_override('use_stderr', args.verbose)
    CONF.set_override('debug', args.debug)
    oslo_logging.setup(CONF, 'scheduler-split')
    outage.one_line_outages()


def log_path(state_dir):
    return os.path.join(state_dir, 'scheduler-split.log')


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        os.makedirs(args.state_dir, exist_ok=True)
        CONF(project='scheduler-split', default_config_files=[],
             args=[a for f in args.config_file
                   for a in ('--config-file', f)])
    except (OSError, cfg.Error) as exc:
        return common.fail('scheduler-split-all-in-one: %s' % exc)
    # The port first: nothing is built when it cannot be had.
    try:
        sock = http_server.listen_socket(args.host, args.port)
    except http_server.PortInUse as exc:
        return common.fail(
            'scheduler-split-all-in-one: %s. Stop what listens there, or '
            'choose another port with --port (--port 0 picks a free one).'
            % exc)
    setup_logging(args)
    try:
        return _run(args, sock)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        LOG.exception('The all-in-one failed')
        return common.fail('scheduler-split-all-in-one: %s: %s\nThe log: %s'
                           % (type(exc).__name__, exc,
                              log_path(args.state_dir)))


def _run(args, sock):
    try:
        common.set_cpu_affinity()
        common.set_switch_interval()
    except ValueError as exc:
        return common.fail(str(exc))

    print('Setting up %d cell(s) with %d host(s) each in %s ...'
          % (args.cells, args.hosts_per_cell, args.state_dir), flush=True)
    driver = COMPUTE_DRIVERS[args.compute_driver]
    if args.compute_driver == 'libvirt':
        _choose_virt_type(args.virt_type)
    system = deployment.AllInOne(args.state_dir, args.cells,
                                 args.hosts_per_cell, compute_driver=driver)
    system.setup(echo=lambda line: LOG.info('%s', line))
    image = None
    if args.compute_driver == 'libvirt':
        print('Building the guest image from this machine\'s packages ...',
              flush=True)
        image = guest_images.register_builtin(
            os.path.join(args.state_dir, 'guest'))
    system.write_config()
    system.start()
    try:
        server = http_server.APIServer(system.wsgi_app(), sock).start()
    except BaseException:
        system.stop()
        raise
    base_url = server.url
    system.served_at(base_url)
    keystone_url = _keystone_url()
    clouds = write_clouds_yaml(args.state_dir, base_url, keystone_url)

    stop = threading.Event()

    def _signal(signum, frame):
        stop.set()

    signal.signal(signal.SIGINT, _signal)
    signal.signal(signal.SIGTERM, _signal)
    print('scheduler-split is running: compute API %s/v2.1, %d hosts in '
          '%d cell(s). Press Ctrl-C to stop.'
          % (base_url, args.cells * args.hosts_per_cell, args.cells),
          flush=True)
    if keystone_url:
        print('Requests need a Keystone token from %s: add OS_USERNAME, '
              'OS_PASSWORD and OS_PROJECT_NAME.' % keystone_url, flush=True)
    print('export OS_CLIENT_CONFIG_FILE=%s OS_CLOUD=scheduler-split'
          % clouds, flush=True)
    if image is not None:
        print('Guests boot from image %s: openstack server create --flavor '
              'm1.tiny --image %s --no-network --wait vm1'
              % (image['name'], image['name']), flush=True)
    while not stop.is_set():
        stop.wait(1)
    print('Stopping ...', flush=True)
    # The API first: the requests it is answering still reach the
    # services behind it.
    server.stop()
    system.stop()
    rpc.cleanup()
    print('Stopped.', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
