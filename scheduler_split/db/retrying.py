"""RPC methods that wait out a database outage (:func:`outage.run`)
and answer ``DatabaseUnavailable`` past it."""

import functools
import inspect

import oslo_messaging as messaging

from scheduler_split.db import outage
from scheduler_split import exception


def retrying(func, what=None, again=True):
    """``func`` (an RPC method) as :func:`run` runs it (or, with
    ``again`` False, run once). What still fails on an outage reaches
    the caller as ``DatabaseUnavailable`` through oslo's
    ``ExpectedException``: the dispatcher logs it at DEBUG, not as a
    traceback."""
    what = what or func.__name__

    @functools.wraps(func)
    def _run(*args, **kwargs):
        try:
            return outage.run(func, *args, what=what, again=again, **kwargs)
        except exception.DatabaseUnavailable:
            raise messaging.ExpectedException()
    return _run


class RetryingEndpoint:
    """An RPC endpoint whose exposed methods are :func:`retrying`.
    ``again`` False: they are not run again, only answered with
    ``DatabaseUnavailable`` at once (the scheduler's, whose writes also
    change the hosts it holds in memory), but for the methods named in
    ``again_for``, which may be run again."""

    def __init__(self, endpoint, again=True, again_for=()):
        self._endpoint = endpoint
        self._again = again
        self._again_for = frozenset(again_for)
        self._methods = {}

    def __getattr__(self, name):
        value = getattr(self._endpoint, name)
        if name.startswith('_') or not inspect.ismethod(value):
            # A Target is callable too: only methods are RPC methods.
            return value
        method = self._methods.get(name)
        if method is None:
            method = self._methods[name] = retrying(
                value, '%s.%s' % (type(self._endpoint).__name__, name),
                again=self._again or name in self._again_for)
        return method
