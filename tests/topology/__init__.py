"""A cloud of hosts apart on one machine: controllers and computes in
network namespaces, a RabbitMQ cluster with quorum queues and MariaDB
Galera (``python -m tests.topology up``, as root)."""
