"""A Tempest plugin that runs the compute classes which ask for a network.

Thirty-odd server classes of ``tempest.api.compute`` set
``create_default_network = True`` so that, on a cloud with Neutron, their
servers get a network of their own. Without Neutron Tempest skips those
classes whole ("Neutron is not available"), although nothing they test
needs a network: the all-in-one boots servers with no network at all.

Tempest loads this plugin in every process (runner and workers) when it
reads its configuration. Loading it makes every class of
``tempest.api.compute`` run as if it had not asked for a network: the
class's flag is cleared before its skip checks and its credentials are
set up. It adds no tests and no options.
"""

import functools
import os

from tempest.test_discover import plugins


def _without_default_network(method):
    original = method.__func__

    @functools.wraps(original)
    def wrapper(cls):
        if cls.create_default_network:
            cls.create_default_network = False
        return original(cls)
    return classmethod(wrapper)


def _patch():
    from tempest.api.compute import base
    klass = base.BaseV2ComputeTest
    if getattr(klass, '_scheduler_split_patched', False):
        return
    for name in ('skip_checks', 'setup_credentials'):
        setattr(klass, name, _without_default_network(getattr(klass, name)))
    klass._scheduler_split_patched = True


class Plugin(plugins.TempestPlugin):

    def load_tests(self):
        tests = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                             'tests')
        return tests, os.path.dirname(os.path.dirname(tests))

    def register_opts(self, conf):
        _patch()

    def get_opt_lists(self):
        return []
