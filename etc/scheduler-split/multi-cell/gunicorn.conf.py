# gunicorn settings of scheduler-split-api.service.
bind = '127.0.0.1:8774'
worker_class = 'gthread'
workers = 2
threads = 8
# Let requests in flight finish on SIGTERM.
graceful_timeout = 30
timeout = 60
accesslog = '-'
