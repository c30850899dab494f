"""The eventlet switch: SCHEDULER_SPLIT_EVENTLET=1, read before any import.

Native threads are the default. A process started with the variable set
monkey patches the standard library first thing (every console script
imports ``scheduler_split.cmd``, which calls :func:`patch`), and
oslo.messaging servers then use the eventlet executor.
"""

import os

_patched = False


def wanted():
    return os.environ.get('SCHEDULER_SPLIT_EVENTLET', '').lower() in (
        '1', 'true', 'yes')


def patch():
    global _patched
    if wanted() and not _patched:
        import eventlet
        eventlet.monkey_patch()
        _patched = True


def is_patched():
    return _patched
