# gunicorn settings of scheduler-split-api.service.
import os

# Where the API listens: set SCHEDULER_SPLIT_API_BIND in the unit's
# environment (systemctl edit scheduler-split-api) rather than editing here.
bind = os.environ.get('SCHEDULER_SPLIT_API_BIND', '127.0.0.1:8774')
worker_class = 'gthread'
workers = 2
threads = 8
# Let requests in flight finish on SIGTERM.
graceful_timeout = 30
timeout = 60
# Seconds an idle connection is kept open. gunicorn's own 2 s closes it
# just as a client polling every 2 s (openstacksdk's waits) sends its
# next request, which then fails with a reset connection that the client
# does not retry for a POST; 10 s is well clear of such polls. On
# SIGTERM a kept-alive connection is held 2 s at most, to answer a
# request already sent on it, but a connection on which nothing was sent
# yet is held up to this long.
keepalive = 10
accesslog = '-'


def child_exit(server, worker):
    # With PROMETHEUS_MULTIPROC_DIR every worker writes its metrics there;
    # a worker that exited keeps its counters in the sum but no longer
    # counts as a live process.
    if os.environ.get('PROMETHEUS_MULTIPROC_DIR'):
        from prometheus_client import multiprocess
        multiprocess.mark_process_dead(worker.pid)
