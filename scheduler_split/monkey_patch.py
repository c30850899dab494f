"""The eventlet switch: SCHEDULER_SPLIT_EVENTLET=1, read before any import.

Native threads are the default: oslo.service gets its threading backend
and oslo.messaging servers the threading executor. A process started with
the variable set monkey patches the standard library first thing
(``import scheduler_split`` calls :func:`patch`), and oslo.messaging
servers then use the eventlet executor.
"""

import os
import warnings

_patched = False
_selected = False


def wanted():
    return os.environ.get('SCHEDULER_SPLIT_EVENTLET', '').lower() in (
        '1', 'true', 'yes')


def patch():
    global _patched, _selected
    if _selected:
        return
    _selected = True
    if wanted():
        try:
            import eventlet
        except ImportError as exc:
            # Not a base dependency: say which extra brings it.
            raise ImportError(
                "SCHEDULER_SPLIT_EVENTLET=1 needs eventlet (pip install "
                "'scheduler-split[eventlet]'): %s" % exc, name=exc.name
            ) from exc
        eventlet.monkey_patch()
        _patched = True
        return
    # oslo.utils imports eventlet whenever it is installed, which warns
    # even though nothing here runs on it.
    warnings.filterwarnings('ignore', message=r'\s*Eventlet is deprecated')
    from oslo_service import backend
    if backend.get_backend_type() is None:
        backend.init_backend(backend.BackendType.THREADING)


def is_patched():
    return _patched
