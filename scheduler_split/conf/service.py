import socket

from oslo_config import cfg

service_opts = [
    cfg.StrOpt('host',
               default=socket.gethostname(),
               sample_default='<current_hostname>',
               help='Name of this node, under which its service record '
                    'is kept. For a compute service this is the host name '
                    'the scheduler selects, the name of its RPC server on '
                    'the cell bus and the host cell_v2 discover_hosts '
                    'maps.'),
    cfg.StrOpt('my_ip',
               default='127.0.0.1',
               sample_default='127.0.0.1',
               help='The IP address of this host, which a compute reports '
                    'as its hypervisor\'s host_ip (os-hypervisors).'),
    cfg.IntOpt('report_interval',
               default=10, min=1,
               help='Seconds between two reports of a service: a compute '
                    'sends its resources to the scheduler and heartbeats '
                    'its service record (through its cell conductor); '
                    'schedulers and conductors heartbeat their own '
                    'service records.'),
    cfg.IntOpt('resize_confirm_window',
               default=0, min=0,
               help='Seconds after which a resize or cold migration that '
                    'waits for its confirmation (VERIFY_RESIZE) is '
                    'confirmed by its cell conductor, as if its user had; 0 '
                    'leaves it waiting for the user. Read by the cell '
                    'conductors, which look every 60 seconds, or every '
                    'window if it is shorter.'),
    cfg.IntOpt('reclaim_instance_interval',
               default=0, min=0,
               help='Seconds a deleted server stays SOFT_DELETED, on its '
                    'host and holding its claim, restorable (restore) or '
                    'deletable at once (forceDelete), before its cell '
                    'conductor reclaims it; 0 deletes servers at once. '
                    'Read by the API (whether a delete is soft) and the '
                    'cell conductors, which look every 60 seconds, or '
                    'every interval if it is shorter.'),
    cfg.IntOpt('shelved_offload_time',
               default=0, min=-1,
               help='Seconds a shelved server stays on its host, holding '
                    'its claim, before it is offloaded: its VM goes and '
                    'its claim is given back, and its unshelve places it '
                    'again through the scheduler. 0 offloads it as soon '
                    'as it is shelved; -1 never (shelveOffload still '
                    'does). Read by the computes (0) and the cell '
                    'conductors, which look every 60 seconds, or every '
                    'interval if it is shorter.'),
    cfg.IntOpt('service_down_time',
               default=60, min=1,
               help='Seconds without a report after which a service is '
                    'down: the scheduler stops choosing such a compute, '
                    'the API shows it down (os-services), a cell conductor '
                    'ends the builds left on it, and [upgrade_levels] '
                    'auto no longer counts it.'),
    cfg.IntOpt('rpc_delivery_timeout',
               default=60, min=0,
               help='Seconds a call or cast waits for a consumer when the '
                    'broker has no queue for its topic: after a broker '
                    'restart lost the transient queues, a service has one '
                    'again only once it reconnected. The message is sent '
                    'again until a queue takes it, then fails with '
                    'MessageDeliveryFailure; it is never dropped silently. '
                    'RabbitMQ only (messages are published mandatory); 0 '
                    'fails at once.'),
    cfg.IntOpt('cell_rpc_timeout',
               default=15, min=1, max=300,
               help='Seconds the API and the super-conductor give a '
                    'message into a cell over its bus: a call into a cell '
                    '(console output, diagnostics) waits this long at '
                    'most for its answer (or [DEFAULT] '
                    'rpc_response_timeout if shorter), and a message to '
                    'a cell whose bus cannot be reached is given up '
                    'unsent after the reconnection attempts that fit in '
                    'about this long ([oslo_messaging_rabbit] '
                    'rabbit_retry_interval and rabbit_retry_backoff '
                    'space them; an attempt at a broker whose packets '
                    'are dropped takes up to 5 seconds). An action on a '
                    'server then answers 503 and changes nothing (a '
                    'delete is accepted, and finished by its compute once '
                    'its bus is back), and a build whose cast was given '
                    'up is cast by its cell conductor once the bus '
                    'answers. The services of a cell wait for their own '
                    'bus as long as it takes.'),
    cfg.FloatOpt('rpc_listener_wait',
                 default=0.25, min=0,
                 help='Shortest time, in seconds, an RPC listener on '
                      'RabbitMQ waits for the next message before it looks '
                      'again. A message wakes it at once whatever this is; '
                      'the looks in between only serve acknowledgements '
                      'that the RPC listeners of these services make as '
                      'each message arrives, so each look is CPU spent for '
                      'nothing: oslo.messaging starts at 0.001 after every '
                      'message and doubles it, a dozen looks per message '
                      'on a busy bus. 0 keeps oslo.messaging\'s own. An '
                      'idle listener looks again at least every half '
                      'second whatever this is: the look is how it '
                      'notices a stop (SIGTERM).'),
    cfg.FloatOpt('graceful_shutdown_timeout',
                 default=1.5, min=0,
                 help='Seconds a service gives itself to stop after '
                      'SIGTERM or SIGINT: to finish the messages and '
                      'periodic runs in hand and to close its connections '
                      '(scheduler-split-api adds [wsgi] shutdown_timeout '
                      'for the requests in hand; under gunicorn its '
                      'graceful_timeout governs the API). Whatever still '
                      'runs then, such as a message that waits for a '
                      'broker or a database that is away, is abandoned '
                      'with a WARNING naming it, and the process exits 0 '
                      '(work abandoned so is left as a crash leaves it, '
                      'for the sweeps of lost builds). Once the signal came '
                      'no database outage is waited out, and a start still '
                      'waiting for a broker or a database is given up. '
                      'Keep it well below the TimeoutStopSec of the '
                      'systemd units.'),
    cfg.StrOpt('cpu_affinity',
               default='',
               help='CPUs this process keeps to: a list such as "2" or '
                    '"0,2-3" (sched_setaffinity, Linux), or "auto" for one '
                    'CPU of those it may use, chosen by its process id. A '
                    'service is one Python process whose threads take '
                    'turns holding the interpreter lock; kept to one CPU '
                    'they hand it over without waking a second core, '
                    'which makes a scheduler faster; a process of hundreds '
                    'of busy threads (an all-in-one of many hosts) is '
                    'slower kept to one CPU (admin guide, "Large clouds"). '
                    'Empty leaves it to the operating system.'),
    cfg.FloatOpt('thread_switch_interval',
                 default=0.001, min=0.0001, max=0.1,
                 help='Seconds a thread of this process runs Python before '
                      'it hands the interpreter lock to a thread waiting '
                      'for it (sys.setswitchinterval; Python\'s own is '
                      '0.005). A service is one process whose threads take '
                      'turns holding that lock: an RPC call waits for it '
                      'at every step (its message taken, its database '
                      'answer back, its reply sent), up to this long each '
                      'time another thread is busy. A scheduler absorbing '
                      'a stream of compute reports answers selects about '
                      'twice as fast at 0.001 as at 0.005; a process that '
                      'only ever does one thing at a time gains nothing. '
                      'Shorter hands over more often, each hand-over '
                      'costing a little CPU.'),
    cfg.BoolOpt('use_eventlet',
                default=False,
                deprecated_for_removal=True,
                deprecated_reason='Nothing reads or sets it.',
                help='Ignored. Eventlet mode is switched on by the '
                     'SCHEDULER_SPLIT_EVENTLET=1 environment variable, read '
                     'before any other import.'),
]


def register_opts(conf):
    conf.register_opts(service_opts)


def list_opts():
    return {'DEFAULT': service_opts}
